//! Standard Webhooks 1.0 (signing, verification, the retry schedule) and the delivery outbox's
//! messages.
//!
//! Every message a trigger sends (a `trigger.event`, or an account event such as
//! `trigger.disabled`) is first written to the outbox, then delivered by the jobs function.
//! Writing first means a crash between detecting an item and sending it loses nothing; message ids
//! are derived from what the message is about (trigger + item, or event + trigger), so a repeated
//! write is a no-op and a receiver can deduplicate on `webhook-id`.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::StoreError;

/// Delay before each attempt, in seconds (Standard Webhooks' schedule): the first attempt is
/// immediate, the tenth and last about 3 days and 4 hours after the first.
pub const SCHEDULE_S: [i64; 10] = [
    0, 5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400,
];

/// A `Retry-After` longer than this is cut to it, so a receiver cannot park a message forever.
pub const MAX_RETRY_AFTER_S: i64 = 86_400;

/// How long a claimed message is hidden from other runs while it is being delivered.
pub const CLAIM_LEASE_MS: i64 = 60_000;

/// Finished messages stay readable for a week, then the store's TTL removes them.
pub const RETENTION_S: i64 = 7 * 86_400;

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
    format!("msg_{}", crate::ids::hex(&d[..12]))
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

impl Attempt {
    /// How message `msg` ends after this attempt: delivered, retried on the schedule (a
    /// `Retry-After` can only push the retry later), or failed for good.
    pub fn outcome(&self, msg: &Message, now_ms: i64) -> Finish {
        match self {
            Attempt::Success(status) => Finish::Delivered { status: *status },
            Attempt::Gone => Finish::Failed {
                error: "the endpoint answered 410 Gone".into(),
            },
            Attempt::Failure {
                error,
                retry_after_s,
            } => match next_attempt_at(msg.attempts + 1, now_ms, *retry_after_s) {
                Some(at_ms) => Finish::Retry {
                    at_ms,
                    error: error.clone(),
                },
                None => Finish::Failed {
                    error: format!("gave up after {} attempts: {error}", msg.attempts + 1),
                },
            },
        }
    }
}

/// A `Retry-After` value in seconds (delta-seconds or an HTTP date), if sensible, at most
/// [`MAX_RETRY_AFTER_S`].
pub fn retry_after(value: &str, now_ms: i64) -> Option<i64> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<i64>() {
        return Some(secs.clamp(0, MAX_RETRY_AFTER_S));
    }
    let at = jiff::fmt::rfc2822::parse(v).ok()?.timestamp();
    Some(((at.as_millisecond() - now_ms) / 1000).clamp(0, MAX_RETRY_AFTER_S))
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

/// The delivery outbox. Pending messages sit in a due index sorted by their next attempt; a
/// claim moves that time by [`CLAIM_LEASE_MS`] with a conditional write, so two overlapping runs
/// never send the same attempt, and a finished message leaves the index.
#[async_trait]
pub trait OutboxStore: Send + Sync {
    /// Writes `msg`, due now. `false` if a message with its id exists already (the same item or
    /// event was enqueued before), which is not an error.
    async fn enqueue(&self, msg: &NewMessage, now_ms: i64) -> Result<bool, StoreError>;

    /// Claims up to `limit` messages due at `now_ms`.
    async fn claim_due_messages(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError>;

    /// Records the end of an attempt (which releases the claim).
    async fn finish(&self, msg: &Message, outcome: &Finish, now_ms: i64) -> Result<(), StoreError>;
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
        assert_eq!(retry_after("30", 0), Some(30));
        assert_eq!(
            retry_after("Thu, 01 Jan 1970 00:02:00 GMT", 60_000),
            Some(60)
        );
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
