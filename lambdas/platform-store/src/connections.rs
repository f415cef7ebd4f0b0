//! Connections, connect links and OAuth states.
//!
//! - connection: pk `acct#<account>`, sk `conn#<conn id>`; secrets only in `sealed`, the token
//!   expiry in `token_expires_ms` (not the TTL attribute), the refresh lease in
//!   `lease_until_ms`, a `version` bumped per token update.
//! - connect link: pk `cl#<sha256 of the link id>`, sk `cl`, TTL. Keyed by the secret's hash
//!   rather than through gsi1: the link is read strongly consistently and consumed with a
//!   conditional delete, which only the base table offers, and a leaked table holds no usable
//!   link.
//! - OAuth state: pk `oauth#<sha256 of state>`, sk `state`, TTL, the PKCE verifier sealed.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use platform_domain::StoreError;
use platform_domain::connections::{
    AuthMethod, ConnStatus, Connection, ConnectionStore, Link, OAuthState, REVOKED_RETENTION_S,
};
use platform_domain::ids::sha256_hex;

use crate::dynamo::DynamoStore;
use crate::error::write_error;
use crate::item::{Item, ItemBuilder, get_n, get_s, n, opt_s, s};
use crate::layout::{ACCOUNT_SK, CONNECTION_PREFIX, LINK_SK, STATE_SK, account_pk};
use crate::table::{PK, SK, TTL_ATTRIBUTE};

/// Attribute of the account item: the origins its links may redirect to (a string set).
const REDIRECT_ORIGINS: &str = "redirect_origins";
const LINK_GONE: &str = "the link was used or has expired";
const STATE_GONE: &str = "unknown, used or expired state";

fn params_json(params: &BTreeMap<String, String>) -> String {
    serde_json::to_string(params).unwrap_or_else(|_| "{}".into())
}

fn params_from(item: &Item) -> BTreeMap<String, String> {
    opt_s(item, "params")
        .and_then(|p| serde_json::from_str(&p).ok())
        .unwrap_or_default()
}

fn auth_of(item: &Item, what: &str) -> Result<AuthMethod, StoreError> {
    let auth = get_s(item, "auth")?;
    AuthMethod::parse(&auth).ok_or_else(|| StoreError::Corrupt(format!("{what} auth {auth}")))
}

fn connection_from_item(item: &Item) -> Result<Connection, StoreError> {
    let status = get_s(item, "status")?;
    Ok(Connection {
        id: get_s(item, "conn_id")?,
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        label: opt_s(item, "label"),
        identity: opt_s(item, "identity"),
        status: ConnStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("connection status {status}")))?,
        auth: auth_of(item, "connection")?,
        created_at_ms: get_n(item, "created_at_ms")?,
        token_expires_ms: get_n(item, "token_expires_ms").ok(),
        version: get_n(item, "version").unwrap_or(0),
        sealed: opt_s(item, "sealed"),
        params: params_from(item),
    })
}

fn link_from_item(item: &Item) -> Result<Link, StoreError> {
    Ok(Link {
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        auth: auth_of(item, "link")?,
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

fn link_pk(id: &str) -> String {
    format!("cl#{}", sha256_hex(id))
}

fn state_pk(state: &str) -> String {
    format!("oauth#{}", sha256_hex(state))
}

/// The attributes a link and an OAuth state share; both expire (TTL) a minute after they stop
/// being usable.
fn attempt_item(
    pk: String,
    sk: &str,
    (account_id, app): (&str, &str),
    (label, redirect_url): (Option<&str>, Option<&str>),
    params: &BTreeMap<String, String>,
    expires_at_ms: i64,
) -> ItemBuilder {
    ItemBuilder::new(pk, sk)
        .s("account_id", account_id)
        .s("app", app)
        .s("params", params_json(params))
        .n("expires_at_ms", expires_at_ms)
        .n(TTL_ATTRIBUTE, expires_at_ms / 1000 + 60)
        .opt_s("label", label)
        .opt_s("redirect_url", redirect_url)
}

impl DynamoStore {
    /// Deletes the item at `(pk, sk)` if it is there and unexpired, returning it; exactly one
    /// caller gets it. `Conflict(gone)` otherwise.
    async fn consume(
        &self,
        (pk, sk): (String, &str),
        now_ms: i64,
        gone: &'static str,
    ) -> Result<Item, StoreError> {
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .key(PK, s(pk))
            .key(SK, s(sk))
            .condition_expression("attribute_exists(#pk) AND expires_at_ms > :now")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| write_error(e, gone))?;
        out.attributes().cloned().ok_or(StoreError::Conflict(gone))
    }

    /// An update of connection `id` of the account.
    fn update_connection(&self, account_id: &str, id: &str) -> UpdateItemFluentBuilder {
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
    }
}

#[async_trait]
impl ConnectionStore for DynamoStore {
    async fn redirect_origins(&self, account_id: &str) -> Result<Vec<String>, StoreError> {
        let got = self.get_item(account_pk(account_id), ACCOUNT_SK).await?;
        Ok(got
            .as_ref()
            .and_then(|i| i.get(REDIRECT_ORIGINS))
            .and_then(|v| v.as_ss().ok())
            .cloned()
            .unwrap_or_default())
    }

    async fn add_redirect_origin(
        &self,
        account_id: &str,
        origin: &str,
        only_first: bool,
    ) -> Result<(), StoreError> {
        let condition = if only_first {
            "attribute_exists(#pk) AND attribute_not_exists(#ro)"
        } else {
            "attribute_exists(#pk)"
        };
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(ACCOUNT_SK))
            .update_expression("ADD #ro :o")
            .condition_expression(condition)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#ro", REDIRECT_ORIGINS)
            .expression_attribute_values(":o", AttributeValue::Ss(vec![origin.to_owned()]))
            .send()
            .await
            .map_err(|e| write_error(e, "no such account, or it already has redirect origins"))?;
        Ok(())
    }

    async fn put_link(&self, id: &str, link: &Link) -> Result<(), StoreError> {
        let item = attempt_item(
            link_pk(id),
            LINK_SK,
            (&link.account_id, &link.app),
            (link.label.as_deref(), link.redirect_url.as_deref()),
            &link.params,
            link.expires_at_ms,
        )
        .s("auth", link.auth.as_str())
        .build();
        self.put_new(item, "link id collision").await
    }

    async fn get_link(&self, id: &str) -> Result<Option<Link>, StoreError> {
        let got = self.get_item(link_pk(id), LINK_SK).await?;
        got.as_ref().map(link_from_item).transpose()
    }

    async fn consume_link(&self, id: &str, now_ms: i64) -> Result<Link, StoreError> {
        link_from_item(
            &self
                .consume((link_pk(id), LINK_SK), now_ms, LINK_GONE)
                .await?,
        )
    }

    async fn put_state(&self, state: &str, st: &OAuthState) -> Result<(), StoreError> {
        let item = attempt_item(
            state_pk(state),
            STATE_SK,
            (&st.account_id, &st.app),
            (st.label.as_deref(), st.redirect_url.as_deref()),
            &st.params,
            st.expires_at_ms,
        )
        .s("verifier", &st.verifier_sealed)
        .build();
        self.put_new(item, "state collision").await
    }

    async fn consume_state(&self, state: &str, now_ms: i64) -> Result<OAuthState, StoreError> {
        state_from_item(
            &self
                .consume((state_pk(state), STATE_SK), now_ms, STATE_GONE)
                .await?,
        )
    }

    async fn put_connection(&self, c: &Connection) -> Result<(), StoreError> {
        let item = ItemBuilder::new(
            account_pk(&c.account_id),
            format!("{CONNECTION_PREFIX}{}", c.id),
        )
        .s("conn_id", &c.id)
        .s("account_id", &c.account_id)
        .s("app", &c.app)
        .s("status", c.status.as_str())
        .s("auth", c.auth.as_str())
        .n("created_at_ms", c.created_at_ms)
        .n("version", c.version)
        .s("params", params_json(&c.params))
        .opt_s("label", c.label.as_deref())
        .opt_s("identity", c.identity.as_deref())
        .opt_s("sealed", c.sealed.as_deref())
        .opt_n("token_expires_ms", c.token_expires_ms)
        .build();
        self.put_new(item, "connection id collision").await
    }

    async fn get_connection(
        &self,
        account_id: &str,
        id: &str,
    ) -> Result<Option<Connection>, StoreError> {
        let got = self
            .get_item(account_pk(account_id), format!("{CONNECTION_PREFIX}{id}"))
            .await?;
        got.as_ref().map(connection_from_item).transpose()
    }

    async fn connections(&self, account_id: &str) -> Result<Vec<Connection>, StoreError> {
        let query = self
            .partition_query(&account_pk(account_id), CONNECTION_PREFIX)
            .consistent_read(true);
        self.query_all(query)
            .await?
            .iter()
            .map(connection_from_item)
            .collect()
    }

    async fn update_tokens(
        &self,
        c: &Connection,
        sealed: &str,
        token_expires_ms: Option<i64>,
    ) -> Result<(), StoreError> {
        let update = self
            .update_connection(&c.account_id, &c.id)
            .condition_expression("#v = :v AND #st <> :revoked")
            .expression_attribute_names("#v", "version")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":v", n(c.version))
            .expression_attribute_values(":next", n(c.version + 1))
            .expression_attribute_values(":sealed", s(sealed))
            .expression_attribute_values(":active", s(ConnStatus::Active.as_str()))
            .expression_attribute_values(":revoked", s(ConnStatus::Revoked.as_str()));
        let update = match token_expires_ms {
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
        self.update_connection(account_id, id)
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
        self.update_connection(account_id, id)
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
        self.update_connection(account_id, id)
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
            .update_connection(account_id, id)
            .update_expression("REMOVE lease_until_ms")
            .condition_expression("lease_until_ms = :mine")
            .expression_attribute_values(":mine", n(until_ms))
            .send()
            .await;
        StoreError::ignore_conflict(
            res.map(|_| ())
                .map_err(|e| write_error(e, "lease already gone")),
        )
    }

    async fn connected_apps(&self, account_id: &str) -> Result<HashSet<String>, StoreError> {
        let items = self
            .query_all(self.partition_query(&account_pk(account_id), CONNECTION_PREFIX))
            .await?;
        // Revoked and expired (needs_reauth) connections do not count as connected.
        Ok(items
            .iter()
            .filter(|item| opt_s(item, "status").as_deref() == Some("active"))
            .filter_map(|item| opt_s(item, "app"))
            .collect())
    }
}
