//! Web Bot Auth (`draft-ietf-webbotauth-httpsig-protocol`): verifying signed agent requests
//! (RFC 9421, Ed25519) and signing the site's own key directory.
//!
//! Verification never fails a request: a bad signature only means the client is treated as
//! anonymous. The work is split so that this module does no I/O: [`start`] checks everything it
//! can from the request and, when the key directory lives at an HTTPS URL, says which URL the
//! glue must fetch; [`finish`] verifies against the fetched directory. The crate `web-bot-auth`
//! does the signature base and Ed25519; this module supplies the request's components.

use crate::request::Request;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use indexmap::IndexMap;
use sha2::{Digest, Sha256};
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters, HTTPFieldParametersSet,
};
use web_bot_auth::keyring::{Algorithm, JSONWebKeySet, KeyRing, Thumbprintable};
use web_bot_auth::message_signatures::{MessageSigner, SignedMessage, UnsignedMessage};
use web_bot_auth::{SignatureAgentLink, WebBotAuthVerifier};

/// Largest key directory we read; a real one holds a few keys (~1 KB).
pub const MAX_DIRECTORY_BYTES: usize = 64 * 1024;
/// How long a fetched directory (or a failure to fetch it) is reused.
pub const DIRECTORY_TTL_S: i64 = 300;
/// Longest signature validity we accept (`expires - created`).
const MAX_VALIDITY_S: i64 = 24 * 3600;
/// Allowed clock skew for `created` in the future.
const SKEW_S: i64 = 60;
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
pub const DIRECTORY_CONTENT_TYPE: &str = "application/http-message-signatures-directory+json";

/// The result of checking one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No `Signature-Input`: an ordinary anonymous request.
    Unsigned,
    /// Signed, but the signature did not verify; served as anonymous.
    Invalid(String),
    /// Signed and verified with key `keyid` from the agent's directory.
    Verified { keyid: String, agent: String },
}

impl Outcome {
    /// The value of the `Web-Bot-Auth` response header, so an agent can see how it was treated.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Unsigned => "unsigned",
            Outcome::Invalid(_) => "invalid",
            Outcome::Verified { .. } => "verified",
        }
    }

    /// The rate-limit identity of a verified agent.
    pub fn agent_key(&self) -> Option<&str> {
        match self {
            Outcome::Verified { keyid, .. } => Some(keyid),
            _ => None,
        }
    }
}

/// What [`start`] needs next.
#[derive(Debug)]
pub enum Check {
    Done(Outcome),
    /// Fetch this HTTPS directory URL, then call [`finish`].
    NeedsDirectory {
        url: String,
        pending: Box<Pending>,
    },
}

/// A parsed signature waiting for its key directory.
#[derive(Debug)]
pub struct Pending {
    verifier: WebBotAuthVerifier,
    agent: String,
}

/// Adapts [`Request`] to the crate's component lookup (RFC 9421 §2).
struct Components<'a>(&'a Request);

impl SignedMessage for Components<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        let req = self.0;
        match name {
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                let values = req.header_all(name);
                match parameters.0.as_slice() {
                    [] => values.into_iter().map(|v| v.trim().to_string()).collect(),
                    [HTTPFieldParameters::Key(key)] => dictionary_member(&values.join(", "), key)
                        .into_iter()
                        .collect(),
                    // sf, bs, tr and req are not used by Web Bot Auth; an empty answer makes
                    // the crate reject the signature instead of verifying something else.
                    _ => Vec::new(),
                }
            }
            CoveredComponent::Derived(d) => {
                let v = match d {
                    DerivedComponent::Authority { req: false } => {
                        req.authority.to_ascii_lowercase()
                    }
                    DerivedComponent::Method { req: false } => req.method.clone(),
                    DerivedComponent::Path { req: false } => req.path.clone(),
                    DerivedComponent::Query { req: false } => format!("?{}", req.query),
                    DerivedComponent::Scheme { req: false } => req
                        .origin
                        .split_once("://")
                        .map(|(s, _)| s.to_ascii_lowercase())
                        .unwrap_or_default(),
                    DerivedComponent::TargetUri { req: false } => target_uri(req),
                    DerivedComponent::RequestTarget { req: false } => {
                        if req.query.is_empty() {
                            req.path.clone()
                        } else {
                            format!("{}?{}", req.path, req.query)
                        }
                    }
                    _ => return Vec::new(),
                };
                vec![v]
            }
        }
    }
}

fn target_uri(req: &Request) -> String {
    if req.query.is_empty() {
        format!("{}{}", req.origin, req.path)
    } else {
        format!("{}{}?{}", req.origin, req.path, req.query)
    }
}

/// The serialized value of one dictionary member (`;key="sig1"`).
fn dictionary_member(header: &str, key: &str) -> Option<String> {
    let dict = sfv::Parser::new(header).parse_dictionary().ok()?;
    dict.into_iter().find_map(|(k, entry)| match entry {
        sfv::ListEntry::Item(item) if k.as_str() == key => {
            use sfv::SerializeValue;
            Some(item.serialize_value())
        }
        _ => None,
    })
}

/// First step of verification, at time `now_s` (Unix seconds).
pub fn start(req: &Request, now_s: i64) -> Check {
    if req.header("signature-input").is_none() {
        return Check::Done(Outcome::Unsigned);
    }
    let invalid = |why: &str| Check::Done(Outcome::Invalid(why.to_string()));
    let verifier = match WebBotAuthVerifier::parse(&Components(req)) {
        Ok(v) => v,
        Err(e) => return invalid(&format!("no usable web-bot-auth signature: {e:?}")),
    };
    let details = &verifier.get_parsed_label().base.parameters.details;
    let (Some(created), Some(expires)) = (details.created, details.expires) else {
        return invalid("created and expires are required");
    };
    if created > now_s + SKEW_S {
        return invalid("created is in the future");
    }
    if expires <= now_s {
        return invalid("signature expired");
    }
    if expires - created > MAX_VALIDITY_S {
        return invalid("signature validity exceeds 24 h");
    }
    let covers_authority = verifier.get_parsed_label().base.components.keys().any(|c| {
        matches!(
            c,
            CoveredComponent::Derived(DerivedComponent::Authority { req: false })
        )
    });
    if !covers_authority {
        return invalid("@authority must be covered");
    }
    match verifier.get_signature_agents().first().cloned() {
        Some(SignatureAgentLink::Inline(jwks)) => {
            Check::Done(verify_with(verifier, jwks, "inline".to_string()))
        }
        Some(SignatureAgentLink::External(url)) => {
            if !url.starts_with("https://") {
                return invalid("the key directory must be served over HTTPS");
            }
            if !is_public_host(&url) {
                return invalid("the key directory must be on a public host");
            }
            let url = directory_url(&url);
            Check::NeedsDirectory {
                url: url.clone(),
                pending: Box::new(Pending {
                    verifier,
                    agent: url,
                }),
            }
        }
        None => invalid("Signature-Agent is required to find the key"),
    }
}

/// True when an `https://` URL names a public host: not a loopback, private, link-local or
/// otherwise special address, and not a local-only name. Guards the directory fetch against
/// being pointed at internal services (SSRF).
pub fn is_public_host(url: &str) -> bool {
    use std::net::IpAddr;
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let host = crate::config::host_name(authority);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return false;
    }
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            let [a, b, ..] = ip.octets();
            !(ip.is_private()
                || ip.is_loopback()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || a >= 224)
        }
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            let mapped = ip.to_ipv4_mapped().is_some();
            !(ip.is_loopback()
                || ip.is_unspecified()
                || mapped
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xff00) == 0xff00)
        }
        Err(_) => {
            let name = bare.trim_end_matches('.');
            name.contains('.')
                && ![
                    "localhost",
                    "local",
                    "internal",
                    "localdomain",
                    "home.arpa",
                    "lan",
                ]
                .iter()
                .any(|tld| name == *tld || name.ends_with(&format!(".{tld}")))
        }
    }
}

/// `https://agent.example` → its well-known directory URL; a URL that already names a path is
/// used as given.
pub fn directory_url(agent: &str) -> String {
    let rest = agent.trim_start_matches("https://");
    if rest.trim_end_matches('/').contains('/') {
        agent.to_string()
    } else {
        format!("https://{}{DIRECTORY_PATH}", rest.trim_end_matches('/'))
    }
}

/// Second step: verify against the fetched directory body (`None` when the fetch failed).
pub fn finish(pending: Box<Pending>, directory: Option<&[u8]>) -> Outcome {
    let Some(body) = directory else {
        return Outcome::Invalid("key directory unavailable".into());
    };
    if body.len() > MAX_DIRECTORY_BYTES {
        return Outcome::Invalid("key directory too large".into());
    }
    match serde_json::from_slice::<JSONWebKeySet>(body) {
        Ok(jwks) => verify_with(pending.verifier, jwks, pending.agent),
        Err(e) => Outcome::Invalid(format!("key directory is not a JWKS: {e}")),
    }
}

fn verify_with(verifier: WebBotAuthVerifier, jwks: JSONWebKeySet, agent: String) -> Outcome {
    let Some(keyid) = verifier
        .get_parsed_label()
        .base
        .parameters
        .details
        .keyid
        .clone()
    else {
        return Outcome::Invalid("keyid is required".into());
    };
    let mut ring = KeyRing::default();
    ring.import_jwks(jwks);
    match verifier.verify(&ring, None) {
        Ok(_) => Outcome::Verified { keyid, agent },
        Err(e) => Outcome::Invalid(format!("signature did not verify: {e:?}")),
    }
}

/// A time-limited cache of fetched directories (including failures, so a dead directory is not
/// fetched on every request). Kept per Worker isolate by the glue.
#[derive(Debug, Default)]
pub struct DirectoryCache {
    entries: std::collections::HashMap<String, (i64, Option<Vec<u8>>)>,
}

impl DirectoryCache {
    /// The cached body (or cached failure, `Some(None)`) for `url`, unless older than the TTL.
    pub fn get(&self, url: &str, now_s: i64) -> Option<Option<&[u8]>> {
        self.entries
            .get(url)
            .filter(|(at, _)| now_s - at < DIRECTORY_TTL_S)
            .map(|(_, body)| body.as_deref())
    }

    pub fn put(&mut self, url: &str, now_s: i64, body: Option<Vec<u8>>) {
        // Bound memory: drop expired entries, and everything if an attacker floods us with URLs.
        self.entries
            .retain(|_, (at, _)| now_s - *at < DIRECTORY_TTL_S);
        if self.entries.len() >= 256 {
            self.entries.clear();
        }
        self.entries.insert(url.to_string(), (now_s, body));
    }
}

/// Decodes the site's signing key secret: 32 raw bytes, base64 or base64url.
pub fn decode_signing_key(b64: &str) -> Option<[u8; 32]> {
    let t = b64.trim();
    let bytes = URL_SAFE_NO_PAD
        .decode(t.trim_end_matches('='))
        .or_else(|_| STANDARD.decode(t))
        .ok()?;
    bytes.try_into().ok()
}

/// The public JWK of our signing key.
pub fn public_jwk(key: &[u8; 32]) -> Thumbprintable {
    let public = ed25519_dalek::SigningKey::from_bytes(key).verifying_key();
    Thumbprintable::OKP {
        crv: "Ed25519".into(),
        x: URL_SAFE_NO_PAD.encode(public.as_bytes()),
    }
}

/// The body of our key directory: the public key only, `kid` = its RFC 7638 thumbprint.
pub fn directory_body(key: &[u8; 32]) -> String {
    let jwk = public_jwk(key);
    let kid = jwk.b64_thumbprint();
    let x = match &jwk {
        Thumbprintable::OKP { x, .. } => x.clone(),
        _ => String::new(),
    };
    serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"}]})
        .to_string()
}

/// `Content-Digest` (RFC 9530) of a body.
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(Sha256::digest(body)))
}

/// Signature headers for our directory response, covering `("@authority";req
/// "content-digest")` with `tag="http-message-signatures-directory"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseSignature {
    pub content_digest: String,
    pub signature_input: String,
    pub signature: String,
}

struct DirectoryResponse {
    authority: String,
    digest: String,
    input: String,
    signature: String,
}

impl UnsignedMessage for DirectoryResponse {
    fn fetch_components_to_cover(&self) -> IndexMap<CoveredComponent, String> {
        IndexMap::from_iter([
            (
                CoveredComponent::Derived(DerivedComponent::Authority { req: true }),
                self.authority.clone(),
            ),
            (
                CoveredComponent::HTTP(HTTPField {
                    name: "content-digest".into(),
                    parameters: HTTPFieldParametersSet(vec![]),
                }),
                self.digest.clone(),
            ),
        ])
    }

    fn register_header_contents(&mut self, signature_input: String, signature_header: String) {
        self.input = format!("sig1={signature_input}");
        self.signature = format!("sig1={signature_header}");
    }
}

/// Signs a directory response body for a request to `authority`; `nonce` should be unique per
/// response (the request id).
pub fn sign_directory(
    key: &[u8; 32],
    authority: &str,
    body: &[u8],
    nonce: &str,
) -> Option<ResponseSignature> {
    let mut msg = DirectoryResponse {
        authority: authority.to_ascii_lowercase(),
        digest: content_digest(body),
        input: String::new(),
        signature: String::new(),
    };
    let signer = MessageSigner {
        keyid: public_jwk(key).b64_thumbprint(),
        nonce: nonce.to_string(),
        tag: "http-message-signatures-directory".into(),
    };
    signer
        .generate_signature_headers_content(
            &mut msg,
            std::time::Duration::from_secs(3600),
            Algorithm::Ed25519,
            key,
        )
        .ok()?;
    Some(ResponseSignature {
        content_digest: msg.digest,
        signature_input: msg.input,
        signature: msg.signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use web_bot_auth::message_signatures::MessageVerifier;

    /// RFC 9421 B.1.4 `test-key-ed25519`.
    const RFC_PUBLIC_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
    const RFC_PRIVATE_D: &str = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU";
    const RFC_THUMBPRINT: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

    fn rfc_ring(id: &str) -> KeyRing {
        let mut ring = KeyRing::default();
        let public = URL_SAFE_NO_PAD.decode(RFC_PUBLIC_X).expect("x");
        ring.import_raw(id.to_string(), Algorithm::Ed25519, public);
        ring
    }

    /// RFC 9421 Appendix B.2.6: an Ed25519 signature over the test request.
    #[test]
    fn rfc9421_b26_ed25519_request_verifies() {
        let req = Request {
            method: "POST".into(),
            origin: "https://example.com".into(),
            authority: "example.com".into(),
            path: "/foo".into(),
            query: "param=Value&Pet=dog".into(),
            headers: vec![
                ("host".into(), "example.com".into()),
                ("date".into(), "Tue, 20 Apr 2021 02:07:55 GMT".into()),
                ("content-type".into(), "application/json".into()),
                ("content-length".into(), "18".into()),
                ("signature-input".into(), "sig-b26=(\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" \"content-length\");created=1618884473;keyid=\"test-key-ed25519\"".into()),
                ("signature".into(), "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:".into()),
            ],
            body: br#"{"hello": "world"}"#.to_vec(),
        };
        let v = MessageVerifier::parse(&Components(&req), |_| true).expect("parse");
        v.clone()
            .verify(&rfc_ring("test-key-ed25519"), None)
            .expect("RFC 9421 B.2.6 verifies");
        // Any change to a covered component breaks it.
        let mut tampered = req.clone();
        tampered.path = "/bar".into();
        let v = MessageVerifier::parse(&Components(&tampered), |_| true).expect("parse");
        assert!(v.verify(&rfc_ring("test-key-ed25519"), None).is_err());
    }

    /// The Web Bot Auth draft's example request (RFC 9421 key, `@authority` example.com).
    fn draft_example() -> Request {
        Request {
            method: "GET".into(),
            origin: "https://example.com".into(),
            authority: "example.com".into(),
            path: "/".into(),
            headers: vec![
                ("signature-input".into(), r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#.into()),
                ("signature".into(), "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:".into()),
            ],
            ..Request::default()
        }
    }

    fn rfc_jwks() -> Vec<u8> {
        format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC_PUBLIC_X}"}}]}}"#).into_bytes()
    }

    #[test]
    fn draft_example_verifies_inside_its_window_only() {
        let now = 1_735_689_700;
        let v = MessageVerifier::parse(&Components(&draft_example()), |_| true).expect("parse");
        v.verify(&rfc_ring(RFC_THUMBPRINT), None)
            .expect("the draft's example signature verifies");
        let with_agent =
            draft_example().with_header("signature-agent", "\"https://agent.example\"");
        // Signature-Agent present but not covered: the crate refuses to pick the label.
        assert!(matches!(
            start(&with_agent, now),
            Check::Done(Outcome::Invalid(_))
        ));
        // Without Signature-Agent there is no directory to find the key in.
        assert!(matches!(
            start(&draft_example(), now),
            Check::Done(Outcome::Invalid(_))
        ));
        assert!(
            matches!(start(&draft_example(), 1_735_693_200), Check::Done(Outcome::Invalid(m)) if m.contains("expired"))
        );
        assert_eq!(
            start(&Request::new("GET", "/"), now).outcome(),
            Some(Outcome::Unsigned)
        );
    }

    impl Check {
        fn outcome(self) -> Option<Outcome> {
            match self {
                Check::Done(o) => Some(o),
                Check::NeedsDirectory { .. } => None,
            }
        }
    }

    /// Signs a request like an agent would, with the RFC test key.
    fn signed(authority: &str, agent: &str) -> Request {
        struct Msg {
            authority: String,
            agent: String,
            input: String,
            sig: String,
        }
        impl UnsignedMessage for Msg {
            fn fetch_components_to_cover(&self) -> IndexMap<CoveredComponent, String> {
                IndexMap::from_iter([
                    (
                        CoveredComponent::Derived(DerivedComponent::Authority { req: false }),
                        self.authority.clone(),
                    ),
                    (
                        CoveredComponent::HTTP(HTTPField {
                            name: "signature-agent".into(),
                            parameters: HTTPFieldParametersSet(vec![HTTPFieldParameters::Key(
                                "sig1".into(),
                            )]),
                        }),
                        self.agent.clone(),
                    ),
                ])
            }
            fn register_header_contents(&mut self, i: String, s: String) {
                self.input = format!("sig1={i}");
                self.sig = format!("sig1={s}");
            }
        }
        let mut m = Msg {
            authority: authority.into(),
            agent: format!("\"{agent}\""),
            input: String::new(),
            sig: String::new(),
        };
        let key: [u8; 32] = URL_SAFE_NO_PAD
            .decode(RFC_PRIVATE_D)
            .expect("d")
            .try_into()
            .expect("32");
        MessageSigner {
            keyid: RFC_THUMBPRINT.into(),
            nonce: "n".into(),
            tag: "web-bot-auth".into(),
        }
        .generate_signature_headers_content(
            &mut m,
            std::time::Duration::from_secs(60),
            Algorithm::Ed25519,
            &key,
        )
        .expect("sign");
        Request {
            method: "GET".into(),
            origin: format!("https://{authority}"),
            authority: authority.into(),
            path: "/agent/search".into(),
            query: "q=pricing".into(),
            headers: vec![
                ("signature-agent".into(), format!("sig1=\"{agent}\"")),
                ("signature-input".into(), m.input),
                ("signature".into(), m.sig),
            ],
            body: Vec::new(),
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    #[test]
    fn external_directory_round_trip() {
        let req = signed("site.example", "https://agent.example");
        let Check::NeedsDirectory { url, pending } = start(&req, now()) else {
            panic!("expected a directory fetch");
        };
        assert_eq!(
            url,
            "https://agent.example/.well-known/http-message-signatures-directory"
        );
        let out = finish(pending, Some(&rfc_jwks()));
        assert_eq!(out.agent_key(), Some(RFC_THUMBPRINT));
        assert_eq!(out.label(), "verified");
    }

    #[test]
    fn wrong_key_missing_directory_and_tampering_are_invalid() {
        let req = signed("site.example", "https://agent.example");
        let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
            panic!()
        };
        let other = directory_body(&[7u8; 32]);
        assert!(matches!(
            finish(pending, Some(other.as_bytes())),
            Outcome::Invalid(_)
        ));
        let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
            panic!()
        };
        assert!(matches!(finish(pending, None), Outcome::Invalid(_)));
        let mut moved = req.clone();
        moved.authority = "other.example".into();
        let Check::NeedsDirectory { pending, .. } = start(&moved, now()) else {
            panic!()
        };
        assert!(matches!(
            finish(pending, Some(&rfc_jwks())),
            Outcome::Invalid(_)
        ));
        let http = signed("site.example", "http://agent.example");
        assert!(matches!(
            start(&http, now()),
            Check::Done(Outcome::Invalid(_))
        ));
    }

    #[test]
    fn inline_data_url_directory_verifies_without_io() {
        let data = format!(
            "data:application/http-message-signatures-directory;base64,{}",
            STANDARD.encode(rfc_jwks())
        );
        let req = signed("site.example", &data);
        match start(&req, now()) {
            Check::Done(Outcome::Verified { keyid, agent }) => {
                assert_eq!(keyid, RFC_THUMBPRINT);
                assert_eq!(agent, "inline");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn rfc_key_thumbprint_matches_the_draft() {
        let key: [u8; 32] = URL_SAFE_NO_PAD
            .decode(RFC_PRIVATE_D)
            .expect("d")
            .try_into()
            .expect("32");
        assert_eq!(public_jwk(&key).b64_thumbprint(), RFC_THUMBPRINT);
        assert_eq!(decode_signing_key(RFC_PRIVATE_D), Some(key));
        assert_eq!(decode_signing_key(&STANDARD.encode(key)), Some(key));
        assert_eq!(decode_signing_key("c2hvcnQ"), None);
    }

    #[test]
    fn our_directory_signature_verifies() {
        let key: [u8; 32] = URL_SAFE_NO_PAD
            .decode(RFC_PRIVATE_D)
            .expect("d")
            .try_into()
            .expect("32");
        let body = directory_body(&key);
        assert!(!body.contains("\"d\""));
        let sig = sign_directory(&key, "Site.Example", body.as_bytes(), "req-1").expect("sign");
        assert!(
            sig.signature_input
                .contains("tag=\"http-message-signatures-directory\"")
        );
        assert!(
            sig.signature_input
                .starts_with("sig1=(\"@authority\";req \"content-digest\")")
        );
        struct Resp<'a>(&'a ResponseSignature);
        impl SignedMessage for Resp<'_> {
            fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
                match name {
                    CoveredComponent::HTTP(HTTPField { name, .. }) => match name.as_str() {
                        "signature" => vec![self.0.signature.clone()],
                        "signature-input" => vec![self.0.signature_input.clone()],
                        "content-digest" => vec![self.0.content_digest.clone()],
                        _ => vec![],
                    },
                    CoveredComponent::Derived(DerivedComponent::Authority { req: true }) => {
                        vec!["site.example".into()]
                    }
                    _ => vec![],
                }
            }
        }
        let v = MessageVerifier::parse(&Resp(&sig), |_| true).expect("parse");
        let mut ring = KeyRing::default();
        ring.import_jwks(serde_json::from_str(&body).expect("jwks"));
        v.verify(&ring, None).expect("our own signature verifies");
    }

    #[test]
    fn only_public_hosts_are_fetched() {
        for url in [
            "https://agent.example",
            "https://bots.example.com/keys",
            "https://203.0.114.9/x",
            "https://[2606:4700::1111]/",
        ] {
            assert!(is_public_host(url), "{url}");
        }
        for url in [
            "http://agent.example",
            "https://localhost/",
            "https://api.localhost",
            "https://printer.local",
            "https://intranet",
            "https://127.0.0.1:8443/",
            "https://10.1.2.3/",
            "https://192.168.0.1",
            "https://169.254.169.254/latest",
            "https://100.64.0.1",
            "https://[::1]/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://user@agent.example/",
            "https:///x",
        ] {
            assert!(!is_public_host(url), "{url}");
        }
        let req = signed("site.example", "https://127.0.0.1");
        assert!(
            matches!(start(&req, now()), Check::Done(Outcome::Invalid(m)) if m.contains("public"))
        );
    }

    #[test]
    fn cache_expires_and_remembers_failures() {
        let mut c = DirectoryCache::default();
        c.put("u", 100, None);
        assert_eq!(c.get("u", 101), Some(None));
        c.put("v", 100, Some(b"x".to_vec()));
        assert_eq!(c.get("v", 100 + DIRECTORY_TTL_S - 1), Some(Some(&b"x"[..])));
        assert_eq!(c.get("v", 100 + DIRECTORY_TTL_S), None);
    }
}
