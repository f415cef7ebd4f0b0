//! OAuth 2.0 authorization code grant with PKCE (S256), per-provider quirks from the
//! `OAUTH_APPS` file, and the token endpoint calls (code exchange, refresh).
//!
//! File format (`OAUTH_APPS` names it):
//! `{"<app id>": {"client_id", "client_secret"?, "authorize_url"?, "token_url"?, "scopes"?: [..],
//! "pkce"?: true, "scope_separator"?: " ", "token_auth"?: "client_secret_basic|client_secret_post",
//! "authorize_params"?: {..}, "identity"?: "/json/pointer", "userinfo_url"?, "base_url"?}}`.
//! URLs may hold `{name}` templates filled from the connect link's `params` (e.g. a subdomain).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand::RngCore;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::outbound::{Outbound, OutboundError};

/// Names the JSON file of OAuth client configurations.
pub const OAUTH_APPS_VAR: &str = "OAUTH_APPS";

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

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {OAUTH_APPS_VAR} file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{OAUTH_APPS_VAR} file is not valid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{OAUTH_APPS_VAR}: app {app}: {why}")]
    Invalid { app: String, why: String },
}

/// Every configured OAuth client, by app id.
#[derive(Debug, Clone, Default)]
pub struct OAuthApps(BTreeMap<String, OAuthAppConfig>);

impl OAuthApps {
    /// Reads the file named by [`OAUTH_APPS_VAR`]; none configured when it is unset.
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var_os(OAUTH_APPS_VAR) {
            Some(p) => Self::from_path(Path::new(&p)),
            None => Ok(Self::default()),
        }
    }

    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let raw = std::fs::read(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&raw)
    }

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
}

/// 32 random bytes, base64url: a PKCE verifier (43 characters), state or link secret.
pub fn random_token() -> String {
    let mut r = [0u8; 32];
    rand::rng().fill_bytes(&mut r);
    URL_SAFE_NO_PAD.encode(r)
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

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
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

fn parse_tokens(config: &OAuthAppConfig, body: &Value) -> Result<TokenSet, TokenError> {
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

/// One call to the token endpoint with the client's authentication.
async fn token_call(
    outbound: &Outbound,
    provider: &Provider,
    mut form: Vec<(&str, String)>,
) -> Result<TokenSet, TokenError> {
    let config = &provider.config;
    let mut req = outbound
        .client()
        .post(&provider.token_url)
        .header(http::header::ACCEPT, "application/json");
    match (config.token_auth, &config.client_secret) {
        (TokenAuth::ClientSecretBasic, Some(secret)) => {
            let pair = format!("{}:{}", form_encode(&config.client_id), form_encode(secret));
            req = req.header(
                http::header::AUTHORIZATION,
                format!("Basic {}", STANDARD.encode(pair)),
            );
        }
        (TokenAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", config.client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        // A public client identifies itself in the body.
        (_, None) => form.push(("client_id", config.client_id.clone())),
    }
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let req = req
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body);
    let resp = outbound.send(req).await.map_err(|e| match e {
        OutboundError::Refused { reason, .. } => TokenError::Refused(reason),
        OutboundError::InvalidUrl(u) => TokenError::Refused(u),
        OutboundError::Timeout => TokenError::Transient("timeout".into()),
        OutboundError::TooLarge { limit } => {
            TokenError::Malformed(format!("response larger than {limit} bytes"))
        }
        OutboundError::Network(e) => TokenError::Transient(e),
    })?;
    let parsed: Option<Value> = serde_json::from_slice(&resp.body).ok().or_else(|| {
        // A few providers answer form-encoded whatever the Accept header says.
        let pairs: serde_json::Map<String, Value> = form_urlencoded::parse(&resp.body)
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        (!pairs.is_empty()).then_some(Value::Object(pairs))
    });
    if resp.status >= 500 || resp.status == 429 {
        return Err(TokenError::Transient(format!("HTTP {}", resp.status)));
    }
    let body = parsed.unwrap_or(Value::Null);
    // Errors come as 400/401 with `error`; some providers (Slack) answer 200 with `error`.
    if let Some(err) = body.get("error").and_then(Value::as_str) {
        if err == "invalid_grant" {
            let why = body
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            return Err(TokenError::InvalidGrant(why));
        }
        return Err(TokenError::Rejected {
            status: resp.status,
            error: err.chars().take(100).collect(),
        });
    }
    if !(200..300).contains(&resp.status) {
        return Err(TokenError::Rejected {
            status: resp.status,
            error: "no error code".into(),
        });
    }
    parse_tokens(config, &body)
}

/// Exchanges an authorization code (with the PKCE verifier when PKCE is on).
pub async fn exchange_code(
    outbound: &Outbound,
    provider: &Provider,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<TokenSet, TokenError> {
    let mut form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.to_owned()),
        ("redirect_uri", redirect_uri.to_owned()),
    ];
    if provider.config.pkce {
        form.push(("code_verifier", verifier.to_owned()));
    }
    let mut tokens = token_call(outbound, provider, form).await?;
    if tokens.identity.is_none()
        && let Some(url) = &provider.config.userinfo_url
    {
        tokens.identity = userinfo(outbound, url, &tokens.access_token).await;
    }
    Ok(tokens)
}

/// Uses a refresh token. A provider that rotates refresh tokens returns a new one.
pub async fn refresh(
    outbound: &Outbound,
    provider: &Provider,
    refresh_token: &str,
) -> Result<TokenSet, TokenError> {
    token_call(
        outbound,
        provider,
        vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
        ],
    )
    .await
}

/// The account's display name from an OIDC userinfo endpoint; `None` on any failure (the label
/// stands in then).
async fn userinfo(outbound: &Outbound, url: &str, access_token: &str) -> Option<String> {
    let req = outbound
        .client()
        .get(url)
        .bearer_auth(access_token)
        .header(http::header::ACCEPT, "application/json");
    match outbound.send(req).await {
        Ok(r) if (200..300).contains(&r.status) => serde_json::from_slice::<Value>(&r.body)
            .ok()
            .and_then(|v| identity_from_claims(&v)),
        Ok(r) => {
            tracing::warn!(status = r.status, "userinfo endpoint refused");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "userinfo endpoint unreachable");
            None
        }
    }
}

#[cfg(test)]
mod tests {
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
