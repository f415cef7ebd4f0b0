//! OAuth 2.0 authorization code grant with PKCE (S256) and per-provider quirks from the
//! `OAUTH_APPS` file: the configuration, the authorization URL and reading token responses. The
//! token endpoint calls themselves (code exchange, refresh) are outbound HTTP: `platform-exec`.
//!
//! File format (`OAUTH_APPS` names it):
//! `{"<app id>": {"client_id", "client_secret"?, "authorize_url"?, "token_url"?, "scopes"?: [..],
//! "pkce"?: true, "scope_separator"?: " ", "token_auth"?: "client_secret_basic|client_secret_post",
//! "authorize_params"?: {..}, "identity"?: "/json/pointer", "userinfo_url"?, "base_url"?}}`.
//! URLs may hold `{name}` templates filled from the connect link's `params` (e.g. a subdomain).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuth {
    /// HTTP Basic with the url-encoded client id and secret (RFC 6749 §2.3.1).
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
}

fn default_true() -> bool {
    true
}

fn default_separator() -> String {
    " ".to_owned()
}

/// One provider's client and quirks.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthAppConfig {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub authorize_url: Option<String>,
    #[serde(default)]
    pub token_url: Option<String>,
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// PKCE S256 (on unless a provider rejects it).
    #[serde(default = "default_true")]
    pub pkce: bool,
    #[serde(default = "default_separator")]
    pub scope_separator: String,
    #[serde(default)]
    pub token_auth: TokenAuth,
    /// Extra query parameters for the authorization request (`access_type=offline`, …).
    #[serde(default)]
    pub authorize_params: BTreeMap<String, String>,
    /// JSON pointer into the token response naming the account (Slack: `/authed_user/id`).
    #[serde(default)]
    pub identity: Option<String>,
    /// An OpenID Connect userinfo endpoint asked for the account's e-mail or name.
    #[serde(default)]
    pub userinfo_url: Option<String>,
    /// Overrides the app's server URL from the catalog (tests, regional hosts).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Connect `params` this app takes, with the pattern each value must match in full (e.g.
    /// `{"domain": {"pattern": "[a-z0-9-]+\\.example\\.(com|eu)"}}`). A param without a
    /// declared pattern must be a single DNS label (see
    /// [`crate::connections::check_link_request`]).
    #[serde(default)]
    pub params: BTreeMap<String, ParamRule>,
}

/// How a connect parameter is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamRule {
    /// A regular expression the whole value must match (anchored for you).
    pub pattern: String,
}

impl ParamRule {
    /// The pattern, anchored at both ends.
    pub fn regex(&self) -> Result<regex::Regex, regex::Error> {
        regex::Regex::new(&format!("^(?:{})$", self.pattern))
    }
}

impl std::fmt::Debug for OAuthAppConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthAppConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("authorize_url", &self.authorize_url)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

/// Why an OAuth clients document is refused (the bootstrap, which reads the file, names it).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("not valid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("app {app}: {why}")]
    Invalid { app: String, why: String },
}

/// Every configured OAuth client, by app id.
#[derive(Debug, Clone, Default)]
pub struct OAuthApps(BTreeMap<String, OAuthAppConfig>);

impl OAuthApps {
    pub fn from_json(raw: &[u8]) -> Result<Self, ConfigError> {
        let map: BTreeMap<String, OAuthAppConfig> = serde_json::from_slice(raw)?;
        for (app, c) in &map {
            let bad = |why: &str| ConfigError::Invalid {
                app: app.clone(),
                why: why.to_owned(),
            };
            if c.client_id.trim().is_empty() {
                return Err(bad("client_id is empty"));
            }
            if c.scope_separator.is_empty() {
                return Err(bad("scope_separator is empty"));
            }
            if let Some((name, _)) = c.params.iter().find(|(_, r)| r.regex().is_err()) {
                return Err(bad(&format!(
                    "params.{name}.pattern is not a regular expression"
                )));
            }
            if let Some(p) = &c.identity
                && !p.is_empty()
                && !p.starts_with('/')
            {
                return Err(bad(
                    "identity must be a JSON pointer such as /authed_user/id",
                ));
            }
        }
        Ok(Self(map))
    }

    pub fn get(&self, app: &str) -> Option<&OAuthAppConfig> {
        self.0.get(app)
    }

    /// Keys the clients by the apps' canonical ids, so a client an operator configured under a
    /// former per-document id (`hubapi_crm`) serves its product app (`hubspot`). An entry under
    /// the canonical id wins over one under a former id.
    pub fn canonicalise(&mut self, canonical: impl Fn(&str) -> String) {
        self.0 = canonical_keys(std::mem::take(&mut self.0), canonical);
    }
}

/// `map` re-keyed by `canonical`; where several keys meet, the one already canonical wins, else
/// the first in key order.
pub(crate) fn canonical_keys<V>(
    map: BTreeMap<String, V>,
    canonical: impl Fn(&str) -> String,
) -> BTreeMap<String, V> {
    let mut out: BTreeMap<String, V> = BTreeMap::new();
    let (exact, former): (Vec<_>, Vec<_>) = map
        .into_iter()
        .partition(|(k, _)| canonical(k).as_str() == k.as_str());
    for (k, v) in exact.into_iter().chain(former) {
        match out.entry(canonical(&k)) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(v);
            }
            std::collections::btree_map::Entry::Occupied(e) => {
                tracing::warn!(app = %k, canonical = %e.key(), "setting for an app given twice; ignored");
            }
        }
    }
    out
}

/// 32 random bytes, base64url: a PKCE verifier (43 characters), state or link secret.
pub fn random_token() -> String {
    crate::ids::random_token(32)
}

/// The S256 challenge of a verifier (RFC 7636 §4.2).
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Fills `{name}` templates from `params`; a template left unfilled is an error naming it.
pub fn fill_template(url: &str, params: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed template in {url}"));
        };
        let name = &after[..end];
        match params.get(name) {
            Some(v) => out.push_str(v),
            None => return Err(name.to_owned()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Endpoints and client of one provider, resolved from the config and the catalog.
#[derive(Debug, Clone)]
pub struct Provider {
    pub config: OAuthAppConfig,
    pub authorize_url: String,
    pub token_url: String,
    pub scopes: Vec<String>,
}

impl Provider {
    /// The provider's authorization URL for one attempt.
    pub fn authorize(
        &self,
        redirect_uri: &str,
        state: &str,
        verifier: &str,
    ) -> Result<String, String> {
        let mut url = url::Url::parse(&self.authorize_url)
            .map_err(|e| format!("authorize_url {}: {e}", self.authorize_url))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code");
            q.append_pair("client_id", &self.config.client_id);
            q.append_pair("redirect_uri", redirect_uri);
            q.append_pair("state", state);
            if !self.scopes.is_empty() {
                q.append_pair("scope", &self.scopes.join(&self.config.scope_separator));
            }
            if self.config.pkce {
                q.append_pair("code_challenge", &s256_challenge(verifier));
                q.append_pair("code_challenge_method", "S256");
            }
            for (k, v) in &self.config.authorize_params {
                q.append_pair(k, v);
            }
        }
        Ok(url.into())
    }
}

/// Tokens as a token endpoint returns them.
#[derive(Clone, Default)]
pub struct TokenSet {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in_s: Option<i64>,
    pub scope: Option<String>,
    /// Who the tokens belong to, when the response says so.
    pub identity: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("expires_in_s", &self.expires_in_s)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The grant is dead (revoked, expired, rotated away): only a new consent helps.
    #[error("the provider refused the grant (invalid_grant): {0}")]
    InvalidGrant(String),
    /// Any other refusal by the provider (bad client, bad request): not retried.
    #[error("the token endpoint answered {status}: {error}")]
    Rejected { status: u16, error: String },
    /// 5xx, timeouts, network errors: worth another try.
    #[error("the token endpoint is unavailable: {0}")]
    Transient(String),
    #[error("the token endpoint's answer is unusable: {0}")]
    Malformed(String),
    #[error("the token endpoint is not an allowed destination: {0}")]
    Refused(String),
}

impl TokenError {
    pub fn transient(&self) -> bool {
        matches!(self, TokenError::Transient(_))
    }
}

/// Reads a string or number member (some providers send `expires_in` as a string).
fn int_member(v: &Value, name: &str) -> Option<i64> {
    match v.get(name)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The payload of a JWT, unverified. Only used for display (the account's name) on an ID token
/// received directly from the token endpoint over TLS (OIDC Core §3.1.3.7 allows this).
fn jwt_claims(jwt: &str) -> Option<Value> {
    let payload = jwt.split('.').nth(1)?;
    let raw = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&raw).ok()
}

/// A display name for the account from claims or a userinfo document.
pub fn identity_from_claims(claims: &Value) -> Option<String> {
    ["email", "preferred_username", "login", "name", "sub"]
        .iter()
        .find_map(|k| claims.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(200).collect())
}

/// The tokens in a token endpoint's (successful) answer, with the account's identity when the
/// answer names it.
pub fn parse_tokens(config: &OAuthAppConfig, body: &Value) -> Result<TokenSet, TokenError> {
    let access_token = body
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| TokenError::Malformed("no access_token in the response".into()))?
        .to_owned();
    let identity = config
        .identity
        .as_deref()
        .and_then(|p| body.pointer(p))
        .and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .or_else(|| {
            body.get("id_token")
                .and_then(Value::as_str)
                .and_then(jwt_claims)
                .and_then(|c| identity_from_claims(&c))
        });
    Ok(TokenSet {
        access_token,
        refresh_token: body
            .get("refresh_token")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        expires_in_s: int_member(body, "expires_in").filter(|n| *n > 0),
        scope: body.get("scope").and_then(Value::as_str).map(str::to_owned),
        identity,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn settings_under_former_ids_move_to_the_product_and_the_canonical_one_wins() {
        let canonical = |a: &str| match a {
            "hubapi_crm" | "hubapi_cms" => "hubspot".to_owned(),
            other => other.to_owned(),
        };
        let map: BTreeMap<String, u8> = [("hubapi_cms", 1), ("hubapi_crm", 2), ("slack", 3)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let got = super::canonical_keys(map.clone(), canonical);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [("hubspot".to_owned(), 1), ("slack".to_owned(), 3)]
        );
        let mut with_product = map;
        with_product.insert("hubspot".into(), 9);
        let got = super::canonical_keys(with_product, canonical);
        assert_eq!(got.get("hubspot"), Some(&9));
    }

    use super::*;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let v = random_token();
        assert_eq!(v.len(), 43);
        assert_ne!(v, random_token());
    }

    #[test]
    fn templates_fill_or_name_the_missing_parameter() {
        let p = BTreeMap::from([("subdomain".to_owned(), "acme".to_owned())]);
        assert_eq!(
            fill_template("https://{subdomain}.zendesk.com/oauth", &p).unwrap(),
            "https://acme.zendesk.com/oauth"
        );
        assert_eq!(
            fill_template("https://{tenant}.example.com", &p).unwrap_err(),
            "tenant"
        );
    }

    #[test]
    fn config_quirks_parse_and_secrets_stay_out_of_debug() {
        let apps = OAuthApps::from_json(
            br#"{"slack": {"client_id": "1.2", "client_secret": "s3cr3t", "pkce": false,
                 "scope_separator": ",", "token_auth": "client_secret_post",
                 "identity": "/authed_user/id"}}"#,
        )
        .unwrap();
        let c = apps.get("slack").unwrap();
        assert!(!c.pkce);
        assert_eq!(c.token_auth, TokenAuth::ClientSecretPost);
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert!(OAuthApps::from_json(br#"{"x": {"client_id": ""}}"#).is_err());
        assert!(OAuthApps::from_json(br#"{"x": {"client_id": "a", "colour": 1}}"#).is_err());
    }

    #[test]
    fn the_authorize_url_carries_state_scopes_and_challenge() {
        let provider = Provider {
            config: OAuthApps::from_json(br#"{"a": {"client_id": "cid", "scope_separator": ","}}"#)
                .unwrap()
                .get("a")
                .unwrap()
                .clone(),
            authorize_url: "https://auth.example.com/authorize?x=1".into(),
            token_url: "https://auth.example.com/token".into(),
            scopes: vec!["read".into(), "write".into()],
        };
        let url = provider
            .authorize("https://p.example.com/oauth/callback", "st", "ver")
            .unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        let q: BTreeMap<String, String> = parsed.query_pairs().into_owned().collect();
        assert_eq!(q["x"], "1");
        assert_eq!(q["scope"], "read,write");
        assert_eq!(q["state"], "st");
        assert_eq!(q["code_challenge"], s256_challenge("ver"));
        assert_eq!(q["code_challenge_method"], "S256");
    }

    #[test]
    fn token_responses_give_identity_from_a_pointer_or_the_id_token() {
        let c: OAuthAppConfig = serde_json::from_value(
            serde_json::json!({"client_id": "x", "identity": "/authed_user/id"}),
        )
        .unwrap();
        let t = parse_tokens(
            &c,
            &serde_json::json!({"access_token": "a", "expires_in": "3600", "authed_user": {"id": "U1"}}),
        )
        .unwrap();
        assert_eq!(t.identity.as_deref(), Some("U1"));
        assert_eq!(t.expires_in_s, Some(3600));
        let claims = URL_SAFE_NO_PAD.encode(br#"{"sub":"u-1","email":"a@b.example"}"#);
        let c: OAuthAppConfig =
            serde_json::from_value(serde_json::json!({"client_id": "x"})).unwrap();
        let t = parse_tokens(
            &c,
            &serde_json::json!({"access_token": "a", "id_token": format!("h.{claims}.s")}),
        )
        .unwrap();
        assert_eq!(t.identity.as_deref(), Some("a@b.example"));
        assert!(parse_tokens(&c, &serde_json::json!({"token": "a"})).is_err());
    }
}
