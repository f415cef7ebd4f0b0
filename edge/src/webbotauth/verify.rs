//! Verifying a signed agent request (RFC 9421, Ed25519, Web Bot Auth's parameters and coverage):
//! [`start`] checks everything the request itself holds and says which key directory to fetch;
//! [`finish`] verifies against it.

use super::directory::{
    AgentLink, MAX_DIRECTORY_BYTES, agent_link, directory_url, is_public_host, origin,
};
use super::fields::{int_param, params_line, string_param};
use super::sign::thumbprint;
use crate::request::Request;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use sfv::{InnerList, ListEntry, Parameters, Parser, SerializeValue};

/// Longest signature validity we accept (`expires - created`).
const MAX_VALIDITY_S: i64 = 24 * 3600;
/// Allowed clock skew for `created` in the future.
const SKEW_S: i64 = 60;
const TAG: &str = "web-bot-auth";

/// The result of checking one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No `Signature-Input`: an ordinary anonymous request.
    Unsigned,
    /// Signed, but the signature did not verify; served as anonymous.
    Invalid(String),
    /// Signed and verified with key `keyid` (the key's RFC 7638 thumbprint) from `directory`.
    Verified {
        keyid: String,
        directory: KeyDirectory,
    },
}

/// Where a verified key came from: what the signature proves about who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyDirectory {
    /// A `data:` directory in the request itself: the signer vouches for its own key, which
    /// anyone can mint per request, so it proves nothing about who the client is.
    Inline,
    /// Fetched over HTTPS from `origin`, the agent's own origin (`Signature-Agent`). `cached`:
    /// the directory was already in the cache before this request.
    Fetched { origin: String, cached: bool },
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

    /// The rate-limit identity of the client, when the signature earns one: the origin of an
    /// HTTPS key directory that was already cached. Everything else (unsigned, invalid,
    /// self-asserted `data:` directories, a directory fetched for this very request) is limited
    /// by address. Requiring the cache means an agent that rotates directory URLs to mint
    /// identities always pays with its address; the origin (not the key) is the identity, so a
    /// directory listing many keys is still one client.
    pub fn agent_key(&self) -> Option<&str> {
        match self {
            Outcome::Verified {
                directory:
                    KeyDirectory::Fetched {
                        origin,
                        cached: true,
                    },
                ..
            } => Some(origin),
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
    /// The agent's origin, where the directory is fetched from.
    origin: String,
}

/// One signature picked from a request: its parameters, the RFC 9421 §2.5 signature base and
/// the signature bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Signed {
    keyid: String,
    created: Option<i64>,
    expires: Option<i64>,
    covers: Vec<String>,
    /// The `key` parameter of the covered `signature-agent` component, if any.
    agent_member: Option<Option<String>>,
    pub(super) base: String,
    pub(super) signature: Vec<u8>,
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
pub(super) fn select(req: &Request, pick: impl Fn(&InnerList) -> bool) -> Result<Signed, String> {
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
pub(super) fn verify_ed25519(public: &[u8], base: &str, signature: &[u8]) -> bool {
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

/// The raw Ed25519 public key in a JWKS whose RFC 7638 thumbprint is `keyid` (Web Bot Auth's
/// `keyid`). A directory's own `kid` is not trusted: any directory can label its key with
/// another agent's thumbprint.
fn find_key(jwks: &Value, keyid: &str) -> Option<Vec<u8>> {
    jwks.get("keys")?.as_array()?.iter().find_map(|k| {
        if k.get("kty")?.as_str()? != "OKP" || k.get("crv")?.as_str()? != "Ed25519" {
            return None;
        }
        let x = k.get("x")?.as_str()?;
        (thumbprint(x) == keyid)
            .then(|| URL_SAFE_NO_PAD.decode(x.trim_end_matches('=')).ok())
            .flatten()
    })
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
        Ok(AgentLink::Inline(jwks)) => {
            Check::Done(verify_with(&signed, &jwks, KeyDirectory::Inline))
        }
        Ok(AgentLink::External(url)) => {
            if !url.starts_with("https://") {
                return invalid("the key directory must be served over HTTPS");
            }
            if !is_public_host(&url) {
                return invalid("the key directory must be on a public host");
            }
            let origin = origin(&url);
            Check::NeedsDirectory {
                url: directory_url(&url),
                pending: Box::new(Pending { signed, origin }),
            }
        }
    }
}

/// Second step: verify against the fetched directory body (`None` when the fetch failed);
/// `cached` when the body came from the cache rather than a fetch for this request.
pub fn finish(pending: &Pending, directory: Option<&[u8]>, cached: bool) -> Outcome {
    let Some(body) = directory else {
        return Outcome::Invalid("key directory unavailable".into());
    };
    if body.len() > MAX_DIRECTORY_BYTES {
        return Outcome::Invalid("key directory too large".into());
    }
    let directory = KeyDirectory::Fetched {
        origin: pending.origin.clone(),
        cached,
    };
    verify_with(&pending.signed, body, directory)
}

fn verify_with(signed: &Signed, jwks: &[u8], directory: KeyDirectory) -> Outcome {
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
            directory,
        }
    } else {
        Outcome::Invalid("signature did not verify".into())
    }
}
