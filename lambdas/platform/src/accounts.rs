//! Accounts and their one API key: what `api admin` does, on top of the [`Store`].

use rand::RngCore;

use crate::keys::ApiKey;
use crate::store::{NewAccount, Store, StoreError};

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
    let mut r = [0u8; 10];
    rand::rng().fill_bytes(&mut r);
    let mut id = String::from("acc_");
    for b in r {
        id.push_str(&format!("{b:02x}"));
    }
    id
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

pub async fn create_account<S: Store>(
    store: &S,
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

pub async fn rotate_key<S: Store>(
    store: &S,
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

pub async fn revoke_key<S: Store>(
    store: &S,
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
