//! Accounts, e-mail claims and API keys, and the rate-limit counter.
//!
//! An account is created with its e-mail claim and first key in one transaction; rotation and
//! revocation are transactions conditioned on the active key that was read, so concurrent
//! rotations cannot leave two active keys.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, ReturnValue, TransactWriteItem, Update};
use platform_domain::StoreError;
use platform_domain::accounts::{AccountStore, KeyInfo, NewAccount, Principal};
use platform_domain::keys::KeyHash;
use platform_domain::ratelimit::{RateCounter, Window};

use crate::dynamo::DynamoStore;
use crate::error::{Cancelled, build_error, unavailable, write_error};
use crate::item::{Item, ItemBuilder, get_n, get_s, n, opt_s, s};
use crate::layout::{ACCOUNT_SK, EMAIL_SK, KEY_SK, RATE_SK, account_pk};
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE};

const KEY_CHANGED: &str = "the account's key changed meanwhile; retry";

fn key_pk(hash: &KeyHash) -> String {
    format!("key#{}", hash.as_str())
}

fn key_item(account_id: &str, key: &KeyHash, prefix: &str, now_ms: i64) -> Item {
    ItemBuilder::new(key_pk(key), KEY_SK)
        .s("account_id", account_id)
        .s("key_hash", key.as_str())
        .s("prefix", prefix)
        .n("created_at_ms", now_ms)
        .s(GSI1_PK, account_pk(account_id))
        .s(GSI1_SK, format!("key#{now_ms:013}"))
        .build()
}

impl DynamoStore {
    fn put_new_item(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn revoke_update(&self, key: &KeyHash, now_ms: i64) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(self.table())
            .key(PK, s(key_pk(key)))
            .key(SK, s(KEY_SK))
            .update_expression("SET revoked_at_ms = :now")
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(revoked_at_ms)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    async fn active_key(&self, account_id: &str) -> Result<Option<KeyHash>, StoreError> {
        let got = self.get_item(account_pk(account_id), ACCOUNT_SK).await?;
        let item = got
            .as_ref()
            .ok_or(StoreError::NotFound("no such account"))?;
        Ok(opt_s(item, "active_key_hash").map(KeyHash::from_stored))
    }

    /// A transaction whose loss to a concurrent writer is `Conflict(conflict)`.
    async fn transact_or(
        &self,
        items: Vec<TransactWriteItem>,
        conflict: &'static str,
    ) -> Result<(), StoreError> {
        match self.transact(items).await {
            Ok(()) => Ok(()),
            Err(Cancelled::Condition(_) | Cancelled::Conflict) => {
                Err(StoreError::Conflict(conflict))
            }
            Err(Cancelled::Store(e)) => Err(e),
        }
    }
}

#[async_trait]
impl AccountStore for DynamoStore {
    async fn create_account(
        &self,
        account: &NewAccount,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let acct = ItemBuilder::new(account_pk(&account.id), ACCOUNT_SK)
            .s("account_id", &account.id)
            .s("email", &account.email)
            .n("created_at_ms", now_ms)
            .s("active_key_hash", key.as_str())
            .s("active_key_prefix", prefix)
            .opt_s("name", account.name.as_deref())
            .build();
        // The e-mail item makes the address unique across accounts.
        let email = ItemBuilder::new(format!("email#{}", account.email.to_lowercase()), EMAIL_SK)
            .s("account_id", &account.id)
            .build();
        self.transact_or(
            vec![
                self.put_new_item(acct)?,
                self.put_new_item(email)?,
                self.put_new_item(key_item(&account.id, key, prefix, now_ms))?,
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
            .table_name(self.table())
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
        let update = update.build().map_err(build_error)?;
        let mut items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.put_new_item(key_item(account_id, key, prefix, now_ms))?,
        ];
        if let Some(old) = &old {
            items.push(self.revoke_update(old, now_ms)?);
        }
        self.transact_or(items, KEY_CHANGED).await
    }

    async fn revoke_key(&self, account_id: &str, now_ms: i64) -> Result<(), StoreError> {
        let old = self
            .active_key(account_id)
            .await?
            .ok_or(StoreError::NotFound("the account has no active key"))?;
        let update = Update::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(ACCOUNT_SK))
            .update_expression("REMOVE active_key_hash, active_key_prefix")
            .condition_expression("active_key_hash = :old")
            .expression_attribute_values(":old", s(old.as_str()))
            .build()
            .map_err(build_error)?;
        self.transact_or(
            vec![
                TransactWriteItem::builder().update(update).build(),
                self.revoke_update(&old, now_ms)?,
            ],
            KEY_CHANGED,
        )
        .await
    }

    async fn key_history(&self, account_id: &str) -> Result<Vec<KeyInfo>, StoreError> {
        let out = self
            .client()
            .query()
            .table_name(self.table())
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
        let got = self.get_item(key_pk(key), KEY_SK).await?;
        let Some(item) = got.as_ref() else {
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
}

#[async_trait]
impl RateCounter for DynamoStore {
    async fn count_request(
        &self,
        subject: &str,
        window: &Window,
        limit: u32,
    ) -> Result<Option<u32>, StoreError> {
        let res = self
            .client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(format!("rl#{subject}#{}", window.index)))
            .key(SK, s(RATE_SK))
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
}
