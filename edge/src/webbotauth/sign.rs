//! The site's own key: its public directory (`kid` = the RFC 7638 thumbprint) and the signature
//! over a directory response (`tag="http-message-signatures-directory"`, `Content-Digest`).

use super::fields::{params_line, sf_key, sf_string};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey};
use sfv::{BareItem, InnerList, Item, Parameters, SerializeValue};
use sha2::{Digest, Sha256};

const DIRECTORY_TAG: &str = "http-message-signatures-directory";

/// The RFC 7638 thumbprint of an Ed25519 public key given as base64url `x`.
pub fn thumbprint(x: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!(
        "{{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"{x}\"}}"
    )))
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
