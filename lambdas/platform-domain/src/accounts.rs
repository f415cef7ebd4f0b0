//! Accounts and their one API key: what `api admin` does, and what authentication asks, over the
//! [`AccountStore`] port.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::keys::{ApiKey, KeyHash};

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

/// Accounts and their keys. Every invariant is the implementation's conditional write: unique
/// account and e-mail, one active key per account, a key revoked once.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Stores an account with its first key. Fails with `Conflict` if the id or e-mail exists.
    async fn create_account(
        &self,
        account: &NewAccount,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Makes `key` the account's only active key, revoking the previous one if any.
    async fn rotate_key(
        &self,
        account_id: &str,
        key: &KeyHash,
        prefix: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Revokes the account's active key; the account then has none until the next rotation.
    async fn revoke_key(&self, account_id: &str, now_ms: i64) -> Result<(), StoreError>;

    /// The account's keys, newest first.
    async fn key_history(&self, account_id: &str) -> Result<Vec<KeyInfo>, StoreError>;

    /// The account of an active key, or `None` for an unknown or revoked one.
    async fn authenticate(&self, key: &KeyHash) -> Result<Option<Principal>, StoreError>;
}

/// A key just issued. The secret is in here once and nowhere else.
#[derive(Debug)]
pub struct IssuedKey {
    pub account_id: String,
    pub key: ApiKey,
}

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("invalid e-mail address: {0:?}")]
    InvalidEmail(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn new_account_id() -> String {
    crate::ids::random_id("acc_", 10)
}

/// A deliberately loose check: one `@` with something on both sides and no whitespace. The
/// address is an identifier for operators, not something we send mail to yet.
fn valid_email(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !email.chars().any(char::is_whitespace)
                && email.len() <= 254
        }
        None => false,
    }
}

pub async fn create_account(
    store: &dyn AccountStore,
    email: &str,
    name: Option<&str>,
    now_ms: i64,
) -> Result<IssuedKey, AccountError> {
    let email = email.trim();
    if !valid_email(email) {
        return Err(AccountError::InvalidEmail(email.to_owned()));
    }
    let account = NewAccount {
        id: new_account_id(),
        email: email.to_owned(),
        name: name.map(str::to_owned),
    };
    let key = ApiKey::generate();
    store
        .create_account(&account, &key.hash(), &key.visible_prefix(), now_ms)
        .await?;
    Ok(IssuedKey {
        account_id: account.id,
        key,
    })
}

pub async fn rotate_key(
    store: &dyn AccountStore,
    account_id: &str,
    now_ms: i64,
) -> Result<IssuedKey, AccountError> {
    let key = ApiKey::generate();
    store
        .rotate_key(account_id, &key.hash(), &key.visible_prefix(), now_ms)
        .await?;
    Ok(IssuedKey {
        account_id: account_id.to_owned(),
        key,
    })
}

pub async fn revoke_key(
    store: &dyn AccountStore,
    account_id: &str,
    now_ms: i64,
) -> Result<(), AccountError> {
    Ok(store.revoke_key(account_id, now_ms).await?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn email_check() {
        for ok in ["a@b.co", "first.last+tag@example.com"] {
            assert!(super::valid_email(ok), "{ok}");
        }
        for bad in ["", "a", "@b.co", "a@b", "a b@c.de", "a@b@c.de"] {
            assert!(!super::valid_email(bad), "{bad}");
        }
    }
}
