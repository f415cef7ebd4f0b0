//! Standard Webhooks 1.0 (signing, verification) and the delivery outbox.
//!
//! Every message a trigger sends (a `trigger.event`, or an account event such as
//! `trigger.disabled`) is first written to the outbox in DynamoDB, then delivered by the jobs
//! function. Writing first means a crash between detecting an item and sending it loses nothing;
//! message ids are derived from what the message is about (trigger + item, or event + trigger),
//! so a repeated write is a no-op and a receiver can deduplicate on `webhook-id`.
//!
//! Due messages are found without a Scan: pending messages carry `gsi1pk = due#msg#<shard>` and
//! `gsi1sk = <next attempt, ms, 13 digits>#<msg id>`; a finished message drops both attributes
//! and leaves the (sparse) index.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::outbound::{Outbound, OutboundError};
use crate::store::{
    DynamoStore, Item, StoreError, account_pk, get_n, get_s, n, opt_s, s, unavailable, write_error,
};
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE};

/// Delay before each attempt, in seconds (Standard Webhooks' schedule): the first attempt is
/// immediate, the tenth and last about 3 days and 4 hours after the first.
pub const SCHEDULE_S: [i64; 10] = [
    0, 5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400,
];

/// Per-attempt timeout of a delivery.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(15);

/// A `Retry-After` longer than this is cut to it, so a receiver cannot park a message forever.
pub const MAX_RETRY_AFTER_S: i64 = 86_400;

/// Shards of the due-message index partition, so one hot partition does not carry every due
/// message of the platform.
pub const DUE_SHARDS: u8 = 4;

/// How long a claimed message is hidden from other runs while it is being delivered.
const CLAIM_LEASE_MS: i64 = 60_000;

/// Finished messages stay readable for a week, then DynamoDB's TTL removes them.
const RETENTION_S: i64 = 7 * 86_400;

/// Secrets carry 32 random bytes (the spec allows 24–64).
const SECRET_BYTES: usize = 32;

pub const SECRET_PREFIX: &str = "whsec_";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
    #[error("the message id must not contain '.'")]
    BadId,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
    #[error("a webhook header is missing or malformed")]
    BadHeaders,
    #[error("the timestamp is outside the tolerance")]
    Stale,
    #[error("no signature matches")]
    NoMatch,
}

/// A new `whsec_` secret of [`SECRET_BYTES`] random bytes.
pub fn new_secret() -> String {
    let mut key = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", B64.encode(key))
}

fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let raw = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    B64.decode(raw).ok().filter(|k| !k.is_empty())
}

fn mac(key: &[u8], id: &str, ts: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail for a decoded secret.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    m.update(id.as_bytes());
    m.update(b".");
    m.update(ts.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The `webhook-signature` value (`v1,<base64>`) of `body` sent as message `id` at `ts` (unix
/// seconds).
pub fn sign(secret: &str, id: &str, ts: i64, body: &[u8]) -> Result<String, SignError> {
    if id.contains('.') {
        return Err(SignError::BadId);
    }
    let key = secret_key(secret).ok_or(SignError::BadSecret)?;
    Ok(format!(
        "v1,{}",
        B64.encode(mac(&key, id, ts, body).finalize().into_bytes())
    ))
}

/// Verifies a delivery the way a receiver should: timestamp within `tolerance_s` of `now_s`, and
/// one of the space-separated `v1,` signatures equal (constant-time) to ours.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now_s: i64,
    tolerance_s: i64,
) -> Result<(), VerifyError> {
    let key = secret_key(secret).ok_or(VerifyError::BadSecret)?;
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| VerifyError::BadHeaders)?;
    if id.is_empty() || id.contains('.') {
        return Err(VerifyError::BadHeaders);
    }
    if (now_s - ts).abs() > tolerance_s {
        return Err(VerifyError::Stale);
    }
    for sig in signatures.split(' ') {
        let Some(b64) = sig.strip_prefix("v1,") else {
            continue;
        };
        let Ok(given) = B64.decode(b64) else { continue };
        // `verify_slice` compares in constant time.
        if mac(&key, id, ts, body).verify_slice(&given).is_ok() {
            return Ok(());
        }
    }
    Err(VerifyError::NoMatch)
}

/// A message id derived from what it is about, so writing it twice is one message.
pub fn message_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let d = h.finalize();
    let hex: String = d[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("msg_{hex}")
}

fn shard_of(id: &str) -> u8 {
    Sha256::digest(id.as_bytes())[0] % DUE_SHARDS
}

fn due_pk(shard: u8) -> String {
    format!("due#msg#{shard}")
}

fn due_sk(at_ms: i64, id: &str) -> String {
    format!("{:013}#{id}", at_ms.max(0))
}

fn msg_sk(id: &str) -> String {
    format!("msg#{id}")
}

/// The body of a Standard Webhooks message: `{"type","timestamp","data"}`.
pub fn envelope(kind: &str, now_ms: i64, data: Value) -> Value {
    json!({"type": kind, "timestamp": crate::clock::rfc3339(now_ms), "data": data})
}

/// A message to put in the outbox.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub id: String,
    pub account_id: String,
    pub trigger_id: String,
    /// `trigger.event`, `trigger.disabled`, `connection.expired`, …
    pub kind: String,
    /// The exact bytes every attempt sends and signs.
    pub body: String,
}

/// Writes `msg` to the outbox, due now. Returns `false` if a message with this id exists
/// already (the same item or event was enqueued before), which is not an error.
pub async fn enqueue(
    store: &DynamoStore,
    msg: &NewMessage,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let item = HashMap::from([
        (PK.to_owned(), s(account_pk(&msg.account_id))),
        (SK.to_owned(), s(msg_sk(&msg.id))),
        ("msg_id".to_owned(), s(&msg.id)),
        ("account_id".to_owned(), s(&msg.account_id)),
        ("trigger_id".to_owned(), s(&msg.trigger_id)),
        ("type".to_owned(), s(&msg.kind)),
        ("body".to_owned(), s(&msg.body)),
        ("attempts".to_owned(), n(0)),
        ("status".to_owned(), s("pending")),
        ("created_at_ms".to_owned(), n(now_ms)),
        ("next_attempt_ms".to_owned(), n(now_ms)),
        (GSI1_PK.to_owned(), s(due_pk(shard_of(&msg.id)))),
        (GSI1_SK.to_owned(), s(due_sk(now_ms, &msg.id))),
        (
            TTL_ATTRIBUTE.to_owned(),
            n(now_ms / 1000 + RETENTION_S + SCHEDULE_S.iter().sum::<i64>()),
        ),
    ]);
    let res = store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(#pk)")
        .expression_attribute_names("#pk", PK)
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) => match write_error(e, "message exists") {
            StoreError::Conflict(_) => Ok(false),
            other => Err(other),
        },
    }
}

/// A claimed, due message.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: String,
    pub account_id: String,
    pub trigger_id: String,
    pub kind: String,
    pub body: String,
    /// Attempts made before this one.
    pub attempts: usize,
}

fn message_from_item(item: &Item) -> Result<Message, StoreError> {
    Ok(Message {
        id: get_s(item, "msg_id")?,
        account_id: get_s(item, "account_id")?,
        trigger_id: get_s(item, "trigger_id")?,
        kind: get_s(item, "type")?,
        body: get_s(item, "body")?,
        attempts: get_n(item, "attempts")?,
    })
}

/// Claims up to `limit` messages due at `now_ms`. A claim moves the message `CLAIM_LEASE_MS`
/// into the future with a conditional write, so two overlapping runs never send the same
/// attempt; a run that dies mid-delivery leaves the message to be retried after the lease.
pub async fn claim_due(
    store: &DynamoStore,
    now_ms: i64,
    limit: usize,
) -> Result<Vec<Message>, StoreError> {
    let mut out = Vec::new();
    for shard in 0..DUE_SHARDS {
        if out.len() >= limit {
            break;
        }
        let page = store
            .client()
            .query()
            .table_name(store.table())
            .index_name(GSI1)
            .key_condition_expression("#g = :due AND #gs <= :now")
            .expression_attribute_names("#g", GSI1_PK)
            .expression_attribute_names("#gs", GSI1_SK)
            .expression_attribute_values(":due", s(due_pk(shard)))
            // `~` sorts after `#` and every digit: everything due up to and including now.
            .expression_attribute_values(":now", s(format!("{:013}~", now_ms.max(0))))
            .limit(i32::try_from(limit - out.len()).unwrap_or(100))
            .send()
            .await
            .map_err(unavailable)?;
        for item in page.items() {
            let (Some(pk), Some(sk), Some(seen)) = (
                item.get(PK).cloned(),
                item.get(SK).cloned(),
                opt_s(item, GSI1_SK),
            ) else {
                continue;
            };
            let id = opt_s(item, "msg_id").unwrap_or_default();
            let res = store
                .client()
                .update_item()
                .table_name(store.table())
                .key(PK, pk)
                .key(SK, sk)
                .update_expression("SET #gs = :lease")
                .condition_expression("#gs = :seen AND #st = :pending")
                .expression_attribute_names("#gs", GSI1_SK)
                .expression_attribute_names("#st", "status")
                .expression_attribute_values(":seen", s(seen))
                .expression_attribute_values(":pending", s("pending"))
                .expression_attribute_values(":lease", s(due_sk(now_ms + CLAIM_LEASE_MS, &id)))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match res {
                Ok(r) => {
                    if let Some(attrs) = r.attributes() {
                        match message_from_item(attrs) {
                            Ok(m) => out.push(m),
                            Err(e) => tracing::error!(error = %e, "malformed outbox message"),
                        }
                    }
                }
                Err(e) => match write_error(e, "claimed elsewhere") {
                    StoreError::Conflict(_) => {}
                    other => return Err(other),
                },
            }
        }
    }
    Ok(out)
}

/// How one attempt ended, as stored on the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Delivered {
        status: u16,
    },
    /// Try again at `at_ms`.
    Retry {
        at_ms: i64,
        error: String,
    },
    /// No more attempts (schedule exhausted, 410, trigger gone or disabled).
    Failed {
        error: String,
    },
    Cancelled {
        reason: String,
    },
}

/// Records the end of an attempt on the message (the claim is released by this write).
pub async fn finish(
    store: &DynamoStore,
    msg: &Message,
    outcome: &Finish,
    now_ms: i64,
) -> Result<(), StoreError> {
    let attempts = msg.attempts + 1;
    let mut u = store
        .client()
        .update_item()
        .table_name(store.table())
        .key(PK, s(account_pk(&msg.account_id)))
        .key(SK, s(msg_sk(&msg.id)))
        .expression_attribute_values(":attempts", n(attempts))
        .expression_attribute_values(":at", n(now_ms));
    let done_ttl = n(now_ms / 1000 + RETENTION_S);
    u = match outcome {
        Finish::Delivered { status } => u
            .update_expression(
                "SET #st = :s, attempts = :attempts, last_attempt_ms = :at, last_status = :code, \
                 #ttl = :ttl REMOVE #g, #gs",
            )
            .expression_attribute_values(":s", s("delivered"))
            .expression_attribute_values(":code", n(*status))
            .expression_attribute_values(":ttl", done_ttl),
        Finish::Retry { at_ms, error } => u
            .update_expression(
                "SET attempts = :attempts, last_attempt_ms = :at, last_error = :err, \
                 next_attempt_ms = :next, #gs = :due",
            )
            .expression_attribute_values(":err", s(error))
            .expression_attribute_values(":next", n(*at_ms))
            .expression_attribute_values(":due", s(due_sk(*at_ms, &msg.id))),
        Finish::Failed { error } | Finish::Cancelled { reason: error } => u
            .update_expression(
                "SET #st = :s, attempts = :attempts, last_attempt_ms = :at, last_error = :err, \
                 #ttl = :ttl REMOVE #g, #gs",
            )
            .expression_attribute_values(
                ":s",
                s(if matches!(outcome, Finish::Failed { .. }) {
                    "failed"
                } else {
                    "cancelled"
                }),
            )
            .expression_attribute_values(":err", s(error))
            .expression_attribute_values(":ttl", done_ttl),
    };
    if !matches!(outcome, Finish::Retry { .. }) {
        u = u
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#g", GSI1_PK)
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE);
    }
    u.expression_attribute_names("#gs", GSI1_SK)
        .send()
        .await
        .map_err(unavailable)?;
    Ok(())
}

/// What a delivery attempt got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    Success(u16),
    /// The receiver said the endpoint is gone for good.
    Gone,
    Failure {
        error: String,
        retry_after_s: Option<i64>,
    },
}

/// `Retry-After` in seconds (delta-seconds or an HTTP date), if given and sensible.
fn retry_after(headers: &http::HeaderMap, now_ms: i64) -> Option<i64> {
    let v = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<i64>() {
        return Some(secs.clamp(0, MAX_RETRY_AFTER_S));
    }
    let at = jiff::fmt::rfc2822::parse(v).ok()?.timestamp();
    Some(((at.as_millisecond() - now_ms) / 1000).clamp(0, MAX_RETRY_AFTER_S))
}

/// Sends one attempt of `msg` to `url`, signed with `secret`, stamped `now_ms`.
pub async fn attempt(
    outbound: &Outbound,
    url: &str,
    secret: &str,
    msg: &Message,
    now_ms: i64,
) -> Attempt {
    let ts = now_ms.div_euclid(1000);
    let sig = match sign(secret, &msg.id, ts, msg.body.as_bytes()) {
        Ok(sig) => sig,
        Err(e) => {
            return Attempt::Failure {
                error: format!("cannot sign: {e}"),
                retry_after_s: None,
            };
        }
    };
    let req = outbound
        .client()
        .post(url)
        .timeout(DELIVERY_TIMEOUT)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::USER_AGENT, "companion-platform-webhooks/1")
        .header("webhook-id", &msg.id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", sig)
        .body(msg.body.clone());
    match outbound.send(req).await {
        Ok(resp) if (200..300).contains(&resp.status) => Attempt::Success(resp.status),
        Ok(resp) if resp.status == 410 => Attempt::Gone,
        Ok(resp) => Attempt::Failure {
            error: format!("the endpoint answered HTTP {}", resp.status),
            retry_after_s: matches!(resp.status, 429 | 502 | 503 | 504)
                .then(|| retry_after(&resp.headers, now_ms))
                .flatten(),
        },
        Err(e) => Attempt::Failure {
            error: match e {
                OutboundError::Refused { reason, .. } => {
                    format!("the destination was refused: {reason}")
                }
                OutboundError::Timeout => format!(
                    "the endpoint did not answer within {} s",
                    DELIVERY_TIMEOUT.as_secs()
                ),
                other => other.to_string(),
            },
            retry_after_s: None,
        },
    }
}

/// When the attempt after `attempts_made` failed ones is due, or `None` if the schedule is
/// exhausted. A `Retry-After` can only push it later.
pub fn next_attempt_at(
    attempts_made: usize,
    now_ms: i64,
    retry_after_s: Option<i64>,
) -> Option<i64> {
    let delay = *SCHEDULE_S.get(attempts_made)?;
    Some(now_ms + 1000 * delay.max(retry_after_s.unwrap_or(0)))
}

/// Number of messages of an account in the outbox by status (tests and diagnostics; a Query on
/// the account's partition).
pub async fn message_statuses(
    store: &DynamoStore,
    account_id: &str,
) -> Result<Vec<(String, String, usize)>, StoreError> {
    let mut out = Vec::new();
    let mut start: Option<Item> = None;
    loop {
        let page = store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :m)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":m", AttributeValue::S("msg#".into()))
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(unavailable)?;
        for item in page.items() {
            out.push((
                get_s(item, "msg_id")?,
                get_s(item, "status")?,
                get_n(item, "attempts")?,
            ));
        }
        match page.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const BODY: &[u8] = br#"{"test": 2432232314}"#;

    #[test]
    fn signature_matches_the_standard_webhooks_test_vector() {
        assert_eq!(
            sign(SECRET, ID, 1_614_265_330, BODY).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(sign(SECRET, "a.b", 1, BODY), Err(SignError::BadId));
        assert_eq!(sign("whsec_***", ID, 1, BODY), Err(SignError::BadSecret));
    }

    #[test]
    fn verification_accepts_ours_and_rejects_tampering_and_stale_timestamps() {
        let sig = sign(SECRET, ID, 1_614_265_330, BODY).unwrap();
        let now = 1_614_265_330 + 10;
        assert_eq!(
            verify(SECRET, ID, "1614265330", &sig, BODY, now, 300),
            Ok(())
        );
        // Rotation: several signatures, one of them valid.
        let both = format!("v1,AAAA {sig}");
        assert_eq!(
            verify(SECRET, ID, "1614265330", &both, BODY, now, 300),
            Ok(())
        );
        assert_eq!(
            verify(SECRET, ID, "1614265330", &sig, b"{}", now, 300),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            verify(SECRET, ID, "1614265331", &sig, BODY, now, 300),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            verify(SECRET, ID, "1614265330", &sig, BODY, now + 1_000, 300),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify(SECRET, ID, "soon", &sig, BODY, now, 300),
            Err(VerifyError::BadHeaders)
        );
    }

    #[test]
    fn secrets_are_whsec_with_32_random_bytes() {
        let a = new_secret();
        let b = new_secret();
        assert_ne!(a, b);
        assert_eq!(secret_key(&a).map(|k| k.len()), Some(SECRET_BYTES));
        assert!(a.starts_with("whsec_"));
    }

    #[test]
    fn retries_follow_the_schedule_and_retry_after_only_delays() {
        let t0 = 1_000_000;
        assert_eq!(next_attempt_at(1, t0, None), Some(t0 + 5_000));
        assert_eq!(next_attempt_at(2, t0, None), Some(t0 + 300_000));
        assert_eq!(next_attempt_at(1, t0, Some(120)), Some(t0 + 120_000));
        assert_eq!(next_attempt_at(2, t0, Some(1)), Some(t0 + 300_000));
        assert_eq!(next_attempt_at(9, t0, None), Some(t0 + 86_400_000));
        assert_eq!(next_attempt_at(10, t0, None), None);
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("30"),
        );
        assert_eq!(retry_after(&h, 0), Some(30));
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("Thu, 01 Jan 1970 00:02:00 GMT"),
        );
        assert_eq!(retry_after(&h, 60_000), Some(60));
    }

    #[test]
    fn message_ids_are_stable_and_dot_free() {
        let a = message_id(&["trg_1", "item-7"]);
        assert_eq!(a, message_id(&["trg_1", "item-7"]));
        assert_ne!(a, message_id(&["trg_1", "item-8"]));
        assert_ne!(message_id(&["ab", "c"]), message_id(&["a", "bc"]));
        assert!(a.starts_with("msg_") && !a.contains('.'));
    }
}
