//! Connections (an account's credentials for one app), connect links and the OAuth state of a
//! connect attempt: their types, rules, typed errors and the [`ConnectionStore`] port.
//!
//! A connection's secrets exist only sealed (a `SecretBox` envelope bound to `conn#<id>`); its
//! token expiry, refresh lease and a version bumped per token update sit beside them, so a token
//! refresh is single-flight (see `platform-exec`'s connections service). Links and OAuth states
//! are stored under the SHA-256 of their secret id and used up exactly once.

mod config;

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::apps::Catalog;
use crate::clock::rfc3339;
use crate::error::StoreError;
use crate::oauth::{OAuthApps, ParamRule, Provider};
use crate::secrets::SealError;
use catalog_core::AuthKind;

pub use config::{ConfigError, IntegrationConfig};

/// A connect link works once, for this long.
pub const LINK_TTL_MS: i64 = 30 * 60 * 1000;
/// The user has this long on the provider's consent screen.
pub const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// Tokens this close to expiry are refreshed before use.
pub const REFRESH_AHEAD_MS: i64 = 60 * 1000;
/// A refresh lease outlives a stuck holder by at most this much.
pub const LEASE_MS: i64 = 30 * 1000;
/// Revoked connections stay listed this long.
pub const REVOKED_RETENTION_S: i64 = 30 * 24 * 3600;
const MAX_LABEL: usize = 100;
const LINK_PREFIX: &str = "cl_";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    #[serde(rename = "oauth2")]
    OAuth2,
    ApiKey,
    Basic,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OAuth2 => "oauth2",
            Self::ApiKey => "api_key",
            Self::Basic => "basic",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "oauth2" => Self::OAuth2,
            "api_key" => Self::ApiKey,
            "basic" => Self::Basic,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnStatus {
    Active,
    NeedsReauth,
    Revoked,
}

impl ConnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::NeedsReauth => "needs_reauth",
            Self::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => Self::Active,
            "needs_reauth" => Self::NeedsReauth,
            "revoked" => Self::Revoked,
            _ => return None,
        })
    }
}

/// A connection's secrets, stored only sealed.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Secret {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A stored connection (without its secrets in the clear).
#[derive(Debug, Clone)]
pub struct Connection {
    pub id: String,
    pub account_id: String,
    pub app: String,
    pub label: Option<String>,
    pub identity: Option<String>,
    pub status: ConnStatus,
    pub auth: AuthMethod,
    pub created_at_ms: i64,
    pub token_expires_ms: Option<i64>,
    pub version: i64,
    pub sealed: Option<String>,
    /// Template values (e.g. `subdomain`) given with the connect link.
    pub params: BTreeMap<String, String>,
}

impl Connection {
    pub fn to_json(&self, is_default: bool) -> Value {
        json!({
            "id": self.id,
            "app": self.app,
            "label": self.label,
            "identity": self.identity.as_ref().or(self.label.as_ref()),
            "status": self.status.as_str(),
            "auth": self.auth.as_str(),
            "is_default": is_default,
            "created_at": rfc3339(self.created_at_ms),
            "expires_at": self.token_expires_ms.map(rfc3339),
        })
    }

    /// The context its secrets are sealed under.
    pub fn context(&self) -> String {
        format!("conn#{}", self.id)
    }
}

/// A connect link as stored.
#[derive(Debug, Clone)]
pub struct Link {
    pub account_id: String,
    pub app: String,
    pub auth: AuthMethod,
    pub label: Option<String>,
    pub redirect_url: Option<String>,
    pub params: BTreeMap<String, String>,
    pub expires_at_ms: i64,
}

/// A link just created; `id` is the secret in its URL and exists only here.
#[derive(Debug, Clone)]
pub struct NewLink {
    pub id: String,
    pub app: String,
    pub auth: AuthMethod,
    pub url: String,
    pub expires_at_ms: i64,
}

impl NewLink {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "app": self.app,
            "auth": self.auth.as_str(),
            "url": self.url,
            "expires_at": rfc3339(self.expires_at_ms),
        })
    }
}

/// An OAuth attempt in flight, as stored under its `state`.
#[derive(Debug, Clone)]
pub struct OAuthState {
    pub account_id: String,
    pub app: String,
    pub label: Option<String>,
    pub redirect_url: Option<String>,
    pub params: BTreeMap<String, String>,
    pub verifier_sealed: String,
    pub expires_at_ms: i64,
}

/// Where connections, connect links and OAuth states are kept. Links and states are used up by
/// a conditional delete, so exactly one request gets each.
#[async_trait]
pub trait ConnectionStore: Send + Sync {
    /// The origins the account's links may redirect to (empty when none is registered yet).
    async fn redirect_origins(&self, account_id: &str) -> Result<Vec<String>, StoreError>;
    /// Adds `origin` to the account's allow list; with `only_first`, only while the list is
    /// empty (`Conflict` otherwise), so concurrent first links cannot register two origins.
    async fn add_redirect_origin(
        &self,
        account_id: &str,
        origin: &str,
        only_first: bool,
    ) -> Result<(), StoreError>;
    async fn put_link(&self, id: &str, link: &Link) -> Result<(), StoreError>;
    async fn get_link(&self, id: &str) -> Result<Option<Link>, StoreError>;
    /// Deletes the link if it is still there and unexpired; `Conflict` otherwise.
    async fn consume_link(&self, id: &str, now_ms: i64) -> Result<Link, StoreError>;
    async fn put_state(&self, state: &str, st: &OAuthState) -> Result<(), StoreError>;
    async fn consume_state(&self, state: &str, now_ms: i64) -> Result<OAuthState, StoreError>;
    async fn put_connection(&self, c: &Connection) -> Result<(), StoreError>;
    async fn get_connection(
        &self,
        account_id: &str,
        id: &str,
    ) -> Result<Option<Connection>, StoreError>;
    async fn connections(&self, account_id: &str) -> Result<Vec<Connection>, StoreError>;
    /// Stores refreshed tokens and releases the lease, if the version is still `version`.
    async fn update_tokens(
        &self,
        c: &Connection,
        sealed: &str,
        token_expires_ms: Option<i64>,
    ) -> Result<(), StoreError>;
    /// Moves `active` to `status`; `Conflict` if it was not active.
    async fn set_status_from_active(
        &self,
        account_id: &str,
        id: &str,
        status: ConnStatus,
    ) -> Result<(), StoreError>;
    async fn revoke(&self, account_id: &str, id: &str, now_ms: i64) -> Result<(), StoreError>;
    async fn acquire_lease(
        &self,
        account_id: &str,
        id: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<(), StoreError>;
    /// Drops the lease if it is still `until_ms` (a lease already gone is fine).
    async fn release_lease(
        &self,
        account_id: &str,
        id: &str,
        until_ms: i64,
    ) -> Result<(), StoreError>;
    /// Ids of the apps the account has an active connection to.
    async fn connected_apps(&self, account_id: &str) -> Result<HashSet<String>, StoreError>;
}

/// Why a link could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("no app {0:?} in the catalog")]
    AppNotFound(String),
    #[error("{0} connects with OAuth, and no OAuth client is configured for it")]
    OAuthNotConfigured(String),
    #[error("{0} has no credential scheme the platform can connect")]
    NotConnectable(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ConnectError {
    /// What the caller is told (REST problem detail, MCP error); a store failure is logged.
    pub fn detail(&self) -> String {
        match self {
            ConnectError::AppNotFound(app) => {
                format!("No app {app:?} in the catalog; GET /apps?search= finds app ids.")
            }
            ConnectError::OAuthNotConfigured(_) => {
                format!("{self}; the operator adds it to the OAUTH_APPS file.")
            }
            ConnectError::NotConnectable(_) => self.to_string(),
            ConnectError::Invalid(why) => why.clone(),
            ConnectError::Store(s) => {
                tracing::error!(error = %s, "store failure creating a link");
                crate::error::UNAVAILABLE_DETAIL.to_owned()
            }
        }
    }
}

/// Why a hosted page could not go on.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("This connect link is unknown or was already used.")]
    LinkUnknown,
    #[error("This connect link has expired; links work for 30 minutes.")]
    LinkExpired,
    #[error("This sign-in attempt is unknown, was already completed, or took too long.")]
    StateUnknown,
    #[error("{0}")]
    Invalid(String),
    #[error("The app refused the connection: {0}")]
    Denied(String),
    #[error("The app's sign-in service failed: {0}")]
    Provider(String),
    #[error("The connection could not be set up; try again with a new link.")]
    Internal,
}

/// Why credentials for a run are not available.
#[derive(Debug, thiserror::Error)]
pub enum CredError {
    #[error("no connection to {app}")]
    ConnectionRequired { app: String },
    #[error("connection {connection_id} needs the user to reconnect")]
    NeedsReauth { app: String, connection_id: String },
    #[error("no connection {0}")]
    NotFound(String),
    #[error("connection {connection_id} is for {actual}, not {app}")]
    WrongApp {
        connection_id: String,
        app: String,
        actual: String,
    },
    #[error("another token refresh of connection {0} did not finish in time")]
    LockTimeout(String),
    #[error("the app's token endpoint failed: {0}")]
    Provider(String),
    #[error("stored credentials are unreadable")]
    Seal,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SealError> for CredError {
    fn from(e: SealError) -> Self {
        tracing::error!(error = %e, "sealed credentials unusable");
        CredError::Seal
    }
}

/// Credentials picked for one run.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub connection: Connection,
    pub secret: Secret,
}

/// A new connection id: `conn_` + 12 hex digits of the creation time + 16 random.
pub fn new_connection_id(now_ms: i64) -> String {
    crate::ids::timed_id("conn_", now_ms)
}

/// A new connect link id: the secret in its URL.
pub fn new_link_id() -> String {
    format!("{LINK_PREFIX}{}", crate::oauth::random_token())
}

/// Whether `id` has the shape of a link id (checked before any read).
pub fn link_id_ok(id: &str) -> bool {
    id.starts_with(LINK_PREFIX) && id.len() == LINK_PREFIX.len() + 43
}

fn valid_param(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 100
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
}

/// The OpenAPI schema's `maxLength`, checked here too for callers that skip the router.
const MAX_REDIRECT_URL: usize = 2000;

/// Whether `host` is this machine: `localhost` (and its subdomains, RFC 6761), `127.0.0.0/8`
/// or `::1`. Only these may take a plain-`http` redirect, for development.
fn is_loopback_host(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            name == "localhost" || name.ends_with(".localhost")
        }
        url::Host::Ipv4(v4) => v4.is_loopback(),
        url::Host::Ipv6(v6) => v6.is_loopback(),
    }
}

/// Checks where the hosted connect page may send the browser back to: an absolute `https` URL
/// (plain `http` only to a loopback host, for development), without user info, at most
/// 2000 bytes. The page re-checks the stored value before redirecting, so a link stored under
/// an older rule can never turn into an open redirect. The error names the rule broken.
pub fn check_redirect_url(raw: &str) -> Result<url::Url, String> {
    if raw.len() > MAX_REDIRECT_URL {
        return Err(format!(
            "redirect_url must be at most {MAX_REDIRECT_URL} bytes"
        ));
    }
    let url = url::Url::parse(raw)
        .map_err(|_| "redirect_url must be an absolute https URL".to_owned())?;
    let host = url
        .host()
        .ok_or_else(|| "redirect_url must be an absolute https URL with a host".to_owned())?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback_host(&host) => {}
        "http" => {
            return Err(
                "redirect_url must use https (plain http is allowed only for localhost, \
                 127.0.0.0/8 and [::1])"
                    .into(),
            );
        }
        other => return Err(format!("redirect_url must use https, not {other:?}")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("redirect_url must not carry user info (user:password@)".into());
    }
    Ok(url)
}

/// A connect parameter's value without a declared pattern: one DNS label (letters, digits and
/// inner hyphens, at most 63), because values are templated into URLs' hosts, where a dot, a
/// slash, an `@` or a percent sign would move the request to another host.
fn is_host_label(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Whether `value` is acceptable for param `name`: the characters every param is limited to,
/// never `..`, and then the app's declared pattern, or else a single host label.
fn param_ok(name: &str, value: &str, rules: Option<&BTreeMap<String, ParamRule>>) -> bool {
    if !valid_param(value) || value.contains("..") {
        return false;
    }
    match rules.and_then(|r| r.get(name)) {
        Some(rule) => rule.regex().is_ok_and(|re| re.is_match(value)),
        None => is_host_label(value),
    }
}

/// The origin a redirect URL is held to by the account's allow list; `None` for loopback
/// development URLs, which need no listing (they cannot send a user to another site).
pub fn redirect_origin(url: &url::Url) -> Option<String> {
    match url.host() {
        Some(h) if is_loopback_host(&h) => None,
        _ => Some(url.origin().ascii_serialization()),
    }
}

/// The label, redirect URL and template parameters of a new link, checked. `rules` are the
/// patterns the app's OAuth client declares for its params, if any.
pub fn check_link_request(
    label: Option<&str>,
    redirect_url: Option<&str>,
    params: &BTreeMap<String, String>,
    rules: Option<&BTreeMap<String, ParamRule>>,
) -> Result<(), ConnectError> {
    if let Some(l) = label
        && (l.trim().is_empty() || l.chars().count() > MAX_LABEL)
    {
        return Err(ConnectError::Invalid(format!(
            "label must have 1 to {MAX_LABEL} characters"
        )));
    }
    if let Some(r) = redirect_url {
        check_redirect_url(r).map_err(ConnectError::Invalid)?;
    }
    if let Some((k, _)) = params.iter().find(|(k, _)| !valid_param(k)) {
        return Err(ConnectError::Invalid(format!(
            "params.{k}: names are 1 to 100 letters, digits, '-', '.' or '_'"
        )));
    }
    if let Some((k, _)) = params.iter().find(|(k, v)| !param_ok(k, v, rules)) {
        let rule = match rules.and_then(|r| r.get(k.as_str())) {
            Some(r) => format!("must match the app's pattern {:?}", r.pattern),
            None => {
                "must be one host name label (letters, digits and inner '-', at most 63)".to_owned()
            }
        };
        return Err(ConnectError::Invalid(format!("params.{k} {rule}")));
    }
    Ok(())
}

/// How an app is connected: OAuth when a client is configured, else a pasted key, else
/// username and password.
pub fn connect_method(
    catalog: &dyn Catalog,
    oauth: &OAuthApps,
    app: &str,
) -> Result<AuthMethod, ConnectError> {
    if catalog.app(app).is_none() {
        return Err(ConnectError::AppNotFound(app.to_owned()));
    }
    if oauth.get(app).is_some() {
        return Ok(AuthMethod::OAuth2);
    }
    let schemes = catalog.app_auth(app).map(|a| a.schemes).unwrap_or_default();
    let has = |f: &dyn Fn(&AuthKind) -> bool| schemes.iter().any(|s| f(&s.kind));
    if has(&|k| {
        matches!(k, AuthKind::ApiKey { .. })
            || matches!(k, AuthKind::Http { scheme } if scheme != "basic")
    }) {
        return Ok(AuthMethod::ApiKey);
    }
    if has(&|k| matches!(k, AuthKind::Http { scheme } if scheme == "basic")) {
        return Ok(AuthMethod::Basic);
    }
    if has(&|k| matches!(k, AuthKind::OAuth2 { .. } | AuthKind::OpenIdConnect { .. })) {
        return Err(ConnectError::OAuthNotConfigured(app.to_owned()));
    }
    Err(ConnectError::NotConnectable(app.to_owned()))
}

/// The provider of an OAuth app: the configured client, endpoints and scopes from the config or
/// else the app's `authorizationCode` flow in the catalog, templates filled from `params`.
pub fn provider(
    catalog: &dyn Catalog,
    oauth: &OAuthApps,
    app: &str,
    params: &BTreeMap<String, String>,
) -> Result<Provider, ConnectError> {
    let config = oauth
        .get(app)
        .ok_or_else(|| ConnectError::OAuthNotConfigured(app.to_owned()))?;
    let flow = catalog.app_auth(app).and_then(|a| {
        a.schemes.into_iter().find_map(|s| match s.kind {
            AuthKind::OAuth2 { flows } => flows.into_iter().find(|f| f.flow == "authorizationCode"),
            _ => None,
        })
    });
    let authorize = config
        .authorize_url
        .clone()
        .or_else(|| flow.as_ref().and_then(|f| f.authorization_url.clone()));
    let token = config
        .token_url
        .clone()
        .or_else(|| flow.as_ref().and_then(|f| f.token_url.clone()));
    let (Some(authorize), Some(token)) = (authorize, token) else {
        return Err(ConnectError::OAuthNotConfigured(app.to_owned()));
    };
    let fill = |u: &str| {
        crate::oauth::fill_template(u, params).map_err(|missing| {
            ConnectError::Invalid(format!(
                "{app} needs the connect parameter {missing:?} (give it in params)"
            ))
        })
    };
    Ok(Provider {
        authorize_url: fill(&authorize)?,
        token_url: fill(&token)?,
        scopes: config
            .scopes
            .clone()
            .or_else(|| flow.map(|f| f.scopes))
            .unwrap_or_default(),
        config: config.clone(),
    })
}

/// The account's connections, oldest first, each with whether it is its app's default (the
/// oldest one not revoked).
pub fn with_defaults(mut all: Vec<Connection>) -> Vec<(Connection, bool)> {
    all.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
    let mut seen = HashSet::new();
    all.into_iter()
        .map(|c| {
            let default = c.status != ConnStatus::Revoked && seen.insert(c.app.clone());
            (c, default)
        })
        .collect()
}

impl Connection {
    /// Usable as it is: active, and its token (if it expires) not about to.
    pub fn is_fresh(&self, now_ms: i64) -> bool {
        self.status == ConnStatus::Active
            && self
                .token_expires_ms
                .is_none_or(|e| e - now_ms > REFRESH_AHEAD_MS)
    }
}

#[cfg(test)]
mod redirect_tests {
    use super::check_redirect_url;

    #[test]
    fn redirect_urls_are_https_or_loopback_http() {
        for ok in [
            "https://app.example.com/cb?x=1",
            "http://localhost:3000/cb",
            "http://dev.localhost/cb",
            "http://127.0.0.1/cb",
            "http://127.9.9.9:8080/cb",
            "http://[::1]:3000/cb",
        ] {
            assert!(check_redirect_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/cb",
            "http://10.0.0.1/cb",
            "http://localhost.evil.example/",
            "http://[::2]/",
            "javascript:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "//evil.example/",
            "https://user@app.example.com/",
            "https://:pw@app.example.com/",
            "",
        ] {
            assert!(check_redirect_url(bad).is_err(), "{bad}");
        }
        let long = format!("https://a.example/{}", "x".repeat(2000));
        assert!(check_redirect_url(&long).is_err());
    }
}
