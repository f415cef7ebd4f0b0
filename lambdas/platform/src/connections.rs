//! Connections (an account's credentials for one app), connect links, and the OAuth state of a
//! connect attempt, with their DynamoDB items and the token refresh.
//!
//! Items (all in the platform's one table):
//! - connection: pk `acct#<account>`, sk `conn#<conn id>`; secrets only in `sealed` (a
//!   [`Sealer`] envelope bound to `conn#<id>`), the token expiry in `token_expires_ms` (not the
//!   TTL attribute), the refresh lease in `lease_until_ms`, a `version` bumped per token update.
//! - connect link: pk `cl#<sha256 of the link id>`, sk `cl`, TTL. Keyed by the secret's hash
//!   rather than through gsi1: the link is read strongly consistently and consumed with a
//!   conditional delete, which only the base table offers, and a leaked table holds no usable
//!   link.
//! - OAuth state: pk `oauth#<sha256 of state>`, sk `state`, TTL, the PKCE verifier sealed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::ReturnValue;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::catalog::AuthKind;
use crate::catalog_api::{AppAuth, Catalog};
use crate::clock::{Clock, rfc3339};
use crate::oauth::{self, OAuthApps, Provider, TokenError, TokenSet};
use crate::outbound::Outbound;
use crate::sealed::{SealError, Sealer};
use crate::store::{
    CONNECTION_PREFIX, DynamoStore, Item, StoreError, account_pk, get_n, get_s, n, opt_s, s,
    unavailable, write_error,
};
use crate::table::{PK, SK, TTL_ATTRIBUTE};

/// Public origin of the platform (scheme + host), for connect links and the OAuth callback.
pub const PUBLIC_BASE_URL_VAR: &str = "PUBLIC_BASE_URL";
/// `app=url,app=url`: server URLs that replace the catalog's (local testing, regional hosts).
pub const BASE_URL_OVERRIDES_VAR: &str = "APP_BASE_URL_OVERRIDES";

/// A connect link works once, for this long.
pub const LINK_TTL_MS: i64 = 30 * 60 * 1000;
/// The user has this long on the provider's consent screen.
pub const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// Tokens this close to expiry are refreshed before use.
pub const REFRESH_AHEAD_MS: i64 = 60 * 1000;
/// A refresh lease outlives a stuck holder by at most this much.
pub const LEASE_MS: i64 = 30 * 1000;
/// Tries per refresh when the provider fails transiently.
const REFRESH_ATTEMPTS: u32 = 3;
/// Revoked connections stay listed this long.
const REVOKED_RETENTION_S: i64 = 30 * 24 * 3600;
const MAX_LABEL: usize = 100;
const LINK_PREFIX: &str = "cl_";
const STATE_SK: &str = "state";
const LINK_SK: &str = "cl";

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

    fn parse(s: &str) -> Option<Self> {
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

    fn parse(s: &str) -> Option<Self> {
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

    fn context(&self) -> String {
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

fn hash_hex(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn random_hex(bytes: usize) -> String {
    let mut r = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut r);
    r.iter().map(|b| format!("{b:02x}")).collect()
}

/// `conn_` + 12 hex digits of the creation time + 16 random: unique and sorted by creation.
fn new_connection_id(now_ms: i64) -> String {
    format!("conn_{:012x}{}", now_ms.max(0), random_hex(8))
}

fn params_json(params: &BTreeMap<String, String>) -> String {
    serde_json::to_string(params).unwrap_or_else(|_| "{}".into())
}

fn params_from(item: &Item) -> BTreeMap<String, String> {
    opt_s(item, "params")
        .and_then(|p| serde_json::from_str(&p).ok())
        .unwrap_or_default()
}

fn connection_from_item(item: &Item) -> Result<Connection, StoreError> {
    let status = get_s(item, "status")?;
    let auth = get_s(item, "auth")?;
    Ok(Connection {
        id: get_s(item, "conn_id")?,
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        label: opt_s(item, "label"),
        identity: opt_s(item, "identity"),
        status: ConnStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("connection status {status}")))?,
        auth: AuthMethod::parse(&auth)
            .ok_or_else(|| StoreError::Corrupt(format!("connection auth {auth}")))?,
        created_at_ms: get_n(item, "created_at_ms")?,
        token_expires_ms: get_n(item, "token_expires_ms").ok(),
        version: get_n(item, "version").unwrap_or(0),
        sealed: opt_s(item, "sealed"),
        params: params_from(item),
    })
}

fn link_from_item(item: &Item) -> Result<Link, StoreError> {
    let auth = get_s(item, "auth")?;
    Ok(Link {
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        auth: AuthMethod::parse(&auth)
            .ok_or_else(|| StoreError::Corrupt(format!("link auth {auth}")))?,
        label: opt_s(item, "label"),
        redirect_url: opt_s(item, "redirect_url"),
        params: params_from(item),
        expires_at_ms: get_n(item, "expires_at_ms")?,
    })
}

fn state_from_item(item: &Item) -> Result<OAuthState, StoreError> {
    Ok(OAuthState {
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        label: opt_s(item, "label"),
        redirect_url: opt_s(item, "redirect_url"),
        params: params_from(item),
        verifier_sealed: get_s(item, "verifier")?,
        expires_at_ms: get_n(item, "expires_at_ms")?,
    })
}

fn optional(item: &mut Item, name: &str, v: &Option<String>) {
    if let Some(v) = v {
        item.insert(name.to_owned(), s(v));
    }
}

/// The DynamoDB side of connections.
pub(crate) trait ConnStore {
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
    async fn release_lease(
        &self,
        account_id: &str,
        id: &str,
        until_ms: i64,
    ) -> Result<(), StoreError>;
}

impl ConnStore for DynamoStore {
    async fn put_link(&self, id: &str, link: &Link) -> Result<(), StoreError> {
        let mut item = HashMap::from([
            (PK.to_owned(), s(format!("cl#{}", hash_hex(id)))),
            (SK.to_owned(), s(LINK_SK)),
            ("account_id".to_owned(), s(&link.account_id)),
            ("app".to_owned(), s(&link.app)),
            ("auth".to_owned(), s(link.auth.as_str())),
            ("params".to_owned(), s(params_json(&link.params))),
            ("expires_at_ms".to_owned(), n(link.expires_at_ms)),
            (TTL_ATTRIBUTE.to_owned(), n(link.expires_at_ms / 1000 + 60)),
        ]);
        optional(&mut item, "label", &link.label);
        optional(&mut item, "redirect_url", &link.redirect_url);
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| write_error(e, "link id collision"))?;
        Ok(())
    }

    async fn get_link(&self, id: &str) -> Result<Option<Link>, StoreError> {
        let got = self
            .client()
            .get_item()
            .table_name(self.table())
            .key(PK, s(format!("cl#{}", hash_hex(id))))
            .key(SK, s(LINK_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        got.item().map(link_from_item).transpose()
    }

    async fn consume_link(&self, id: &str, now_ms: i64) -> Result<Link, StoreError> {
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .key(PK, s(format!("cl#{}", hash_hex(id))))
            .key(SK, s(LINK_SK))
            .condition_expression("attribute_exists(#pk) AND expires_at_ms > :now")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| write_error(e, "the link was used or has expired"))?;
        out.attributes()
            .map(link_from_item)
            .transpose()?
            .ok_or(StoreError::Conflict("the link was used or has expired"))
    }

    async fn put_state(&self, state: &str, st: &OAuthState) -> Result<(), StoreError> {
        let mut item = HashMap::from([
            (PK.to_owned(), s(format!("oauth#{}", hash_hex(state)))),
            (SK.to_owned(), s(STATE_SK)),
            ("account_id".to_owned(), s(&st.account_id)),
            ("app".to_owned(), s(&st.app)),
            ("params".to_owned(), s(params_json(&st.params))),
            ("verifier".to_owned(), s(&st.verifier_sealed)),
            ("expires_at_ms".to_owned(), n(st.expires_at_ms)),
            (TTL_ATTRIBUTE.to_owned(), n(st.expires_at_ms / 1000 + 60)),
        ]);
        optional(&mut item, "label", &st.label);
        optional(&mut item, "redirect_url", &st.redirect_url);
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| write_error(e, "state collision"))?;
        Ok(())
    }

    async fn consume_state(&self, state: &str, now_ms: i64) -> Result<OAuthState, StoreError> {
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .key(PK, s(format!("oauth#{}", hash_hex(state))))
            .key(SK, s(STATE_SK))
            .condition_expression("attribute_exists(#pk) AND expires_at_ms > :now")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| write_error(e, "unknown, used or expired state"))?;
        out.attributes()
            .map(state_from_item)
            .transpose()?
            .ok_or(StoreError::Conflict("unknown, used or expired state"))
    }

    async fn put_connection(&self, c: &Connection) -> Result<(), StoreError> {
        let mut item = HashMap::from([
            (PK.to_owned(), s(account_pk(&c.account_id))),
            (SK.to_owned(), s(format!("{CONNECTION_PREFIX}{}", c.id))),
            ("conn_id".to_owned(), s(&c.id)),
            ("account_id".to_owned(), s(&c.account_id)),
            ("app".to_owned(), s(&c.app)),
            ("status".to_owned(), s(c.status.as_str())),
            ("auth".to_owned(), s(c.auth.as_str())),
            ("created_at_ms".to_owned(), n(c.created_at_ms)),
            ("version".to_owned(), n(c.version)),
            ("params".to_owned(), s(params_json(&c.params))),
        ]);
        optional(&mut item, "label", &c.label);
        optional(&mut item, "identity", &c.identity);
        optional(&mut item, "sealed", &c.sealed);
        if let Some(e) = c.token_expires_ms {
            item.insert("token_expires_ms".to_owned(), n(e));
        }
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| write_error(e, "connection id collision"))?;
        Ok(())
    }

    async fn get_connection(
        &self,
        account_id: &str,
        id: &str,
    ) -> Result<Option<Connection>, StoreError> {
        let got = self
            .client()
            .get_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        got.item().map(connection_from_item).transpose()
    }

    async fn connections(&self, account_id: &str) -> Result<Vec<Connection>, StoreError> {
        let mut all = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client()
                .query()
                .table_name(self.table())
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :conn)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(account_pk(account_id)))
                .expression_attribute_values(":conn", s(CONNECTION_PREFIX))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                all.push(connection_from_item(item)?);
            }
            match out.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(all),
            }
        }
    }

    async fn update_tokens(
        &self,
        c: &Connection,
        sealed: &str,
        token_expires_ms: Option<i64>,
    ) -> Result<(), StoreError> {
        let mut update = self
            .client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(&c.account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{}", c.id)))
            .condition_expression("#v = :v AND #st <> :revoked")
            .expression_attribute_names("#v", "version")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":v", n(c.version))
            .expression_attribute_values(":next", n(c.version + 1))
            .expression_attribute_values(":sealed", s(sealed))
            .expression_attribute_values(":active", s(ConnStatus::Active.as_str()))
            .expression_attribute_values(":revoked", s(ConnStatus::Revoked.as_str()));
        update = match token_expires_ms {
            Some(e) => update
                .update_expression(
                    "SET sealed = :sealed, #v = :next, #st = :active, token_expires_ms = :exp \
                     REMOVE lease_until_ms",
                )
                .expression_attribute_values(":exp", n(e)),
            None => update.update_expression(
                "SET sealed = :sealed, #v = :next, #st = :active \
                 REMOVE lease_until_ms, token_expires_ms",
            ),
        };
        update
            .send()
            .await
            .map_err(|e| write_error(e, "the connection changed meanwhile"))?;
        Ok(())
    }

    async fn set_status_from_active(
        &self,
        account_id: &str,
        id: &str,
        status: ConnStatus,
    ) -> Result<(), StoreError> {
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .update_expression("SET #st = :new")
            .condition_expression("#st = :active")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":new", s(status.as_str()))
            .expression_attribute_values(":active", s(ConnStatus::Active.as_str()))
            .send()
            .await
            .map_err(|e| write_error(e, "the connection is not active"))?;
        Ok(())
    }

    async fn revoke(&self, account_id: &str, id: &str, now_ms: i64) -> Result<(), StoreError> {
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .update_expression(
                "SET #st = :revoked, revoked_at_ms = :now, #ttl = :exp, #v = #v + :one \
                 REMOVE sealed, token_expires_ms, lease_until_ms",
            )
            .condition_expression("attribute_exists(#pk) AND #st <> :revoked")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":revoked", s(ConnStatus::Revoked.as_str()))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":exp", n(now_ms / 1000 + REVOKED_RETENTION_S))
            .send()
            .await
            .map_err(|e| write_error(e, "no such active connection"))?;
        Ok(())
    }

    async fn acquire_lease(
        &self,
        account_id: &str,
        id: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<(), StoreError> {
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .update_expression("SET lease_until_ms = :until")
            .condition_expression(
                "attribute_exists(#pk) AND (attribute_not_exists(lease_until_ms) \
                 OR lease_until_ms < :now)",
            )
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":until", n(until_ms))
            .expression_attribute_values(":now", n(now_ms))
            .send()
            .await
            .map_err(|e| write_error(e, "another refresh holds the lease"))?;
        Ok(())
    }

    async fn release_lease(
        &self,
        account_id: &str,
        id: &str,
        until_ms: i64,
    ) -> Result<(), StoreError> {
        let res = self
            .client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .update_expression("REMOVE lease_until_ms")
            .condition_expression("lease_until_ms = :mine")
            .expression_attribute_values(":mine", n(until_ms))
            .send()
            .await;
        match res.map_err(|e| write_error(e, "lease already gone")) {
            Ok(_) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Settings of the connection features, read from the environment in production.
#[derive(Debug, Clone)]
pub struct IntegrationConfig {
    /// e.g. `https://platform.example.com`; links are `<this>/connect/cl_…`.
    pub public_base_url: String,
    pub oauth: OAuthApps,
    /// App id → server URL replacing the catalog's.
    pub base_url_overrides: BTreeMap<String, String>,
    /// How long a run waits for another holder's token refresh.
    pub lease_wait: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{PUBLIC_BASE_URL_VAR} must be an absolute http(s) URL, not {0:?}")]
    PublicBaseUrl(String),
    #[error("{BASE_URL_OVERRIDES_VAR}: {0}")]
    Overrides(String),
    #[error(transparent)]
    OAuth(#[from] oauth::ConfigError),
}

impl IntegrationConfig {
    pub fn new(public_base_url: &str, oauth: OAuthApps) -> Result<Self, ConfigError> {
        let base = public_base_url.trim().trim_end_matches('/');
        match url::Url::parse(base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
            _ => return Err(ConfigError::PublicBaseUrl(public_base_url.to_owned())),
        }
        Ok(Self {
            public_base_url: base.to_owned(),
            oauth,
            base_url_overrides: BTreeMap::new(),
            lease_wait: Duration::from_secs(10),
        })
    }

    /// [`PUBLIC_BASE_URL_VAR`], [`oauth::OAUTH_APPS_VAR`], [`BASE_URL_OVERRIDES_VAR`].
    pub fn from_env() -> Result<Self, ConfigError> {
        let base = std::env::var(PUBLIC_BASE_URL_VAR).unwrap_or_default();
        let mut c = Self::new(&base, OAuthApps::from_env()?)?;
        if let Ok(raw) = std::env::var(BASE_URL_OVERRIDES_VAR) {
            for pair in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (app, url) = pair
                    .split_once('=')
                    .ok_or_else(|| ConfigError::Overrides(format!("{pair:?} is not app=url")))?;
                c.base_url_overrides
                    .insert(app.trim().to_owned(), url.trim().to_owned());
            }
        }
        Ok(c)
    }

    pub fn callback_url(&self) -> String {
        format!("{}/oauth/callback", self.public_base_url)
    }
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

/// Connections of every account: links, hosted connect, listing, refresh.
pub struct Connections {
    store: DynamoStore,
    catalog: Arc<dyn Catalog>,
    clock: Arc<dyn Clock>,
    sealer: Arc<Sealer>,
    outbound: Arc<Outbound>,
    config: IntegrationConfig,
}

fn valid_param(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 100
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
}

impl Connections {
    pub fn new(
        store: DynamoStore,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        sealer: Arc<Sealer>,
        outbound: Arc<Outbound>,
        config: IntegrationConfig,
    ) -> Self {
        Self {
            store,
            catalog,
            clock,
            sealer,
            outbound,
            config,
        }
    }

    pub fn config(&self) -> &IntegrationConfig {
        &self.config
    }

    pub fn outbound(&self) -> &Arc<Outbound> {
        &self.outbound
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn store(&self) -> &DynamoStore {
        &self.store
    }

    /// The app's display name (its id when the catalog has none).
    pub fn app_name(&self, app: &str) -> String {
        self.catalog
            .app(app)
            .map(|a| a.name)
            .unwrap_or_else(|| app.to_owned())
    }

    /// How an app is connected: OAuth when a client is configured, else a pasted key, else
    /// username and password.
    pub fn connect_method(&self, app: &str) -> Result<AuthMethod, ConnectError> {
        if self.catalog.app(app).is_none() {
            return Err(ConnectError::AppNotFound(app.to_owned()));
        }
        if self.config.oauth.get(app).is_some() {
            return Ok(AuthMethod::OAuth2);
        }
        let schemes = self
            .catalog
            .app_auth(app)
            .map(|a| a.schemes)
            .unwrap_or_default();
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

    /// The provider of an OAuth app, endpoints filled from `params`.
    pub fn provider(
        &self,
        app: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Provider, ConnectError> {
        let config = self
            .config
            .oauth
            .get(app)
            .ok_or_else(|| ConnectError::OAuthNotConfigured(app.to_owned()))?;
        let flow = self.catalog.app_auth(app).and_then(|a| {
            a.schemes.into_iter().find_map(|s| match s.kind {
                AuthKind::OAuth2 { flows } => {
                    flows.into_iter().find(|f| f.flow == "authorizationCode")
                }
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
            oauth::fill_template(u, params).map_err(|missing| {
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

    /// The server URL tools of `app` are sent to.
    pub fn base_url(&self, app: &AppAuth, params: &BTreeMap<String, String>) -> String {
        let raw = self
            .config
            .base_url_overrides
            .get(&app.app)
            .or_else(|| {
                self.config
                    .oauth
                    .get(&app.app)
                    .and_then(|c| c.base_url.as_ref())
            })
            .unwrap_or(&app.base_url);
        oauth::fill_template(raw, params).unwrap_or_else(|_| raw.clone())
    }

    /// `POST /apps/{app}/connect`.
    pub async fn create_link(
        &self,
        account_id: &str,
        app: &str,
        label: Option<String>,
        redirect_url: Option<String>,
        params: BTreeMap<String, String>,
    ) -> Result<NewLink, ConnectError> {
        let auth = self.connect_method(app)?;
        if let Some(l) = &label
            && (l.trim().is_empty() || l.chars().count() > MAX_LABEL)
        {
            return Err(ConnectError::Invalid(format!(
                "label must have 1 to {MAX_LABEL} characters"
            )));
        }
        if let Some(r) = &redirect_url {
            match url::Url::parse(r) {
                Ok(u) if matches!(u.scheme(), "https" | "http") && u.host_str().is_some() => {}
                _ => {
                    return Err(ConnectError::Invalid(
                        "redirect_url must be an absolute http(s) URL".into(),
                    ));
                }
            }
        }
        if let Some((k, _)) = params
            .iter()
            .find(|(k, v)| !valid_param(k) || !valid_param(v))
        {
            return Err(ConnectError::Invalid(format!(
                "params.{k}: names and values are 1 to 100 letters, digits, '-', '.' or '_'"
            )));
        }
        if auth == AuthMethod::OAuth2 {
            // Fails now, not on the user's click, if a template value is missing.
            self.provider(app, &params)?;
        }
        let now = self.clock.now_ms();
        let id = format!("{LINK_PREFIX}{}", oauth::random_token());
        let link = Link {
            account_id: account_id.to_owned(),
            app: app.to_owned(),
            auth,
            label: label.map(|l| l.trim().to_owned()),
            redirect_url,
            params,
            expires_at_ms: now + LINK_TTL_MS,
        };
        self.store.put_link(&id, &link).await?;
        Ok(NewLink {
            url: format!("{}/connect/{id}", self.config.public_base_url),
            id,
            app: app.to_owned(),
            auth,
            expires_at_ms: link.expires_at_ms,
        })
    }

    fn link_id_ok(id: &str) -> bool {
        id.starts_with(LINK_PREFIX) && id.len() == LINK_PREFIX.len() + 43
    }

    fn page_store_error(e: StoreError) -> PageError {
        tracing::error!(error = %e, "store failure on a hosted page");
        PageError::Internal
    }

    /// Reads a link without using it (the key form shows before it is submitted).
    pub async fn peek_link(&self, id: &str) -> Result<Link, PageError> {
        if !Self::link_id_ok(id) {
            return Err(PageError::LinkUnknown);
        }
        let link = self
            .store
            .get_link(id)
            .await
            .map_err(Self::page_store_error)?
            .ok_or(PageError::LinkUnknown)?;
        if link.expires_at_ms <= self.clock.now_ms() {
            return Err(PageError::LinkExpired);
        }
        Ok(link)
    }

    /// Uses a link up: exactly one caller gets it.
    pub async fn consume_link(&self, id: &str) -> Result<Link, PageError> {
        let peeked = self.peek_link(id).await?;
        match self.store.consume_link(id, self.clock.now_ms()).await {
            Ok(link) => Ok(link),
            Err(StoreError::Conflict(_)) => Err(if peeked.expires_at_ms <= self.clock.now_ms() {
                PageError::LinkExpired
            } else {
                PageError::LinkUnknown
            }),
            Err(e) => Err(Self::page_store_error(e)),
        }
    }

    /// `GET /connect/{id}` of an OAuth link: uses it and returns the provider's URL.
    pub async fn start_oauth(&self, id: &str) -> Result<String, PageError> {
        let link = self.consume_link(id).await?;
        let provider = self
            .provider(&link.app, &link.params)
            .map_err(|e| PageError::Invalid(e.to_string()))?;
        let state = oauth::random_token();
        let verifier = oauth::random_token();
        let verifier_sealed = self
            .sealer
            .seal(verifier.as_bytes(), "oauth#state")
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot seal a PKCE verifier");
                PageError::Internal
            })?;
        let st = OAuthState {
            account_id: link.account_id,
            app: link.app,
            label: link.label,
            redirect_url: link.redirect_url,
            params: link.params,
            verifier_sealed,
            expires_at_ms: self.clock.now_ms() + STATE_TTL_MS,
        };
        self.store
            .put_state(&state, &st)
            .await
            .map_err(Self::page_store_error)?;
        provider
            .authorize(&self.config.callback_url(), &state, &verifier)
            .map_err(PageError::Invalid)
    }

    /// Uses up an OAuth state (any callback with it, success or not, ends the attempt).
    pub async fn take_state(&self, state: &str) -> Result<OAuthState, PageError> {
        if state.is_empty() || state.len() > 200 {
            return Err(PageError::StateUnknown);
        }
        match self.store.consume_state(state, self.clock.now_ms()).await {
            Ok(st) => Ok(st),
            Err(StoreError::Conflict(_)) => Err(PageError::StateUnknown),
            Err(e) => Err(Self::page_store_error(e)),
        }
    }

    /// `GET /oauth/callback` with a code: exchanges it and stores the connection.
    pub async fn finish_oauth(&self, st: &OAuthState, code: &str) -> Result<Connection, PageError> {
        let provider = self
            .provider(&st.app, &st.params)
            .map_err(|e| PageError::Invalid(e.to_string()))?;
        let verifier = self
            .sealer
            .open(&st.verifier_sealed, "oauth#state")
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot open a PKCE verifier");
                PageError::Internal
            })?;
        let verifier = String::from_utf8(verifier).map_err(|_| PageError::Internal)?;
        let tokens = oauth::exchange_code(
            &self.outbound,
            &provider,
            code,
            &self.config.callback_url(),
            &verifier,
        )
        .await
        .map_err(|e| {
            tracing::warn!(app = %st.app, error = %e, "authorization code exchange failed");
            match e {
                TokenError::InvalidGrant(_) => {
                    PageError::Provider("the sign-in code was refused; start again".into())
                }
                other => PageError::Provider(other.to_string()),
            }
        })?;
        let now = self.clock.now_ms();
        let secret = Secret {
            access_token: Some(tokens.access_token.clone()),
            refresh_token: tokens.refresh_token.clone(),
            ..Secret::default()
        };
        let conn = Connection {
            id: new_connection_id(now),
            account_id: st.account_id.clone(),
            app: st.app.clone(),
            label: st.label.clone(),
            identity: tokens.identity.clone(),
            status: ConnStatus::Active,
            auth: AuthMethod::OAuth2,
            created_at_ms: now,
            token_expires_ms: tokens.expires_in_s.map(|s| now + s * 1000),
            version: 0,
            sealed: None,
            params: st.params.clone(),
        };
        self.store_new(conn, &secret).await
    }

    /// `POST /connect/{id}` of a key or password link.
    pub async fn finish_form(&self, id: &str, secret: Secret) -> Result<Connection, PageError> {
        let link = self.consume_link(id).await?;
        let now = self.clock.now_ms();
        let conn = Connection {
            id: new_connection_id(now),
            account_id: link.account_id,
            app: link.app,
            label: link.label.clone(),
            identity: match link.auth {
                AuthMethod::Basic => secret.username.clone(),
                _ => None,
            }
            .or(link.label),
            status: ConnStatus::Active,
            auth: link.auth,
            created_at_ms: now,
            token_expires_ms: None,
            version: 0,
            sealed: None,
            params: link.params,
        };
        self.store_new(conn, &secret).await
    }

    async fn store_new(
        &self,
        mut conn: Connection,
        secret: &Secret,
    ) -> Result<Connection, PageError> {
        let plain = serde_json::to_vec(secret).map_err(|_| PageError::Internal)?;
        conn.sealed = Some(
            self.sealer
                .seal(&plain, &conn.context())
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot seal connection secrets");
                    PageError::Internal
                })?,
        );
        self.store
            .put_connection(&conn)
            .await
            .map_err(Self::page_store_error)?;
        tracing::info!(account = %conn.account_id, app = %conn.app, connection = %conn.id,
                       auth = conn.auth.as_str(), "connection created");
        Ok(conn)
    }

    /// The account's connections, oldest first, with the default of each app marked.
    pub async fn list(&self, account_id: &str) -> Result<Vec<(Connection, bool)>, StoreError> {
        let mut all = self.store.connections(account_id).await?;
        all.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
        let mut seen = std::collections::HashSet::new();
        Ok(all
            .into_iter()
            .map(|c| {
                let default = c.status != ConnStatus::Revoked && seen.insert(c.app.clone());
                (c, default)
            })
            .collect())
    }

    /// `DELETE /connections/{id}`: status revoked, secrets erased.
    pub async fn revoke(&self, account_id: &str, id: &str) -> Result<(), StoreError> {
        if !id.starts_with("conn_") || id.len() > 64 {
            return Err(StoreError::NotFound("no such connection"));
        }
        match self.store.revoke(account_id, id, self.clock.now_ms()).await {
            Err(StoreError::Conflict(_)) => Err(StoreError::NotFound("no such connection")),
            other => other,
        }
    }

    /// The connection a run of `app` uses: `connection_id`, or the app's default (the oldest
    /// connection not revoked).
    async fn pick(
        &self,
        account_id: &str,
        app: &str,
        connection_id: Option<&str>,
    ) -> Result<Connection, CredError> {
        if let Some(id) = connection_id {
            let c = self
                .store
                .get_connection(account_id, id)
                .await?
                .filter(|c| c.status != ConnStatus::Revoked)
                .ok_or_else(|| CredError::NotFound(id.to_owned()))?;
            if c.app != app {
                return Err(CredError::WrongApp {
                    connection_id: id.to_owned(),
                    app: app.to_owned(),
                    actual: c.app,
                });
            }
            return Ok(c);
        }
        self.list(account_id)
            .await?
            .into_iter()
            .find(|(c, default)| *default && c.app == app)
            .map(|(c, _)| c)
            .ok_or_else(|| CredError::ConnectionRequired {
                app: app.to_owned(),
            })
    }

    async fn open(&self, c: &Connection) -> Result<Secret, CredError> {
        let sealed = c.sealed.as_deref().ok_or(CredError::Seal)?;
        let plain = self.sealer.open(sealed, &c.context()).await?;
        serde_json::from_slice(&plain).map_err(|_| CredError::Seal)
    }

    fn fresh(&self, c: &Connection) -> bool {
        c.status == ConnStatus::Active
            && c.token_expires_ms
                .is_none_or(|e| e - self.clock.now_ms() > REFRESH_AHEAD_MS)
    }

    /// Credentials for one run, refreshing an OAuth token that is about to expire (or one
    /// marked `needs_reauth`, once) first.
    pub async fn credentials(
        &self,
        account_id: &str,
        app: &str,
        connection_id: Option<&str>,
    ) -> Result<Credentials, CredError> {
        let c = self.pick(account_id, app, connection_id).await?;
        if c.auth != AuthMethod::OAuth2 || self.fresh(&c) {
            if c.status != ConnStatus::Active {
                return Err(CredError::NeedsReauth {
                    app: app.to_owned(),
                    connection_id: c.id,
                });
            }
            let secret = self.open(&c).await?;
            return Ok(Credentials {
                connection: c,
                secret,
            });
        }
        self.refreshed(c).await
    }

    /// Single-flight refresh: one caller per connection holds a lease (a conditional write of
    /// `lease_until_ms`) and refreshes; the others wait for its result, re-reading the item.
    async fn refreshed(&self, seen: Connection) -> Result<Credentials, CredError> {
        let deadline = tokio::time::Instant::now() + self.config.lease_wait;
        let (account, id) = (seen.account_id.clone(), seen.id.clone());
        let needs_reauth = |c: &Connection| CredError::NeedsReauth {
            app: c.app.clone(),
            connection_id: c.id.clone(),
        };
        let lease_until = loop {
            let current = self
                .store
                .get_connection(&account, &id)
                .await?
                .filter(|c| c.status != ConnStatus::Revoked)
                .ok_or_else(|| CredError::NotFound(id.clone()))?;
            // Someone refreshed since we looked, or found the grant dead.
            if self.fresh(&current) {
                let secret = self.open(&current).await?;
                return Ok(Credentials {
                    connection: current,
                    secret,
                });
            }
            if current.status == ConnStatus::NeedsReauth && seen.status == ConnStatus::Active {
                return Err(needs_reauth(&current));
            }
            let now = self.clock.now_ms();
            let until = now + LEASE_MS;
            match self.store.acquire_lease(&account, &id, now, until).await {
                Ok(()) => break until,
                Err(StoreError::Conflict(_)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(CredError::LockTimeout(id));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let result = self.refresh_holding_lease(&account, &id, &seen).await;
        if result.is_err() {
            // On success the token update removed the lease already.
            if let Err(e) = self.store.release_lease(&account, &id, lease_until).await {
                tracing::warn!(error = %e, connection = %id, "lease release failed");
            }
        }
        result
    }

    async fn refresh_holding_lease(
        &self,
        account: &str,
        id: &str,
        seen: &Connection,
    ) -> Result<Credentials, CredError> {
        // Re-read under the lease: the previous holder may have finished just now.
        let c = self
            .store
            .get_connection(account, id)
            .await?
            .filter(|c| c.status != ConnStatus::Revoked)
            .ok_or_else(|| CredError::NotFound(id.to_owned()))?;
        if self.fresh(&c) {
            let secret = self.open(&c).await?;
            return Ok(Credentials {
                connection: c,
                secret,
            });
        }
        if c.status == ConnStatus::NeedsReauth && seen.status == ConnStatus::Active {
            return Err(CredError::NeedsReauth {
                app: c.app.clone(),
                connection_id: c.id.clone(),
            });
        }
        let secret = self.open(&c).await?;
        let Some(refresh_token) = secret.refresh_token.clone() else {
            self.mark_expired(&c, "no refresh token").await;
            return Err(CredError::NeedsReauth {
                app: c.app.clone(),
                connection_id: c.id.clone(),
            });
        };
        let provider = self
            .provider(&c.app, &c.params)
            .map_err(|e| CredError::Provider(e.to_string()))?;
        let mut attempt = 0;
        let tokens: TokenSet = loop {
            attempt += 1;
            match oauth::refresh(&self.outbound, &provider, &refresh_token).await {
                Ok(t) => break t,
                Err(TokenError::InvalidGrant(why)) => {
                    tracing::warn!(connection = %c.id, app = %c.app, "refresh token refused");
                    self.mark_expired(&c, &why).await;
                    return Err(CredError::NeedsReauth {
                        app: c.app.clone(),
                        connection_id: c.id.clone(),
                    });
                }
                Err(e) if e.transient() && attempt < REFRESH_ATTEMPTS => {
                    tracing::warn!(connection = %c.id, attempt, error = %e, "refresh failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
                Err(e) => {
                    tracing::warn!(connection = %c.id, error = %e, "refresh failed");
                    return Err(CredError::Provider(e.to_string()));
                }
            }
        };
        let now = self.clock.now_ms();
        let new_secret = Secret {
            access_token: Some(tokens.access_token),
            // Providers that do not rotate refresh tokens omit it: keep the old one.
            refresh_token: tokens.refresh_token.or(Some(refresh_token)),
            ..secret
        };
        let plain = serde_json::to_vec(&new_secret).map_err(|_| CredError::Seal)?;
        let sealed = self.sealer.seal(&plain, &c.context()).await?;
        let expires = tokens.expires_in_s.map(|s| now + s * 1000);
        self.store.update_tokens(&c, &sealed, expires).await?;
        tracing::info!(connection = %c.id, app = %c.app, "token refreshed");
        let mut updated = c;
        updated.version += 1;
        updated.status = ConnStatus::Active;
        updated.token_expires_ms = expires;
        updated.sealed = Some(sealed);
        Ok(Credentials {
            connection: updated,
            secret: new_secret,
        })
    }

    /// `active` → `needs_reauth`, and a `connection.expired` event the first time.
    async fn mark_expired(&self, c: &Connection, why: &str) {
        match self
            .store
            .set_status_from_active(&c.account_id, &c.id, ConnStatus::NeedsReauth)
            .await
        {
            Ok(()) => {
                let data = json!({
                    "connection_id": c.id,
                    "app": c.app,
                    "label": c.label,
                    "reason": if why.is_empty() { "invalid_grant" } else { why },
                });
                if let Err(e) = crate::events::record_event(
                    &self.store,
                    &c.account_id,
                    "connection.expired",
                    data,
                    self.clock.now_ms(),
                )
                .await
                {
                    tracing::error!(error = %e, connection = %c.id, "connection.expired event lost");
                }
            }
            Err(StoreError::Conflict(_)) => {}
            Err(e) => tracing::error!(error = %e, connection = %c.id, "cannot mark needs_reauth"),
        }
    }
}

/// Everything that needs credentials: connections and the tool executor, shared by REST, MCP,
/// triggers and custom connectors.
pub struct Integrations {
    pub connections: Arc<Connections>,
    pub executor: Arc<crate::exec::Executor>,
}

#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("credentials key: {0}")]
    Seal(#[from] SealError),
    #[error("outbound HTTP client: {0}")]
    Outbound(#[from] crate::outbound::OutboundError),
}

impl Integrations {
    pub fn new(
        store: DynamoStore,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        sealer: Arc<Sealer>,
        outbound: Arc<Outbound>,
        config: IntegrationConfig,
    ) -> Self {
        let connections = Arc::new(Connections::new(
            store,
            catalog.clone(),
            clock,
            sealer,
            outbound,
            config,
        ));
        Self {
            executor: Arc::new(crate::exec::Executor::new(catalog, connections.clone())),
            connections,
        }
    }

    /// Everything from the environment: [`IntegrationConfig::from_env`], the credentials key
    /// and the outbound policy.
    pub async fn from_env(
        store: DynamoStore,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, IntegrationError> {
        let config = IntegrationConfig::from_env()?;
        let sealer = Arc::new(Sealer::from_env().await?);
        let outbound = Arc::new(Outbound::new(crate::outbound::OutboundPolicy::from_env()?)?);
        Ok(Self::new(store, catalog, clock, sealer, outbound, config))
    }
}
