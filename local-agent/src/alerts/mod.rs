//! Away Alerts: what the sensing modules raise, and the seam they raise it through.
//!
//! The fall monitor, the routine learner and the hub's rules only know [`AlertSink`]: they build a
//! [`NewAlert`] (with its id, which becomes the `Idempotency-Key`) and hand it over. The durable
//! outbox and HTTPS sender implement the sink; until one is configured, [`LogSink`] records the
//! alert in the log so nothing is raised silently.
//!
//! - [`config`]: address, extra CA, away schedule (environment, then the TOML config file).
//! - [`outbox`]: the SQLite outbox (`<data dir>/alerts.db`), the retry schedule, the alert log.
//! - [`sender`]: the HTTPS sender (reqwest + rustls) and its loop.
//! - [`rules`], [`schedule`]: `presence_while_away` and the away-mode schedule (pure).
//! - [`service`]: startup inside `local-agent run`; [`cli`]: `alert test`, `away on|off|status`.

pub mod cli;
pub mod config;
pub mod outbox;
pub mod rules;
pub mod schedule;
pub mod sender;
pub mod service;

pub use service::{Alerts, AlertsError, AlertsTasks, PresenceSource};

pub mod memory;

use std::fmt;

use rand::RngCore;
use serde::Serialize;

/// Alert kinds, exactly as `CONTRACTS.md` ("Away Alerts") names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    Fall,
    NoBreathing,
    Anomaly,
    /// Only while away mode is on.
    PresenceWhileAway,
    NodeOffline,
    Test,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Fall => "fall",
            AlertKind::NoBreathing => "no_breathing",
            AlertKind::Anomaly => "anomaly",
            AlertKind::PresenceWhileAway => "presence_while_away",
            AlertKind::NodeOffline => "node_offline",
            AlertKind::Test => "test",
        }
    }

    /// Parses the contract's name (for rows read back from the store).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "fall" => AlertKind::Fall,
            "no_breathing" => AlertKind::NoBreathing,
            "anomaly" => AlertKind::Anomaly,
            "presence_while_away" => AlertKind::PresenceWhileAway,
            "node_offline" => AlertKind::NodeOffline,
            "test" => AlertKind::Test,
            _ => return None,
        })
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An alert as raised, before it is stored or sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAlert {
    /// Unique id; sent as `Idempotency-Key`, so receivers can drop a retried duplicate.
    pub id: String,
    pub kind: AlertKind,
    /// Short headline (the `Title` header and `title` field).
    pub title: String,
    /// One or two sentences a person can act on.
    pub message: String,
}

impl NewAlert {
    /// An alert with a fresh random id.
    pub fn new(kind: AlertKind, title: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            id: new_alert_id(),
            kind,
            title: title.into(),
            message: message.into(),
        }
    }
}

/// `alert_` followed by 128 random bits in hex: unguessable and unique without coordination.
pub fn new_alert_id() -> String {
    let mut bytes = [0_u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let mut id = String::with_capacity(6 + 32);
    id.push_str("alert_");
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Where raised alerts go. Implementations must not block for long: `raise` is called from the
/// sensing thread. Storing durably (one SQLite insert) is fine; sending over the network is not.
pub trait AlertSink: Send + Sync + 'static {
    fn raise(&self, alert: NewAlert);
}

/// A sink that only logs: used when no alert address is configured, and by offline tools.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogSink;

impl AlertSink for LogSink {
    fn raise(&self, alert: NewAlert) {
        tracing::warn!(
            id = %alert.id,
            kind = %alert.kind,
            title = %alert.title,
            message = %alert.message,
            "alert raised (no alert address configured, so it is only logged)"
        );
    }
}

/// Delivery state of a stored alert (`delivery.state` in `GET /alerts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its first or next attempt.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Retried for 24 h without a 2xx; no more attempts.
    Failed,
    /// No alert address was configured when it was raised; kept for the log only.
    Disabled,
}

/// `delivery` of one alert in `GET /alerts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub state: DeliveryState,
    pub attempts: u32,
    /// HTTP status of the last attempt; `None` before the first or when it got no reply.
    pub last_status: Option<u16>,
    /// RFC 3339 UTC.
    pub delivered_at: Option<String>,
}

/// One alert as `GET /alerts` lists it (CONTRACTS.md, "Sensor hub").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertView {
    pub id: String,
    pub kind: AlertKind,
    pub title: String,
    pub message: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    pub delivery: Delivery,
}

/// Why the alert log could not be read.
#[derive(Debug, thiserror::Error)]
#[error("alert log unavailable: {0}")]
pub struct AlertLogError(pub String);

/// A sink that also keeps what it was given, newest first: the hub's `GET /alerts` reads it.
pub trait AlertLog: AlertSink {
    /// Alerts created in the last `hours` hours, newest first.
    fn recent(&self, hours: u32) -> Result<Vec<AlertView>, AlertLogError>;
}

/// Away mode, shared by the hub's control route, the schedule and the `presence_while_away`
/// rule. Cloning shares the same switch.
#[derive(Debug, Clone, Default)]
pub struct AwayMode(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl AwayMode {
    pub fn is_on(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set(&self, on: bool) {
        let was = self.0.swap(on, std::sync::atomic::Ordering::Relaxed);
        if was != on {
            tracing::info!(away = on, "away mode changed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_contract_names() {
        for kind in [
            AlertKind::Fall,
            AlertKind::NoBreathing,
            AlertKind::Anomaly,
            AlertKind::PresenceWhileAway,
            AlertKind::NodeOffline,
            AlertKind::Test,
        ] {
            assert_eq!(AlertKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.as_str().into())
            );
        }
        assert_eq!(AlertKind::parse("FALL"), None);
    }

    #[test]
    fn alert_ids_are_unique_and_url_safe() {
        let a = new_alert_id();
        let b = new_alert_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 38);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
    }
}
