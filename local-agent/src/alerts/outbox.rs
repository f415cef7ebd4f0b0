//! The durable outbox: every alert is a row in `<data dir>/alerts.db` before anyone tries to send
//! it, so a crash, a restart or a receiver that is down loses nothing.
//!
//! Several processes share the file (the running agent and `local-agent alert test`). A sender
//! takes a row with a short lease before it sends, so two processes do not post the same alert at
//! the same time; a lease left by a killed process simply runs out and the row is sent again
//! (receivers drop the duplicate by its `Idempotency-Key`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::Rng;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::Notify;

use super::config::RetryPolicy;
use super::{
    AlertKind, AlertLog, AlertLogError, AlertSink, AlertView, Delivery, DeliveryState, NewAlert,
};
use crate::store::{self, Opened, StoreError};

/// File name of the outbox in the data directory.
pub const FILE_NAME: &str = "alerts.db";

/// Rows older than this are removed when the outbox opens (`GET /alerts` shows at most 720 h).
const KEEP_FOR_MS: i64 = 90 * 24 * 3600 * 1000;

/// A row past its retry window by more than this when a sender first sees it is marked failed
/// without an attempt: the agent was off, and a days-old alert would only confuse.
const STALE_GRACE_MS: i64 = 60 * 1000;

/// Longest title and message stored; longer ones are cut (receivers like ntfy cap at 4 KiB).
const MAX_TITLE_CHARS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 2000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS alerts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'disabled')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_status INTEGER,
    last_error TEXT,
    next_attempt_at_ms INTEGER,
    lease_until_ms INTEGER,
    delivered_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS alerts_due ON alerts (state, next_attempt_at_ms);
CREATE INDEX IF NOT EXISTS alerts_created ON alerts (created_at_ms);
";

/// Why the outbox failed.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error(transparent)]
    Open(#[from] StoreError),
    #[error("alert outbox {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("alert outbox {0}: a previous writer panicked")]
    Poisoned(PathBuf),
    #[error("alert outbox {path}: row {id} has an unknown kind or state {value:?}")]
    BadRow {
        path: PathBuf,
        id: String,
        value: String,
    },
}

/// A row taken for one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub id: String,
    pub kind: AlertKind,
    pub title: String,
    pub message: String,
    pub created_at_ms: i64,
    pub attempts: u32,
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver answered 2xx.
    Delivered { status: u16 },
    /// The receiver answered something else.
    Refused { status: u16 },
    /// No reply: connection, TLS or timeout. The text says which (never the full address).
    NoReply { error: String },
}

impl AttemptOutcome {
    pub fn status(&self) -> Option<u16> {
        match self {
            AttemptOutcome::Delivered { status } | AttemptOutcome::Refused { status } => {
                Some(*status)
            }
            AttemptOutcome::NoReply { .. } => None,
        }
    }
}

/// A stored alert with the delivery details `GET /alerts` leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRecord {
    pub view: AlertView,
    /// Why the last attempt failed (status line or transport error).
    pub last_error: Option<String>,
    /// When the next attempt is due (RFC 3339 UTC), while pending.
    pub next_attempt_at: Option<String>,
}

/// The outbox over one SQLite file. Also the agent's [`AlertSink`] and [`AlertLog`].
pub struct Outbox {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Alerts are stored `pending` (an address is configured) or `disabled` (none is).
    sending_enabled: bool,
    retry: RetryPolicy,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("path", &self.path)
            .field("sending_enabled", &self.sending_enabled)
            .finish_non_exhaustive()
    }
}

/// Milliseconds since the Unix epoch, wall clock (rows are shared across processes and restarts,
/// so a monotonic clock would not do).
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Delay before attempt `attempts + 1` after `attempts` failures: `base · 2^(attempts−1)`, capped,
/// times a random factor in [0.75, 1.25] so many agents behind one outage do not retry in step,
/// and kept within `[base, cap]`.
pub fn backoff_delay(attempts: u32, retry: &RetryPolicy, rng: &mut impl Rng) -> Duration {
    let exp = attempts.saturating_sub(1).min(40);
    let nominal = retry
        .base
        .saturating_mul(1_u32 << exp.min(31))
        .min(retry.cap);
    let jittered = nominal.mul_f64(rng.random_range(0.75..=1.25));
    jittered.clamp(retry.base, retry.cap.max(retry.base))
}

impl Outbox {
    /// Opens `<dir>/alerts.db`, creating the schema. `sending_enabled` decides whether new alerts
    /// are `pending` or `disabled`.
    pub fn open_in(
        dir: &Path,
        sending_enabled: bool,
        retry: RetryPolicy,
    ) -> Result<Self, OutboxError> {
        Self::open(&dir.join(FILE_NAME), sending_enabled, retry)
    }

    pub fn open(
        path: &Path,
        sending_enabled: bool,
        retry: RetryPolicy,
    ) -> Result<Self, OutboxError> {
        let (conn, opened) = store::open(path)?;
        if let Opened::Recovered { moved_to } = &opened {
            tracing::error!(
                moved_to = %moved_to.display(),
                "the alert outbox was damaged; it was moved aside and undelivered alerts in it will not be sent"
            );
        }
        let sql = |source| OutboxError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        // Alerts are rare and matter: pay one fsync per write so a power cut right after
        // `raise` cannot lose the alert (the store's default, NORMAL, may lose the last writes).
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        conn.execute(
            "DELETE FROM alerts WHERE created_at_ms < ?1 AND state != 'pending'",
            params![now_ms() - KEEP_FOR_MS],
        )
        .map_err(sql)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            sending_enabled,
            retry,
            wake: Arc::new(Notify::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// Notified whenever an alert is stored in this process: the sender waits on it.
    pub fn wake_handle(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Connection>, OutboxError> {
        self.conn
            .lock()
            .map_err(|_| OutboxError::Poisoned(self.path.clone()))
    }

    fn sql(&self, source: rusqlite::Error) -> OutboxError {
        OutboxError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Stores a new alert, due now (`lease_ms`: held by the caller for that long first). An id
    /// already stored is kept as it is: raising twice is not sending twice.
    pub fn insert(
        &self,
        alert: &NewAlert,
        now: i64,
        lease_ms: Option<i64>,
    ) -> Result<bool, OutboxError> {
        let state = if self.sending_enabled {
            "pending"
        } else {
            "disabled"
        };
        let next = self.sending_enabled.then_some(now);
        let lease = lease_ms.map(|l| now + l);
        let conn = self.lock()?;
        let n = conn
            .execute(
                "INSERT INTO alerts (id, kind, title, message, created_at_ms, state,
                                     next_attempt_at_ms, lease_until_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (id) DO NOTHING",
                params![
                    alert.id,
                    alert.kind.as_str(),
                    truncate(&alert.title, MAX_TITLE_CHARS),
                    truncate(&alert.message, MAX_MESSAGE_CHARS),
                    now,
                    state,
                    next,
                    lease
                ],
            )
            .map_err(|e| self.sql(e))?;
        drop(conn);
        if n > 0 && self.sending_enabled {
            self.wake.notify_one();
        }
        Ok(n > 0)
    }

    /// Takes the oldest due row for `lease_ms`, or `None`. Rows whose retry window ran out long
    /// ago are marked failed on the way.
    pub fn claim_due(&self, now: i64, lease_ms: i64) -> Result<Option<Claimed>, OutboxError> {
        let window = self.retry.window.as_millis() as i64;
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.sql(e))?;
        let expired = tx
            .execute(
                "UPDATE alerts SET state = 'failed', next_attempt_at_ms = NULL,
                        lease_until_ms = NULL,
                        last_error = COALESCE(last_error || '; ', '') ||
                                     'retry window ended while the agent was not running'
                 WHERE state = 'pending' AND created_at_ms + ?1 + ?2 < ?3
                   AND (lease_until_ms IS NULL OR lease_until_ms <= ?3)",
                params![window, STALE_GRACE_MS, now],
            )
            .map_err(|e| self.sql(e))?;
        if expired > 0 {
            tracing::warn!(
                count = expired,
                "alerts outlived their retry window while nothing could send them; marked failed"
            );
        }
        let row = tx
            .query_row(
                "SELECT id, kind, title, message, created_at_ms, attempts FROM alerts
                 WHERE state = 'pending' AND next_attempt_at_ms <= ?1
                   AND (lease_until_ms IS NULL OR lease_until_ms <= ?1)
                 ORDER BY next_attempt_at_ms, created_at_ms LIMIT 1",
                params![now],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, u32>(5)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((id, kind, title, message, created_at_ms, attempts)) = row else {
            tx.commit().map_err(|e| self.sql(e))?;
            return Ok(None);
        };
        tx.execute(
            "UPDATE alerts SET lease_until_ms = ?2 WHERE id = ?1",
            params![id, now + lease_ms],
        )
        .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        let kind = AlertKind::parse(&kind).ok_or_else(|| OutboxError::BadRow {
            path: self.path.clone(),
            id: id.clone(),
            value: kind.clone(),
        })?;
        Ok(Some(Claimed {
            id,
            kind,
            title,
            message,
            created_at_ms,
            attempts,
        }))
    }

    /// Stores a new alert already leased to the caller for an immediate attempt (the CLI's
    /// `alert test`), so a running agent leaves it alone meanwhile. `None` when sending is
    /// disabled (the row is stored as `disabled`) or the id was already stored.
    pub fn insert_for_attempt(
        &self,
        alert: &NewAlert,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Claimed>, OutboxError> {
        let inserted = self.insert(alert, now, Some(lease_ms))?;
        Ok((inserted && self.sending_enabled).then(|| Claimed {
            id: alert.id.clone(),
            kind: alert.kind,
            title: truncate(&alert.title, MAX_TITLE_CHARS),
            message: truncate(&alert.message, MAX_MESSAGE_CHARS),
            created_at_ms: now,
            attempts: 0,
        }))
    }

    /// Records an attempt on a claimed row and schedules the next one (or gives up). Returns the
    /// row's new state.
    pub fn record_attempt(
        &self,
        claimed: &Claimed,
        outcome: &AttemptOutcome,
        now: i64,
    ) -> Result<DeliveryState, OutboxError> {
        let attempts = claimed.attempts.saturating_add(1);
        let deadline = claimed.created_at_ms + self.retry.window.as_millis() as i64;
        let (state, next, delivered, error) = match outcome {
            AttemptOutcome::Delivered { .. } => (DeliveryState::Delivered, None, Some(now), None),
            other => {
                let error = match other {
                    AttemptOutcome::Refused { status } => {
                        let reason = http::StatusCode::from_u16(*status)
                            .ok()
                            .and_then(|s| s.canonical_reason())
                            .unwrap_or("");
                        format!("receiver answered {status} {reason}")
                            .trim()
                            .to_string()
                    }
                    AttemptOutcome::NoReply { error } => error.clone(),
                    AttemptOutcome::Delivered { .. } => String::new(),
                };
                if now >= deadline {
                    (DeliveryState::Failed, None, None, Some(error))
                } else {
                    let delay = backoff_delay(attempts, &self.retry, &mut rand::rng());
                    let next = (now + delay.as_millis() as i64).min(deadline);
                    (DeliveryState::Pending, Some(next), None, Some(error))
                }
            }
        };
        let state_str = match state {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
            DeliveryState::Disabled => "disabled",
        };
        let conn = self.lock()?;
        // `state = 'pending'` keeps a late writer from undoing another process's delivery.
        conn.execute(
            "UPDATE alerts SET state = ?2, attempts = attempts + 1, last_status = ?3,
                    last_error = ?4, next_attempt_at_ms = ?5, delivered_at_ms = ?6,
                    lease_until_ms = NULL
             WHERE id = ?1 AND state = 'pending'",
            params![
                claimed.id,
                state_str,
                outcome.status(),
                error,
                next,
                delivered
            ],
        )
        .map_err(|e| self.sql(e))?;
        Ok(state)
    }

    /// Gives a claimed row back without an attempt (shutdown in the middle of a send).
    pub fn release(&self, id: &str) -> Result<(), OutboxError> {
        let conn = self.lock()?;
        conn.execute(
            "UPDATE alerts SET lease_until_ms = NULL WHERE id = ?1 AND state = 'pending'",
            params![id],
        )
        .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// When the earliest pending row is due (ms), for the sender's sleep.
    pub fn next_due_ms(&self) -> Result<Option<i64>, OutboxError> {
        let conn = self.lock()?;
        conn.query_row(
            "SELECT MIN(MAX(next_attempt_at_ms, COALESCE(lease_until_ms, 0))) FROM alerts
             WHERE state = 'pending'",
            [],
            |r| r.get::<_, Option<i64>>(0),
        )
        .map_err(|e| self.sql(e))
    }

    /// One stored alert with its delivery details.
    pub fn get(&self, id: &str) -> Result<Option<AlertRecord>, OutboxError> {
        let conn = self.lock()?;
        let mut stmt = conn
            .prepare_cached(&format!("{SELECT_RECORD} WHERE id = ?1"))
            .map_err(|e| self.sql(e))?;
        let row = stmt
            .query_row(params![id], read_row)
            .optional()
            .map_err(|e| self.sql(e))?;
        row.map(|r| self.to_record(r)).transpose()
    }

    /// Alerts created in the last `hours` hours, newest first, with their delivery details.
    pub fn recent_records(&self, hours: u32) -> Result<Vec<AlertRecord>, OutboxError> {
        let since = now_ms() - i64::from(hours) * 3600 * 1000;
        let conn = self.lock()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "{SELECT_RECORD} WHERE created_at_ms >= ?1 ORDER BY created_at_ms DESC, rowid DESC"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![since], read_row)
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        rows.into_iter().map(|r| self.to_record(r)).collect()
    }

    fn to_record(&self, r: Row) -> Result<AlertRecord, OutboxError> {
        let bad = |value: &str| OutboxError::BadRow {
            path: self.path.clone(),
            id: r.id.clone(),
            value: value.to_string(),
        };
        let kind = AlertKind::parse(&r.kind).ok_or_else(|| bad(&r.kind))?;
        let state = match r.state.as_str() {
            "pending" => DeliveryState::Pending,
            "delivered" => DeliveryState::Delivered,
            "failed" => DeliveryState::Failed,
            "disabled" => DeliveryState::Disabled,
            other => return Err(bad(other)),
        };
        Ok(AlertRecord {
            next_attempt_at: (state == DeliveryState::Pending)
                .then_some(r.next_attempt_at_ms)
                .flatten()
                .map(rfc3339),
            last_error: r.last_error,
            view: AlertView {
                id: r.id,
                kind,
                title: r.title,
                message: r.message,
                created_at: rfc3339(r.created_at_ms),
                delivery: Delivery {
                    state,
                    attempts: r.attempts,
                    last_status: r.last_status,
                    delivered_at: r.delivered_at_ms.map(rfc3339),
                },
            },
        })
    }
}

const SELECT_RECORD: &str = "SELECT id, kind, title, message, created_at_ms, state, attempts,
    last_status, last_error, next_attempt_at_ms, delivered_at_ms FROM alerts";

struct Row {
    id: String,
    kind: String,
    title: String,
    message: String,
    created_at_ms: i64,
    state: String,
    attempts: u32,
    last_status: Option<u16>,
    last_error: Option<String>,
    next_attempt_at_ms: Option<i64>,
    delivered_at_ms: Option<i64>,
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        kind: r.get(1)?,
        title: r.get(2)?,
        message: r.get(3)?,
        created_at_ms: r.get(4)?,
        state: r.get(5)?,
        attempts: r.get(6)?,
        last_status: r.get(7)?,
        last_error: r.get(8)?,
        next_attempt_at_ms: r.get(9)?,
        delivered_at_ms: r.get(10)?,
    })
}

impl AlertSink for Outbox {
    fn raise(&self, alert: NewAlert) {
        match self.insert(&alert, now_ms(), None) {
            Ok(_) => tracing::info!(
                id = %alert.id,
                kind = %alert.kind,
                title = %alert.title,
                queued = self.sending_enabled,
                "alert raised"
            ),
            // Never silent: if the store is gone, the log is the last place the alert shows up.
            Err(e) => tracing::error!(
                id = %alert.id,
                kind = %alert.kind,
                title = %alert.title,
                message = %alert.message,
                error = %e,
                "alert raised but could not be stored, so it will not be sent"
            ),
        }
    }
}

impl AlertLog for Outbox {
    fn recent(&self, hours: u32) -> Result<Vec<AlertView>, AlertLogError> {
        self.recent_records(hours)
            .map(|rows| rows.into_iter().map(|r| r.view).collect())
            .map_err(|e| AlertLogError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "outbox-{name}-{}-{}",
            std::process::id(),
            super::super::new_alert_id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(1000),
            cap: Duration::from_millis(3_600_000),
            window: Duration::from_secs(24 * 3600),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stays_within_base_and_cap() {
        let p = policy();
        let mut rng = rand::rng();
        for _ in 0..200 {
            let d1 = backoff_delay(1, &p, &mut rng);
            assert!(d1 >= Duration::from_millis(1000) && d1 <= Duration::from_millis(1250));
            let d4 = backoff_delay(4, &p, &mut rng);
            assert!(d4 >= Duration::from_millis(6000) && d4 <= Duration::from_millis(10000));
            let d30 = backoff_delay(30, &p, &mut rng);
            assert!(d30 >= Duration::from_secs(2700) && d30 <= Duration::from_secs(3600));
            assert!(backoff_delay(u32::MAX, &p, &mut rng) <= p.cap);
        }
        let spread: std::collections::HashSet<_> =
            (0..50).map(|_| backoff_delay(3, &p, &mut rng)).collect();
        assert!(spread.len() > 10, "jitter spreads retries");
    }

    #[test]
    fn a_claimed_row_is_not_claimed_twice_until_its_lease_runs_out() {
        let dir = temp_dir("lease");
        let a = Outbox::open_in(&dir, true, policy()).unwrap();
        let b = Outbox::open_in(&dir, true, policy()).unwrap();
        let alert = NewAlert::new(AlertKind::Test, "t", "m");
        assert!(a.insert(&alert, 1_000, None).unwrap());
        assert!(
            !b.insert(&alert, 1_000, None).unwrap(),
            "same id is kept once"
        );
        let claimed = a.claim_due(1_000, 15_000).unwrap().unwrap();
        assert_eq!(claimed.id, alert.id);
        assert_eq!(b.claim_due(2_000, 15_000).unwrap(), None);
        // The holder died; after the lease another process takes it.
        assert!(b.claim_due(16_001, 15_000).unwrap().is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn failures_reschedule_then_fail_at_the_end_of_the_window() {
        let dir = temp_dir("window");
        let mut p = policy();
        p.window = Duration::from_secs(10);
        let o = Outbox::open_in(&dir, true, p).unwrap();
        let alert = NewAlert::new(AlertKind::Fall, "Fall", "m");
        let t0 = now_ms();
        o.insert(&alert, t0, None).unwrap();
        let c = o.claim_due(t0, 1000).unwrap().unwrap();
        let refused = AttemptOutcome::Refused { status: 503 };
        assert_eq!(
            o.record_attempt(&c, &refused, t0).unwrap(),
            DeliveryState::Pending
        );
        let rec = o.get(&alert.id).unwrap().unwrap();
        assert_eq!(rec.view.delivery.attempts, 1);
        assert_eq!(rec.view.delivery.last_status, Some(503));
        assert_eq!(
            rec.last_error.as_deref(),
            Some("receiver answered 503 Service Unavailable")
        );
        assert_eq!(o.claim_due(t0 + 999, 1000).unwrap(), None, "not due yet");
        let c = o.claim_due(t0 + 1300, 1000).unwrap().unwrap();
        assert_eq!(c.attempts, 1);
        let state = o
            .record_attempt(
                &c,
                &AttemptOutcome::NoReply {
                    error: "timed out".into(),
                },
                t0 + 10_000,
            )
            .unwrap();
        assert_eq!(state, DeliveryState::Failed);
        let rec = o.get(&alert.id).unwrap().unwrap();
        assert_eq!(rec.view.delivery.state, DeliveryState::Failed);
        assert_eq!(rec.view.delivery.last_status, None);
        assert_eq!(rec.view.delivery.attempts, 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn without_an_address_alerts_are_kept_as_disabled_and_listed_newest_first() {
        let dir = temp_dir("disabled");
        let o = Outbox::open_in(&dir, false, policy()).unwrap();
        let first = NewAlert::new(AlertKind::Anomaly, "first", "m");
        let second = NewAlert::new(AlertKind::NodeOffline, "second", "m");
        o.insert(&first, now_ms() - 1000, None).unwrap();
        o.raise(second.clone());
        let listed = o.recent(1).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].id, second.id);
        assert_eq!(listed[1].id, first.id);
        assert!(
            listed
                .iter()
                .all(|a| a.delivery.state == DeliveryState::Disabled)
        );
        assert_eq!(o.claim_due(now_ms() + 10_000, 1000).unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rows_long_past_their_window_fail_without_an_attempt() {
        let dir = temp_dir("stale");
        let mut p = policy();
        p.window = Duration::from_secs(60);
        let o = Outbox::open_in(&dir, true, p).unwrap();
        let alert = NewAlert::new(AlertKind::Fall, "Fall", "m");
        let t0 = now_ms() - 3_600_000;
        o.insert(&alert, t0, None).unwrap();
        assert_eq!(o.claim_due(now_ms(), 1000).unwrap(), None);
        let rec = o.get(&alert.id).unwrap().unwrap();
        assert_eq!(rec.view.delivery.state, DeliveryState::Failed);
        assert_eq!(rec.view.delivery.attempts, 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
