//! API keys: issued once, stored as hashes, one active per account; Bearer auth over HTTP.

mod common;

use common::{assert_documented, get, send, server};
use platform::domain::StoreError;
use platform::domain::accounts::{self, AccountError, AccountStore};
use platform::domain::clock::Clock;
use platform::domain::keys::{ApiKey, KeyHash};

#[tokio::test]
async fn key_works_until_rotated_and_the_new_one_until_revoked() {
    let srv = server().await;
    let first = srv.account("owner@example.com").await;
    let k1 = first.key.expose().to_owned();

    let r = send(&srv.base, get("/api/v1/runs", Some(&k1))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/runs");

    let now = srv.clock.now_ms();
    let second = accounts::rotate_key(&srv.store, &first.account_id, now)
        .await
        .unwrap();
    let k2 = second.key.expose().to_owned();
    assert_ne!(k1, k2);

    let old = send(&srv.base, get("/api/v1/runs", Some(&k1))).await;
    assert_eq!(old.status, 401, "old key must stop working: {}", old.body);
    assert_eq!(old.code(), "unauthorized");
    assert_eq!(old.header("www-authenticate"), Some("Bearer"));
    assert_documented(&old, "get", "/runs");
    assert_eq!(
        send(&srv.base, get("/api/v1/runs", Some(&k2))).await.status,
        200
    );

    accounts::revoke_key(&srv.store, &first.account_id, now)
        .await
        .unwrap();
    let revoked = send(&srv.base, get("/api/v1/runs", Some(&k2))).await;
    assert_eq!(revoked.status, 401);
    assert_documented(&revoked, "get", "/runs");

    // Revoking again has nothing to revoke.
    let again = accounts::revoke_key(&srv.store, &first.account_id, now).await;
    assert!(
        matches!(again, Err(AccountError::Store(StoreError::NotFound(_)))),
        "{again:?}"
    );

    // A rotation after a revocation issues a working key again.
    let third = accounts::rotate_key(&srv.store, &first.account_id, now)
        .await
        .unwrap();
    assert_eq!(
        send(&srv.base, get("/api/v1/runs", Some(third.key.expose())))
            .await
            .status,
        200
    );

    // History: three keys, newest first, only the newest active; prefixes only.
    let history = srv.store.key_history(&first.account_id).await.unwrap();
    assert_eq!(history.len(), 3, "{history:?}");
    assert_eq!(
        history.iter().filter(|k| k.revoked_at_ms.is_none()).count(),
        1
    );
    assert!(
        history
            .iter()
            .any(|k| k.prefix == third.key.visible_prefix())
    );
}

#[tokio::test]
async fn missing_malformed_and_unknown_keys_get_401() {
    let srv = server().await;
    let unknown = ApiKey::generate();
    for (label, key) in [
        ("unknown", Some(unknown.expose().to_owned())),
        ("junk", Some("not-a-key".to_owned())),
        ("none", None),
    ] {
        let r = send(&srv.base, get("/api/v1/runs", key.as_deref())).await;
        assert_eq!(r.status, 401, "{label}: {}", r.body);
        assert_documented(&r, "get", "/runs");
    }

    // A non-Bearer scheme is refused too.
    let raw = raw_get(&srv.base, "/api/v1/runs", "Basic dXNlcjpwYXNz").await;
    assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
}

async fn raw_get(base: &str, path: &str, authorization: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn keys_are_stored_only_as_hashes_and_emails_are_unique() {
    let srv = server().await;
    let issued = srv.account("Dup@Example.com").await;

    // The store holds the hash under its key item and nothing holding the secret.
    let item = srv
        .store
        .client()
        .get_item()
        .table_name(srv.store.table())
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!(
                "key#{}",
                issued.key.hash().as_str()
            )),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("key".into()),
        )
        .send()
        .await
        .unwrap();
    let item = item.item().expect("key item");
    let dump = format!("{item:?}");
    assert!(!dump.contains(issued.key.expose()), "secret stored: {dump}");
    assert!(dump.contains(&issued.key.visible_prefix()));

    // Same address, different case: refused by the conditional write.
    let dup = accounts::create_account(&srv.store, "dup@example.com", None, 0).await;
    assert!(
        matches!(dup, Err(AccountError::Store(StoreError::Conflict(_)))),
        "{dup:?}"
    );
    let bad = accounts::create_account(&srv.store, "not an email", None, 0).await;
    assert!(matches!(bad, Err(AccountError::InvalidEmail(_))), "{bad:?}");

    let unknown = accounts::rotate_key(&srv.store, "acc_missing", 0).await;
    assert!(
        matches!(unknown, Err(AccountError::Store(StoreError::NotFound(_)))),
        "{unknown:?}"
    );
    assert!(
        srv.store
            .authenticate(&KeyHash::of("cpk_nothing"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn concurrent_rotations_leave_exactly_one_active_key() {
    let srv = server().await;
    let acct = srv.account("race@example.com").await;
    let now = srv.clock.now_ms();
    let results = futures_join(&srv, &acct.account_id, now).await;
    let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert!(!winners.is_empty(), "{results:?}");
    for r in &results {
        if let Err(e) = r {
            assert!(
                matches!(e, AccountError::Store(StoreError::Conflict(_))),
                "losers lose on the condition: {e:?}"
            );
        }
    }
    let mut working = 0;
    for w in &winners {
        if srv
            .store
            .authenticate(&w.key.hash())
            .await
            .unwrap()
            .is_some()
        {
            working += 1;
        }
    }
    assert_eq!(working, 1, "exactly one issued key may work");
    assert!(
        srv.store
            .authenticate(&acct.key.hash())
            .await
            .unwrap()
            .is_none()
    );
    let active = srv
        .store
        .key_history(&acct.account_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|k| k.revoked_at_ms.is_none())
        .count();
    assert_eq!(active, 1);
}

async fn futures_join(
    srv: &common::Server,
    account: &str,
    now: i64,
) -> Vec<Result<platform::domain::accounts::IssuedKey, AccountError>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let store = srv.store.clone();
        let account = account.to_owned();
        set.spawn(async move { accounts::rotate_key(&store, &account, now).await });
    }
    set.join_all().await
}
