//! Account events: things that happened to an account's integrations without a request to
//! answer them (`connection.expired` when a refresh token is refused, `trigger.disabled` when a
//! receiver answers 410). They are kept 30 days, listed newest first by `GET /events`, and
//! delivered to the account's webhook receivers by the triggers service.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::error::StoreError;

pub const CONNECTION_EXPIRED: &str = "connection.expired";
pub const TRIGGER_DISABLED: &str = "trigger.disabled";
pub const RETENTION_DAYS: i64 = 30;
pub const MAX_LIST: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub created_at_ms: i64,
    pub data: Value,
}

impl Event {
    /// The REST representation (`GET /events`).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": self.kind,
            "created_at": crate::clock::rfc3339(self.created_at_ms),
            "data": self.data,
        })
    }
}

/// Where account events are kept.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Stores `event` for the account (kept [`RETENTION_DAYS`]).
    async fn put_event(&self, account_id: &str, event: &Event) -> Result<(), StoreError>;

    /// The account's latest events, newest first, at most `limit`.
    async fn latest_events(&self, account_id: &str, limit: usize)
    -> Result<Vec<Event>, StoreError>;
}

/// Stores an event of `kind` for the account and returns its id.
pub async fn record_event(
    store: &dyn EventStore,
    account_id: &str,
    kind: &str,
    data: Value,
    now_ms: i64,
) -> Result<String, StoreError> {
    let event = Event {
        id: crate::ids::random_id("evt_", 10),
        kind: kind.to_owned(),
        created_at_ms: now_ms,
        data,
    };
    store.put_event(account_id, &event).await?;
    tracing::info!(account = account_id, kind, event = %event.id, "account event recorded");
    Ok(event.id)
}

/// The account's latest events, newest first (at most [`MAX_LIST`]).
pub async fn list_events(
    store: &dyn EventStore,
    account_id: &str,
    limit: usize,
) -> Result<Vec<Event>, StoreError> {
    store
        .latest_events(account_id, limit.clamp(1, MAX_LIST))
        .await
}
