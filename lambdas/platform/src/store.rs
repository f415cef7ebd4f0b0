//! DynamoDB access behind the [`Store`] trait: accounts and keys, the rate-limit counter, runs.
//!
//! Every invariant is a conditional write (unique account and e-mail, one active key per
//! account, single revocation, a counter that stops at the limit). Every read on a request path
//! is a GetItem or a Query on a key; nothing scans.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValue, TransactWriteItem, Update};
use aws_smithy_http_client::tls;

use crate::keys::KeyHash;
use crate::ratelimit::Window;
use crate::runs::{Run, RunStatus};
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE};

/// Environment variable naming a DynamoDB endpoint to use instead of AWS (DynamoDB Local in tests
/// and development).
pub const ENDPOINT_VAR: &str = "DDB_ENDPOINT";

/// Environment variable naming the single table of the platform.
pub const TABLE_VAR: &str = "TABLE_NAME";

/// The shared AWS configuration from the standard environment (DynamoDB and KMS clients are
/// built from it).
///
/// The HTTP client is built explicitly with rustls and ring because the SDK's default TLS stack is
/// disabled to keep the build small (see notes/toolchain.md).
pub async fn aws_config_from_env() -> aws_config::SdkConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .load()
        .await
}

/// Builds a DynamoDB client from the standard AWS environment, honouring [`ENDPOINT_VAR`] (which
/// applies to DynamoDB only, not to the other AWS services the platform calls).
pub async fn client_from_env() -> Client {
    let config = aws_config_from_env().await;
    let mut builder = aws_sdk_dynamodb::config::Builder::from(&config);
    if let Ok(endpoint) = std::env::var(ENDPOINT_VAR) {
        builder = builder.endpoint_url(endpoint);
    }
    Client::from_conf(builder.build())
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: the thing exists already, or changed meanwhile.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("not found: {0}")]
    NotFound(&'static str),
    #[error("DynamoDB request failed: {0}")]
    Unavailable(String),
    #[error("a stored item is malformed: {0}")]
    Corrupt(String),
}

pub(crate) fn unavailable<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(&e).to_string())
}

/// Maps a failed single-item write: a lost condition is a conflict.
pub(crate) fn write_error<E, R>(e: SdkError<E, R>, conflict: &'static str) -> StoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match e.as_service_error().and_then(|s| s.code()) {
        Some("ConditionalCheckFailedException") => StoreError::Conflict(conflict),
        _ => unavailable(e),
    }
}

/// A new account, before it is stored.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
}

/// The account a valid key acts as.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account_id: String,
    pub key_hash: KeyHash,
}

/// One key of an account's history (never the secret, never the hash).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyInfo {
    pub prefix: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

pub trait Store: Send + Sync + 'static {
    /// Stores an account with its first key. Fails with `Conflict` if the id or e-mail exists.
    fn create_account(
        &self,
        account: &NewAccount,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Makes `key` the account's only active key, revoking the previous one if any.
    fn rotate_key(
        &self,
        account_id: &str,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Revokes the account's active key; the account then has none until the next rotation.
    fn revoke_key(
        &self,
        account_id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The account's keys, newest first.
    fn key_history(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<Vec<KeyInfo>, StoreError>> + Send;

    /// The account of an active key, or `None` for an unknown or revoked one.
    fn authenticate(
        &self,
        key: &KeyHash,
    ) -> impl Future<Output = Result<Option<Principal>, StoreError>> + Send;

    /// Counts one request of `subject` in `window`. Returns the count including this request, or
    /// `None` (and counts nothing) if the subject already reached `limit`.
    fn count_request(
        &self,
        subject: &str,
        window: &Window,
        limit: u32,
    ) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send;

    /// Stores a finished run (the executor calls this).
    fn record_run(
        &self,
        account_id: &str,
        run: &Run,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The account's latest runs, newest first.
    fn latest_runs(
        &self,
        account_id: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Run>, StoreError>> + Send;

    /// Ids of the apps the account has a connection to.
    fn connected_apps(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<HashSet<String>, StoreError>> + Send;
}

/// [`Store`] over one DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

pub(crate) type Item = HashMap<String, AttributeValue>;

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn get_s(item: &Item, name: &str) -> Result<String, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .ok_or_else(|| StoreError::Corrupt(format!("missing string attribute {name}")))
}

pub(crate) fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("missing number attribute {name}")))
}

pub(crate) fn opt_s(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

pub(crate) fn account_pk(account_id: &str) -> String {
    format!("acct#{account_id}")
}

fn key_pk(hash: &KeyHash) -> String {
    format!("key#{}", hash.as_str())
}

const ACCOUNT_SK: &str = "account";
const KEY_SK: &str = "key";
const RUN_PREFIX: &str = "run#";
pub(crate) const CONNECTION_PREFIX: &str = "conn#";

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The client and table named by the environment ([`ENDPOINT_VAR`], [`TABLE_VAR`]).
    pub async fn from_env() -> Result<Self, StoreError> {
        let table = std::env::var(TABLE_VAR)
            .map_err(|_| StoreError::Unavailable(format!("{TABLE_VAR} is not set")))?;
        Ok(Self::new(client_from_env().await, table))
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn key_item(&self, account_id: &str, key: &KeyHash, prefix: &str, now_ms: i64) -> Item {
        HashMap::from([
            (PK.to_owned(), s(key_pk(key))),
            (SK.to_owned(), s(KEY_SK)),
            ("account_id".to_owned(), s(account_id)),
            ("key_hash".to_owned(), s(key.as_str())),
            ("prefix".to_owned(), s(prefix)),
            ("created_at_ms".to_owned(), n(now_ms)),
            (GSI1_PK.to_owned(), s(account_pk(account_id))),
            (GSI1_SK.to_owned(), s(format!("key#{now_ms:013}"))),
        ])
    }

    fn put_new(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn revoke_update(&self, key: &KeyHash, now_ms: i64) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(key_pk(key)))
            .key(SK, s(KEY_SK))
            .update_expression("SET revoked_at_ms = :now")
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(revoked_at_ms)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms))
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    async fn active_key(&self, account_id: &str) -> Result<Option<KeyHash>, StoreError> {
        let got = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(ACCOUNT_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        let item = got.item().ok_or(StoreError::NotFound("no such account"))?;
        Ok(opt_s(item, "active_key_hash").map(KeyHash::from_stored))
    }

    async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        conflict: &'static str,
    ) -> Result<(), StoreError> {
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(e) = res else { return Ok(()) };
        // A cancelled transaction is a conflict only when a condition failed or another
        // transaction touched the same items; any other reason (validation, capacity) is a fault
        // that must not pass for "someone else won".
        let lost = match e.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                c.cancellation_reasons().iter().any(|r| {
                    matches!(
                        r.code(),
                        Some("ConditionalCheckFailed" | "TransactionConflict")
                    )
                })
            }
            _ => false,
        };
        if lost {
            Err(StoreError::Conflict(conflict))
        } else {
            Err(unavailable(e))
        }
    }
}

fn run_from_item(item: &Item) -> Result<Run, StoreError> {
    let status = get_s(item, "status")?;
    let arguments = get_s(item, "arguments")?;
    Ok(Run {
        id: get_s(item, "run_id")?,
        tool: get_s(item, "tool")?,
        app: get_s(item, "app")?,
        status: RunStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown run status {status}")))?,
        duration_ms: get_n(item, "duration_ms")?,
        started_at_ms: get_n(item, "started_at_ms")?,
        error: opt_s(item, "error"),
        arguments: serde_json::from_str(&arguments)
            .map_err(|e| StoreError::Corrupt(format!("run arguments: {e}")))?,
    })
}

impl Store for DynamoStore {
    async fn create_account(
        &self,
        account: &NewAccount,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut acct = HashMap::from([
            (PK.to_owned(), s(account_pk(&account.id))),
            (SK.to_owned(), s(ACCOUNT_SK)),
            ("account_id".to_owned(), s(&account.id)),
            ("email".to_owned(), s(&account.email)),
            ("created_at_ms".to_owned(), n(now_ms)),
            ("active_key_hash".to_owned(), s(key.as_str())),
            ("active_key_prefix".to_owned(), s(prefix)),
        ]);
        if let Some(name) = &account.name {
            acct.insert("name".to_owned(), s(name));
        }
        // The e-mail item makes the address unique across accounts.
        let email = HashMap::from([
            (
                PK.to_owned(),
                s(format!("email#{}", account.email.to_lowercase())),
            ),
            (SK.to_owned(), s("email")),
            ("account_id".to_owned(), s(&account.id)),
        ]);
        self.transact(
            vec![
                self.put_new(acct)?,
                self.put_new(email)?,
                self.put_new(self.key_item(&account.id, key, prefix, now_ms))?,
            ],
            "an account with this id or e-mail already exists",
        )
        .await
    }

    async fn rotate_key(
        &self,
        account_id: &str,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let old = self.active_key(account_id).await?;
        let mut update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(ACCOUNT_SK))
            .update_expression("SET active_key_hash = :new, active_key_prefix = :prefix")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":new", s(key.as_str()))
            .expression_attribute_values(":prefix", s(prefix));
        // Conditioned on the key we read, so two concurrent rotations cannot both win and leave
        // two active keys.
        update = match &old {
            Some(old) => update
                .condition_expression("attribute_exists(#pk) AND active_key_hash = :old")
                .expression_attribute_values(":old", s(old.as_str())),
            None => update.condition_expression(
                "attribute_exists(#pk) AND attribute_not_exists(active_key_hash)",
            ),
        };
        let update = update
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let mut items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.put_new(self.key_item(account_id, key, prefix, now_ms))?,
        ];
        if let Some(old) = &old {
            items.push(self.revoke_update(old, now_ms)?);
        }
        self.transact(items, "the account's key changed meanwhile; retry")
            .await
    }

    async fn revoke_key(&self, account_id: &str, now_ms: i64) -> Result<(), StoreError> {
        let old = self
            .active_key(account_id)
            .await?
            .ok_or(StoreError::NotFound("the account has no active key"))?;
        let update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(ACCOUNT_SK))
            .update_expression("REMOVE active_key_hash, active_key_prefix")
            .condition_expression("active_key_hash = :old")
            .expression_attribute_values(":old", s(old.as_str()))
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        self.transact(
            vec![
                TransactWriteItem::builder().update(update).build(),
                self.revoke_update(&old, now_ms)?,
            ],
            "the account's key changed meanwhile; retry",
        )
        .await
    }

    async fn key_history(&self, account_id: &str) -> Result<Vec<KeyInfo>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(GSI1)
            .key_condition_expression("#g = :acct AND begins_with(#gs, :key)")
            .expression_attribute_names("#g", GSI1_PK)
            .expression_attribute_names("#gs", GSI1_SK)
            .expression_attribute_values(":acct", s(account_pk(account_id)))
            .expression_attribute_values(":key", s("key#"))
            .scan_index_forward(false)
            .send()
            .await
            .map_err(unavailable)?;
        out.items()
            .iter()
            .map(|item| {
                Ok(KeyInfo {
                    prefix: get_s(item, "prefix")?,
                    created_at_ms: get_n(item, "created_at_ms")?,
                    revoked_at_ms: get_n(item, "revoked_at_ms").ok(),
                })
            })
            .collect()
    }

    async fn authenticate(&self, key: &KeyHash) -> Result<Option<Principal>, StoreError> {
        // Strongly consistent, so a revocation takes effect on the very next request.
        let got = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(key_pk(key)))
            .key(SK, s(KEY_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        let Some(item) = got.item() else {
            return Ok(None);
        };
        if item.contains_key("revoked_at_ms") {
            return Ok(None);
        }
        let stored = KeyHash::from_stored(get_s(item, "key_hash")?);
        if !stored.matches(key) {
            return Ok(None);
        }
        Ok(Some(Principal {
            account_id: get_s(item, "account_id")?,
            key_hash: stored,
        }))
    }

    async fn count_request(
        &self,
        subject: &str,
        window: &Window,
        limit: u32,
    ) -> Result<Option<u32>, StoreError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(format!("rl#{subject}#{}", window.index)))
            .key(SK, s("rl"))
            .update_expression("ADD #n :one SET #ttl = :exp")
            .condition_expression("attribute_not_exists(#n) OR #n < :limit")
            .expression_attribute_names("#n", "n")
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(limit))
            // Kept one window past its end: long enough to count, short enough to stay small.
            .expression_attribute_values(":exp", n(window.ends_at_s + 60))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match res {
            Ok(out) => {
                let count = out
                    .attributes()
                    .and_then(|a| get_n::<u32>(a, "n").ok())
                    .ok_or_else(|| StoreError::Corrupt("rate counter without n".into()))?;
                Ok(Some(count))
            }
            Err(e) => match write_error(e, "over the limit") {
                StoreError::Conflict(_) => Ok(None),
                other => Err(other),
            },
        }
    }

    async fn record_run(&self, account_id: &str, run: &Run) -> Result<(), StoreError> {
        let mut item = HashMap::from([
            (PK.to_owned(), s(account_pk(account_id))),
            (
                SK.to_owned(),
                s(format!(
                    "{RUN_PREFIX}{:013}#{}",
                    run.started_at_ms.max(0),
                    run.id
                )),
            ),
            ("run_id".to_owned(), s(&run.id)),
            ("tool".to_owned(), s(&run.tool)),
            ("app".to_owned(), s(&run.app)),
            ("status".to_owned(), s(run.status.as_str())),
            ("duration_ms".to_owned(), n(run.duration_ms)),
            ("started_at_ms".to_owned(), n(run.started_at_ms)),
            ("arguments".to_owned(), s(run.arguments.to_string())),
            (
                TTL_ATTRIBUTE.to_owned(),
                n(run.started_at_ms / 1000 + crate::runs::RETENTION_S),
            ),
            (GSI1_PK.to_owned(), s(format!("run#{}", run.id))),
            (GSI1_SK.to_owned(), s(account_pk(account_id))),
        ]);
        if let Some(e) = &run.error {
            item.insert("error".to_owned(), s(e));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| write_error(e, "a run with this id exists"))?;
        Ok(())
    }

    async fn latest_runs(&self, account_id: &str, limit: usize) -> Result<Vec<Run>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :run)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":run", s(RUN_PREFIX))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        out.items().iter().map(run_from_item).collect()
    }

    async fn connected_apps(&self, account_id: &str) -> Result<HashSet<String>, StoreError> {
        let mut apps = HashSet::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :conn)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(account_pk(account_id)))
                .expression_attribute_values(":conn", s(CONNECTION_PREFIX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                if let Some(app) = opt_s(item, "app") {
                    apps.insert(app);
                }
            }
            match out.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(apps),
            }
        }
    }
}
