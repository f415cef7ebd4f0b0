//! `Idempotency-Key` handling for checkout POSTs: the first request with a key runs, later ones
//! with the same key and the same request get the stored answer, a different request with the
//! same key is a conflict, and one that arrives while the first is still running is told so.
//!
//! The decisions are pure functions over a [`Record`]; the glue keeps one record per key in a
//! Durable Object (one instance worldwide per key, so two racing requests cannot both run).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long an answer is replayed (ACP and UCP both ask for at least 24 h).
pub const KEEP_MS: u64 = 24 * 3600 * 1000;
/// A request still "running" after this long is taken as lost (the Worker was evicted
/// mid-request); a retry may then run again.
pub const IN_FLIGHT_MS: u64 = 60_000;

/// A stored answer: status, the headers worth replaying and the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What is kept per key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub fingerprint: String,
    pub started_ms: u64,
    pub reply: Option<StoredReply>,
}

/// What to do with a request that carries a key.
// Externally tagged (serde's default): an internally tagged enum would link serde's buffering
// deserializer into the Worker for this one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Begin {
    /// Run it (a new record was written).
    Proceed,
    /// Answer with this, adding `Idempotent-Replayed: true`.
    Replay { reply: StoredReply },
    /// The same key is being processed right now.
    InFlight,
    /// The key was used for a different request.
    Conflict,
}

/// A request's identity for key reuse: method, path, protocol version and body.
pub fn fingerprint(method: &str, path: &str, version: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [method.as_bytes(), path.as_bytes(), version.as_bytes(), body] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Decides on a request; returns the record to store when it changes.
pub fn begin(existing: Option<&Record>, fingerprint: &str, now_ms: u64) -> (Begin, Option<Record>) {
    let fresh = || Record {
        fingerprint: fingerprint.to_string(),
        started_ms: now_ms,
        reply: None,
    };
    match existing {
        Some(r) if now_ms.saturating_sub(r.started_ms) < KEEP_MS => {
            if r.fingerprint != fingerprint {
                return (Begin::Conflict, None);
            }
            match &r.reply {
                Some(reply) => (
                    Begin::Replay {
                        reply: reply.clone(),
                    },
                    None,
                ),
                None if now_ms.saturating_sub(r.started_ms) < IN_FLIGHT_MS => {
                    (Begin::InFlight, None)
                }
                None => (Begin::Proceed, Some(fresh())),
            }
        }
        _ => (Begin::Proceed, Some(fresh())),
    }
}

/// Records the answer of a request that ran. 5xx answers are never stored (the caller drops
/// the record instead), so a retry after an outage runs again.
pub fn finish(existing: Option<&Record>, fingerprint: &str, reply: StoredReply) -> Option<Record> {
    match existing {
        Some(r) if r.fingerprint == fingerprint && reply.status < 500 => Some(Record {
            fingerprint: r.fingerprint.clone(),
            started_ms: r.started_ms,
            reply: Some(reply),
        }),
        _ => None,
    }
}

/// Checks a client's key: 1..=255 visible ASCII characters.
pub fn valid_key(key: &str) -> bool {
    (1..=crate::stripe::MAX_IDEMPOTENCY_KEY).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16) -> StoredReply {
        StoredReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"id\":\"cs_1\"}".into(),
        }
    }

    #[test]
    fn first_runs_then_replays_then_conflicts() {
        let fp = fingerprint("POST", "/x", "v1", b"{}");
        let (b, rec) = begin(None, &fp, 1_000);
        assert_eq!(b, Begin::Proceed);
        let rec = rec.unwrap();
        assert_eq!(begin(Some(&rec), &fp, 2_000).0, Begin::InFlight);
        let done = finish(Some(&rec), &fp, reply(201)).unwrap();
        assert_eq!(
            begin(Some(&done), &fp, 3_000).0,
            Begin::Replay { reply: reply(201) }
        );
        let other = fingerprint("POST", "/x", "v1", b"{\"a\":1}");
        assert_eq!(begin(Some(&done), &other, 3_000).0, Begin::Conflict);
        assert_eq!(
            begin(Some(&done), &fp, 1_000 + KEEP_MS).0,
            Begin::Proceed,
            "kept 24 h"
        );
    }

    #[test]
    fn lost_requests_and_server_errors_are_not_replayed() {
        let fp = fingerprint("POST", "/x", "", b"");
        let rec = begin(None, &fp, 0).1.unwrap();
        assert_eq!(begin(Some(&rec), &fp, IN_FLIGHT_MS).0, Begin::Proceed);
        assert_eq!(finish(Some(&rec), &fp, reply(503)), None);
        assert_eq!(finish(None, &fp, reply(200)), None);
    }

    #[test]
    fn fingerprints_separate_their_parts() {
        assert_ne!(
            fingerprint("POST", "/ab", "", b"c"),
            fingerprint("POST", "/a", "", b"bc")
        );
        assert_ne!(
            fingerprint("POST", "/a", "2026-01-30", b"{}"),
            fingerprint("POST", "/a", "2025-09-29", b"{}")
        );
    }

    #[test]
    fn keys_are_bounded_visible_ascii() {
        assert!(valid_key("order-2026-11-22-1"));
        assert!(!valid_key(""));
        assert!(!valid_key(&"k".repeat(256)));
        assert!(!valid_key("has space"));
        assert!(!valid_key("ünïcode"));
    }
}
