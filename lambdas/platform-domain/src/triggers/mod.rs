//! Triggers: an account asks to be told, at a webhook URL of its own, when something new appears
//! in an app: a new item in one of the app's lists (polled by the jobs function), or a webhook
//! the app sends to the trigger's ingress URL (`POST /hooks/{trigger_id}/{token}`).
//!
//! Each trigger keeps health fields (`last_poll_at`, `last_event_at`, `last_error`,
//! `consecutive_failures`, `state`) so a trigger that stops working says so, and a `410 Gone`
//! from the receiver disables it and emits a `trigger.disabled` account event.
//!
//! Here: the types, the events an app offers ([`app_events`]), what a poll finds ([`items`]),
//! typed errors and the [`TriggerStore`] port. Polling, delivery and the service around them
//! call out, so they live in `platform-exec`.

pub mod app_events;
pub mod items;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::clock::rfc3339;
use crate::error::StoreError;

pub use app_events::{EventDef, EventKind, events_for_app};

/// How often an active poll trigger is polled.
pub const POLL_INTERVAL_MS: i64 = 60_000;
/// A poll that fails waits `POLL_INTERVAL_MS * 2^failures`, at most this long.
pub const MAX_POLL_BACKOFF_MS: i64 = 16 * 60_000;
/// A claimed trigger is hidden from other runs this long (a run that dies frees it after this).
pub const POLL_LEASE_MS: i64 = 5 * 60_000;
/// Consecutive failures (of polls, or of delivery attempts) after which `state` is `failing`.
pub const FAILING_AFTER: u32 = 3;
/// Item ids remembered per trigger; older ones are forgotten first.
pub const MAX_SEEN: usize = 1_000;
/// New items sent per poll; the rest stay unseen and go out with the next poll.
pub const MAX_NEW_PER_POLL: usize = 100;
/// Triggers one account may have.
pub const MAX_TRIGGERS: usize = 100;
/// Longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2_048;
/// Prefix of every trigger id.
pub const ID_PREFIX: &str = "trg_";

#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    pub id: String,
    pub account_id: String,
    pub app: String,
    pub event: String,
    pub kind: EventKind,
    pub tool: Option<String>,
    pub connection_id: Option<String>,
    pub webhook_url: String,
    pub filter: Option<Value>,
    pub params: Option<Value>,
    pub active: bool,
    pub disabled_reason: Option<String>,
    pub created_at_ms: i64,
    pub last_poll_ms: Option<i64>,
    pub last_event_ms: Option<i64>,
    pub last_delivery_ms: Option<i64>,
    pub last_error: Option<String>,
    pub poll_failures: u32,
    pub delivery_failures: u32,
    pub baseline: bool,
    pub seen: Vec<String>,
    /// The signing secret, sealed under [`Trigger::secret_context`].
    pub sealed_secret: String,
}

impl Trigger {
    pub fn state(&self) -> &'static str {
        if !self.active {
            "disabled"
        } else if self.poll_failures >= FAILING_AFTER || self.delivery_failures >= FAILING_AFTER {
            "failing"
        } else {
            "healthy"
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "app": self.app,
            "event": self.event,
            "kind": self.kind.as_str(),
            "connection_id": self.connection_id,
            "webhook_url": self.webhook_url,
            "filter": self.filter,
            "params": self.params,
            "status": if self.active { "active" } else { "disabled" },
            "disabled_reason": self.disabled_reason,
            "created_at": rfc3339(self.created_at_ms),
            "health": {
                "last_poll_at": self.last_poll_ms.map(rfc3339),
                "last_event_at": self.last_event_ms.map(rfc3339),
                "last_delivery_at": self.last_delivery_ms.map(rfc3339),
                "last_error": self.last_error,
                "consecutive_failures": self.poll_failures + self.delivery_failures,
                "state": self.state(),
            },
        })
    }
}

impl Trigger {
    /// The context its signing secret is sealed under.
    pub fn secret_context(&self) -> String {
        secret_context(&self.id)
    }
}

/// The context the signing secret of trigger `id` is sealed under.
pub fn secret_context(id: &str) -> String {
    format!("trg#{id}")
}

/// A new trigger id: `trg_` + 20 hex digits.
pub fn new_id() -> String {
    crate::ids::random_id(ID_PREFIX, 10)
}

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot seal or open a trigger secret")]
    Seal,
}

/// Reports of one jobs round (logged by the jobs binary, asserted by tests).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PollReport {
    pub polled: usize,
    pub failed: usize,
    pub new_items: usize,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    pub attempted: usize,
    pub delivered: usize,
    pub retrying: usize,
    pub failed: usize,
    pub cancelled: usize,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoundReport {
    pub poll: PollReport,
    pub delivery: DeliveryReport,
}

/// What a poll changes on its trigger (written only while the poller holds the trigger's claim).
#[derive(Debug, Clone, PartialEq)]
pub struct PollUpdate {
    /// The item keys to remember, newest knowledge first; `None` leaves them as they are.
    pub seen: Option<Vec<String>>,
    /// Whether the baseline (what existed at the first poll) is recorded.
    pub baseline: bool,
    pub failures: u32,
    pub error: Option<String>,
    /// Whether the poll found something new to send.
    pub fired: bool,
    /// When to poll next.
    pub next_ms: i64,
}

/// Where triggers are kept. Active poll triggers sit in a due index sorted by their next poll;
/// a claim moves that time into the future with a conditional write, so overlapping jobs runs
/// never poll the same trigger; webhook triggers are found by id for the ingress.
#[async_trait]
pub trait TriggerStore: Send + Sync {
    /// Stores a new trigger; a poll trigger is due at its creation time. A webhook trigger keeps
    /// the SHA-256 of its ingress token.
    async fn put_trigger(
        &self,
        t: &Trigger,
        hook_token_hash: Option<&str>,
    ) -> Result<(), StoreError>;

    /// One trigger of the account (strongly consistent).
    async fn get_trigger(&self, account_id: &str, id: &str) -> Result<Option<Trigger>, StoreError>;

    async fn count_triggers(&self, account_id: &str) -> Result<usize, StoreError>;

    /// Every trigger of the account.
    async fn all_triggers(&self, account_id: &str) -> Result<Vec<Trigger>, StoreError>;

    /// At most `limit` triggers of the account after the one with id `after`, and whether more
    /// may follow.
    async fn trigger_page(
        &self,
        account_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Trigger>, bool), StoreError>;

    /// Deletes the trigger; `NotFound` when there is none.
    async fn delete_trigger(&self, account_id: &str, id: &str) -> Result<(), StoreError>;

    /// Re-activates a disabled trigger (a poll trigger is due at `now_ms`); `Conflict` when it is
    /// not disabled (or gone).
    async fn enable_trigger(&self, t: &Trigger, now_ms: i64) -> Result<(), StoreError>;

    /// Disables an active trigger (a poll trigger leaves the due index); `Conflict` when it is not
    /// active.
    async fn disable_trigger(&self, t: &Trigger, reason: &str) -> Result<(), StoreError>;

    /// The webhook trigger with id `id` and the hash of its ingress token.
    async fn hook_trigger(&self, id: &str) -> Result<Option<(Trigger, String)>, StoreError>;

    /// Notes that the trigger received an event (ignores a trigger deleted meanwhile).
    async fn record_event_seen(&self, t: &Trigger, now_ms: i64) -> Result<(), StoreError>;

    /// Claims up to `limit` triggers due at `now_ms` until `lease_until_ms`.
    async fn claim_due_triggers(
        &self,
        now_ms: i64,
        limit: usize,
        lease_until_ms: i64,
    ) -> Result<Vec<Trigger>, StoreError>;

    /// Records a poll of a trigger claimed until `lease_until_ms` (nothing when it was disabled,
    /// deleted or claimed again meanwhile).
    async fn after_poll(
        &self,
        t: &Trigger,
        lease_until_ms: i64,
        update: &PollUpdate,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Records a delivery attempt's outcome in the trigger's health (`error: None` = delivered).
    async fn delivery_health(
        &self,
        t: &Trigger,
        error: Option<String>,
        now_ms: i64,
    ) -> Result<(), StoreError>;
}
