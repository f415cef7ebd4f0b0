//! Web Bot Auth (`draft-ietf-webbotauth-httpsig-protocol`): verifying signed agent requests
//! (RFC 9421, Ed25519) and signing the site's own key directory.
//!
//! Verification never fails a request: a bad signature only means the client is treated as
//! anonymous. The work is split so that this module does no I/O: [`start`] checks everything it
//! can from the request and, when the key directory lives at an HTTPS URL, says which URL the
//! glue must fetch; [`finish`] verifies against the fetched directory.
//!
//! Structured fields are parsed and serialised with `sfv` and signatures checked with
//! `ed25519-dalek`. The `web-bot-auth` crate is the reference these are tested against (a
//! dev-dependency: its signer and verifier cross-check ours in the unit tests) rather than a
//! runtime dependency, because it links the whole `regex` engine with its Unicode tables for one
//! header-unfolding pattern, which nearly doubled the gzipped Worker.

use crate::request::Request;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::Value;
use sfv::{BareItem, InnerList, Item, Key, ListEntry, Parameters, Parser, SerializeValue};
use sha2::{Digest, Sha256};

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
const TAG: &str = "web-bot-auth";
const DIRECTORY_TAG: &str = "http-message-signatures-directory";

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

/// A signature whose base is built, waiting for its key directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    signed: Signed,
    agent: String,
}

/// One signature picked from a request: its parameters, the RFC 9421 §2.5 signature base and
/// the signature bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signed {
    keyid: String,
    created: Option<i64>,
    expires: Option<i64>,
    covers: Vec<String>,
    /// The `key` parameter of the covered `signature-agent` component, if any.
    agent_member: Option<Option<String>>,
    base: String,
    signature: Vec<u8>,
}

fn string_param(params: &Parameters, name: &str) -> Option<String> {
    params
        .get(name)
        .and_then(BareItem::as_string)
        .map(|s| s.as_str().to_string())
}

fn int_param(params: &Parameters, name: &str) -> Option<i64> {
    params
        .get(name)
        .and_then(BareItem::as_integer)
        .map(i64::from)
}

fn sf_string(s: &str) -> Result<BareItem, String> {
    sfv::String::from_string(s.to_string())
        .map(BareItem::String)
        .map_err(|(e, _)| format!("not a structured-field string: {e}"))
}

fn sf_key(s: &str) -> Result<Key, String> {
    Key::from_string(s.to_string()).map_err(|(e, _)| format!("bad key {s}: {e}"))
}

/// The serialised `@signature-params` value of a label.
fn params_line(list: &InnerList) -> Result<String, String> {
    vec![ListEntry::InnerList(list.clone())]
        .serialize_value()
        .ok_or_else(|| "empty signature parameters".to_string())
}

/// The value of one covered component of a request (RFC 9421 §2.1, §2.2), or why it cannot be
/// covered. Only what Web Bot Auth uses is supported; anything else rejects the signature rather
/// than verifying something other than what the client meant.
fn component_value(req: &Request, name: &str, params: &Parameters) -> Result<String, String> {
    if let Some(derived) = name.strip_prefix('@') {
        if !params.is_empty() {
            return Err(format!("parameters on @{derived} are not supported"));
        }
        let target = if req.query.is_empty() {
            req.path.clone()
        } else {
            format!("{}?{}", req.path, req.query)
        };
        return Ok(match derived {
            "authority" => req.authority.to_ascii_lowercase(),
            "method" => req.method.clone(),
            "path" => req.path.clone(),
            "query" => format!("?{}", req.query),
            "scheme" => req
                .origin
                .split_once("://")
                .map(|(s, _)| s.to_ascii_lowercase())
                .unwrap_or_default(),
            "target-uri" => format!("{}{target}", req.origin),
            "request-target" => target,
            _ => return Err(format!("component @{derived} is not supported")),
        });
    }
    let values = req.header_all(name);
    if values.is_empty() {
        return Err(format!("covered header {name} is missing"));
    }
    let joined = values
        .iter()
        .map(|v| v.trim())
        .collect::<Vec<_>>()
        .join(", ");
    match params.iter().collect::<Vec<_>>().as_slice() {
        [] => Ok(joined),
        [(k, v)] if k.as_str() == "key" => {
            let member = v.as_string().ok_or("key must be a string")?.as_str();
            let dict = Parser::new(&joined)
                .parse_dictionary()
                .map_err(|e| format!("{name} is not a dictionary: {e}"))?;
            match dict.get(member) {
                Some(ListEntry::Item(item)) => Ok(item.serialize_value()),
                _ => Err(format!("{name} has no member {member}")),
            }
        }
        _ => Err(format!("parameters on {name} are not supported")),
    }
}

/// Picks the first label accepted by `pick` and builds its signature base.
fn select(req: &Request, pick: impl Fn(&InnerList) -> bool) -> Result<Signed, String> {
    let inputs = req.header_all("signature-input").join(", ");
    let inputs = Parser::new(&inputs)
        .parse_dictionary()
        .map_err(|e| format!("Signature-Input is not a dictionary: {e}"))?;
    let (label, list) = inputs
        .iter()
        .find_map(|(label, entry)| match entry {
            ListEntry::InnerList(list) if pick(list) => Some((label, list)),
            _ => None,
        })
        .ok_or("no acceptable signature label")?;
    let signatures = req.header_all("signature").join(", ");
    let signatures = Parser::new(&signatures)
        .parse_dictionary()
        .map_err(|e| format!("Signature is not a dictionary: {e}"))?;
    let signature = match signatures.get(label) {
        Some(ListEntry::Item(item)) => item
            .bare_item
            .as_byte_sequence()
            .ok_or("signature must be a byte sequence")?
            .to_vec(),
        _ => return Err(format!("no Signature for label {}", label.as_str())),
    };
    let mut base = String::new();
    let mut covers = Vec::new();
    let mut agent_member = None;
    for item in &list.items {
        let name = item
            .bare_item
            .as_string()
            .ok_or("covered components must be strings")?
            .as_str();
        if covers.iter().any(|c| c == name) {
            return Err(format!("{name} is covered twice"));
        }
        if name == "signature-agent" {
            agent_member = Some(string_param(&item.params, "key"));
        }
        let value = component_value(req, name, &item.params)?;
        base.push_str(&format!("{}: {value}\n", item.serialize_value()));
        covers.push(name.to_string());
    }
    base.push_str(&format!("\"@signature-params\": {}", params_line(list)?));
    if !base.is_ascii() {
        return Err("signature base is not ASCII".into());
    }
    Ok(Signed {
        keyid: string_param(&list.params, "keyid").unwrap_or_default(),
        created: int_param(&list.params, "created"),
        expires: int_param(&list.params, "expires"),
        covers,
        agent_member,
        base,
        signature,
    })
}

/// Checks an Ed25519 signature over `base` with a raw public key.
fn verify_ed25519(public: &[u8], base: &str, signature: &[u8]) -> bool {
    let Ok(public) = <[u8; 32]>::try_from(public) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&public) else {
        return false;
    };
    let Ok(sig) = ed25519_dalek::Signature::from_slice(signature) else {
        return false;
    };
    key.verify_strict(base.as_bytes(), &sig).is_ok()
}

/// The RFC 7638 thumbprint of an Ed25519 public key given as base64url `x`.
pub fn thumbprint(x: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!(
        "{{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"{x}\"}}"
    )))
}

/// The raw Ed25519 public key in a JWKS whose thumbprint (or `kid`) is `keyid`.
fn find_key(jwks: &Value, keyid: &str) -> Option<Vec<u8>> {
    jwks.get("keys")?.as_array()?.iter().find_map(|k| {
        if k.get("kty")?.as_str()? != "OKP" || k.get("crv")?.as_str()? != "Ed25519" {
            return None;
        }
        let x = k.get("x")?.as_str()?;
        let kid = k.get("kid").and_then(Value::as_str);
        (thumbprint(x) == keyid || kid == Some(keyid))
            .then(|| URL_SAFE_NO_PAD.decode(x.trim_end_matches('=')).ok())
            .flatten()
    })
}

/// Where the agent's keys are, from `Signature-Agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AgentLink {
    /// A `data:` URL: the directory itself.
    Inline(Vec<u8>),
    External(String),
}

/// Reads `Signature-Agent`: a dictionary member named by the covered component's `key`
/// parameter, or (the earlier draft) a bare string.
fn agent_link(req: &Request, member: Option<&str>) -> Result<AgentLink, String> {
    let header = req.header_all("signature-agent").join(", ");
    let item = match member {
        Some(m) => match Parser::new(&header).parse_dictionary() {
            Ok(dict) => match dict.get(m) {
                Some(ListEntry::Item(item)) => item.clone(),
                _ => return Err(format!("Signature-Agent has no member {m}")),
            },
            Err(e) => return Err(format!("Signature-Agent is not a dictionary: {e}")),
        },
        None => Parser::new(&header)
            .parse_item()
            .map_err(|e| format!("Signature-Agent is not a string: {e}"))?,
    };
    let link = item
        .bare_item
        .as_string()
        .ok_or("Signature-Agent must be a string")?
        .as_str()
        .to_string();
    if let Some(data) = link.strip_prefix("data:") {
        let (meta, payload) = data.split_once(',').ok_or("malformed data: URL")?;
        let meta = meta.to_ascii_lowercase();
        let ok_type = meta == "application/http-message-signatures-directory;base64"
            || meta == "application/http-message-signatures-directory+json;base64";
        if !ok_type {
            return Err("data: URL must be a base64 http-message-signatures-directory".into());
        }
        let bytes = STANDARD
            .decode(payload)
            .or_else(|_| URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')))
            .map_err(|_| "data: URL is not base64")?;
        if bytes.len() > MAX_DIRECTORY_BYTES {
            return Err("key directory too large".into());
        }
        return Ok(AgentLink::Inline(bytes));
    }
    Ok(AgentLink::External(link))
}

/// First step of verification, at time `now_s` (Unix seconds).
pub fn start(req: &Request, now_s: i64) -> Check {
    if req.header("signature-input").is_none() {
        return Check::Done(Outcome::Unsigned);
    }
    let invalid = |why: &str| Check::Done(Outcome::Invalid(why.to_string()));
    let has_agent = req.header("signature-agent").is_some();
    // A label qualifies only with the Web Bot Auth parameters and coverage (draft §4.2).
    let pick = |list: &InnerList| {
        let covers = |n: &str| {
            list.items
                .iter()
                .any(|i| i.bare_item.as_string().is_some_and(|s| s.as_str() == n))
        };
        string_param(&list.params, "tag").as_deref() == Some(TAG)
            && string_param(&list.params, "keyid").is_some()
            && int_param(&list.params, "created").is_some()
            && int_param(&list.params, "expires").is_some()
            && covers("@authority")
            && (!has_agent || covers("signature-agent"))
    };
    let signed = match select(req, pick) {
        Ok(s) => s,
        Err(e) => return invalid(&format!("no usable web-bot-auth signature: {e}")),
    };
    let (Some(created), Some(expires)) = (signed.created, signed.expires) else {
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
    if !has_agent {
        return invalid("Signature-Agent is required to find the key");
    }
    let member = signed.agent_member.clone().flatten();
    match agent_link(req, member.as_deref()) {
        Err(e) => invalid(&e),
        Ok(AgentLink::Inline(jwks)) => Check::Done(verify_with(&signed, &jwks, "inline".into())),
        Ok(AgentLink::External(url)) => {
            if !url.starts_with("https://") {
                return invalid("the key directory must be served over HTTPS");
            }
            if !is_public_host(&url) {
                return invalid("the key directory must be on a public host");
            }
            let url = directory_url(&url);
            Check::NeedsDirectory {
                url: url.clone(),
                pending: Box::new(Pending { signed, agent: url }),
            }
        }
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
pub fn finish(pending: &Pending, directory: Option<&[u8]>) -> Outcome {
    let Some(body) = directory else {
        return Outcome::Invalid("key directory unavailable".into());
    };
    if body.len() > MAX_DIRECTORY_BYTES {
        return Outcome::Invalid("key directory too large".into());
    }
    verify_with(&pending.signed, body, pending.agent.clone())
}

fn verify_with(signed: &Signed, jwks: &[u8], agent: String) -> Outcome {
    let jwks: Value = match serde_json::from_slice(jwks) {
        Ok(v) => v,
        Err(e) => return Outcome::Invalid(format!("key directory is not JSON: {e}")),
    };
    let Some(public) = find_key(&jwks, &signed.keyid) else {
        return Outcome::Invalid("keyid is not in the agent's key directory".into());
    };
    if verify_ed25519(&public, &signed.base, &signed.signature) {
        Outcome::Verified {
            keyid: signed.keyid.clone(),
            agent,
        }
    } else {
        Outcome::Invalid("signature did not verify".into())
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

/// The base64url `x` of our signing key's public half.
pub fn public_x(key: &[u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(SigningKey::from_bytes(key).verifying_key().as_bytes())
}

/// The body of our key directory: the public key only, `kid` = its RFC 7638 thumbprint.
pub fn directory_body(key: &[u8; 32]) -> String {
    let x = public_x(key);
    serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": thumbprint(&x), "use": "sig"}]})
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

/// Signs a directory response body for a request to `authority` at `now_s`; `nonce` should be
/// unique per response (the request id).
pub fn sign_directory(
    key: &[u8; 32],
    authority: &str,
    body: &[u8],
    nonce: &str,
    now_s: i64,
) -> Result<ResponseSignature, String> {
    let digest = content_digest(body);
    let mut req_param = Parameters::new();
    req_param.insert(sf_key("req")?, BareItem::Boolean(true));
    let authority_item = Item::with_params(sf_string("@authority")?, req_param);
    let digest_item = Item::new(sf_string("content-digest")?);
    let mut params = Parameters::new();
    let int = |v: i64| {
        sfv::Integer::try_from(v)
            .map(BareItem::Integer)
            .map_err(|e| format!("time out of range: {e}"))
    };
    params.insert(sf_key("created")?, int(now_s)?);
    params.insert(sf_key("expires")?, int(now_s + 3600)?);
    params.insert(sf_key("keyid")?, sf_string(&thumbprint(&public_x(key)))?);
    params.insert(sf_key("nonce")?, sf_string(nonce)?);
    params.insert(sf_key("tag")?, sf_string(DIRECTORY_TAG)?);
    let base = format!(
        "{}: {}\n{}: {digest}\n",
        authority_item.serialize_value(),
        authority.to_ascii_lowercase(),
        digest_item.serialize_value(),
    );
    let list = InnerList::with_params(vec![authority_item, digest_item], params);
    let line = params_line(&list)?;
    let base = format!("{base}\"@signature-params\": {line}");
    let signature = SigningKey::from_bytes(key).sign(base.as_bytes());
    Ok(ResponseSignature {
        content_digest: digest,
        signature_input: format!("sig1={line}"),
        signature: format!("sig1=:{}:", STANDARD.encode(signature.to_bytes())),
    })
}

#[cfg(test)]
mod tests {
    //! Besides the RFC vectors, requests are signed with the `web-bot-auth` crate and verified
    //! with this module, and this module's directory signature is verified with the crate.
    use super::*;
    use indexmap::IndexMap;
    use web_bot_auth::components::{
        CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters, HTTPFieldParametersSet,
    };
    use web_bot_auth::keyring::{Algorithm, KeyRing};
    use web_bot_auth::message_signatures::{
        MessageSigner, MessageVerifier, SignedMessage, UnsignedMessage,
    };

    /// RFC 9421 B.1.4 `test-key-ed25519`.
    const RFC_PUBLIC_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
    const RFC_PRIVATE_D: &str = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU";
    const RFC_THUMBPRINT: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

    fn rfc_public() -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(RFC_PUBLIC_X).expect("x")
    }

    /// RFC 9421 Appendix B.2.6: an Ed25519 signature over the test request; the signature base
    /// must match the RFC's byte for byte.
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
            received_at_s: 0,
        };
        let signed = select(&req, |_| true).expect("select");
        assert_eq!(
            signed.base,
            "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n\"@method\": POST\n\"@path\": /foo\n\
             \"@authority\": example.com\n\"content-type\": application/json\n\
             \"content-length\": 18\n\"@signature-params\": (\"date\" \"@method\" \"@path\" \
             \"@authority\" \"content-type\" \"content-length\");created=1618884473;\
             keyid=\"test-key-ed25519\""
        );
        assert!(verify_ed25519(
            &rfc_public(),
            &signed.base,
            &signed.signature
        ));
        // Any change to a covered component breaks it.
        let mut tampered = req.clone();
        tampered.path = "/bar".into();
        let t = select(&tampered, |_| true).expect("select");
        assert!(!verify_ed25519(&rfc_public(), &t.base, &t.signature));
    }

    #[test]
    fn unsupported_or_missing_components_reject_the_signature() {
        let base = Request::new("GET", "/")
            .with_header("signature", "sig1=:AAAA:")
            .with_header("x-one", "1");
        for input in [
            "sig1=(\"@authority\";req)",
            "sig1=(\"x-one\";sf)",
            "sig1=(\"x-missing\")",
            "sig1=(\"@status\")",
            "sig1=(\"x-one\" \"x-one\")",
            "sig1=(@authority)",
        ] {
            let req = base.clone().with_header("signature-input", input);
            assert!(select(&req, |_| true).is_err(), "{input}");
        }
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
        let signed = select(&draft_example(), |_| true).expect("select");
        assert!(
            verify_ed25519(&rfc_public(), &signed.base, &signed.signature),
            "the draft's example signature verifies"
        );
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
            received_at_s: 0,
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
        let out = finish(&pending, Some(&rfc_jwks()));
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
            finish(&pending, Some(other.as_bytes())),
            Outcome::Invalid(_)
        ));
        let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
            panic!()
        };
        assert!(matches!(finish(&pending, None), Outcome::Invalid(_)));
        let mut moved = req.clone();
        moved.authority = "other.example".into();
        let Check::NeedsDirectory { pending, .. } = start(&moved, now()) else {
            panic!()
        };
        assert!(matches!(
            finish(&pending, Some(&rfc_jwks())),
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
        assert_eq!(thumbprint(&public_x(&key)), RFC_THUMBPRINT);
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
        let sig =
            sign_directory(&key, "Site.Example", body.as_bytes(), "req-1", now()).expect("sign");
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
