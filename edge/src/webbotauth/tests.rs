//! Besides the RFC vectors, requests are signed with the `web-bot-auth` crate and verified
//! with this module, and this module's directory signature is verified with the crate.

use super::verify::{select, verify_ed25519};
use super::*;
use crate::config::decode_signing_key;
use crate::request::Request;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
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
    let with_agent = draft_example().with_header("signature-agent", "\"https://agent.example\"");
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
    // Fetched for this very request: verified, but limited by address until it is cached.
    let fresh = finish(&pending, Some(&rfc_jwks()), false);
    assert_eq!(fresh.label(), "verified");
    assert_eq!(fresh.agent_key(), None);
    // From the cache: the agent's origin is its identity.
    let cached = finish(&pending, Some(&rfc_jwks()), true);
    assert_eq!(cached.agent_key(), Some("https://agent.example"));
    assert!(
        matches!(&cached, Outcome::Verified { keyid, .. } if keyid == RFC_THUMBPRINT),
        "{cached:?}"
    );
}

#[test]
fn the_identity_is_the_agents_origin_in_lower_case() {
    let req = signed("site.example", "https://Bots.Agent.Example:8443/keys");
    let Check::NeedsDirectory { url, pending } = start(&req, now()) else {
        panic!("expected a directory fetch");
    };
    assert_eq!(url, "https://Bots.Agent.Example:8443/keys");
    let out = finish(&pending, Some(&rfc_jwks()), true);
    assert_eq!(out.agent_key(), Some("https://bots.agent.example:8443"));
}

/// A directory that labels its own key with another agent's thumbprint (`kid`) must not verify
/// as that agent.
#[test]
fn a_kid_naming_another_agents_thumbprint_does_not_verify() {
    let req = signed("site.example", "https://agent.example");
    let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
        panic!()
    };
    // The attacker's key, labelled with the victim's (the signer's) thumbprint.
    let attacker_x = public_x(&[9u8; 32]);
    let forged = format!(
        r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{attacker_x}","kid":"{RFC_THUMBPRINT}"}}]}}"#
    );
    let out = finish(&pending, Some(forged.as_bytes()), true);
    assert!(matches!(out, Outcome::Invalid(_)), "{out:?}");
}

#[test]
fn wrong_key_missing_directory_and_tampering_are_invalid() {
    let req = signed("site.example", "https://agent.example");
    let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
        panic!()
    };
    let other = directory_body(&[7u8; 32]);
    assert!(matches!(
        finish(&pending, Some(other.as_bytes()), true),
        Outcome::Invalid(_)
    ));
    let Check::NeedsDirectory { pending, .. } = start(&req, now()) else {
        panic!()
    };
    assert!(matches!(finish(&pending, None, true), Outcome::Invalid(_)));
    let mut moved = req.clone();
    moved.authority = "other.example".into();
    let Check::NeedsDirectory { pending, .. } = start(&moved, now()) else {
        panic!()
    };
    assert!(matches!(
        finish(&pending, Some(&rfc_jwks()), true),
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
        Check::Done(out @ Outcome::Verified { .. }) => {
            assert!(
                matches!(&out, Outcome::Verified { keyid, directory: KeyDirectory::Inline } if keyid == RFC_THUMBPRINT)
            );
            // Anyone can mint a key per request: a self-asserted key earns no bucket.
            assert_eq!(out.agent_key(), None);
            assert_eq!(out.label(), "verified");
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
    let sig = sign_directory(&key, "Site.Example", body.as_bytes(), "req-1", now()).expect("sign");
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
        "https://127.1/",
        "https://0177.0.0.1/",
        "https://0x7f.0.0.1:8443/",
        "https://2130706433/",
        "https://127.0.1/",
        "https://[64:ff9b::7f00:1]/",
        "https://[2002:7f00:1::]/",
        "https://192.88.99.1/",
    ] {
        assert!(!is_public_host(url), "{url}");
    }
    let req = signed("site.example", "https://127.0.0.1");
    assert!(matches!(start(&req, now()), Check::Done(Outcome::Invalid(m)) if m.contains("public")));
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
