//! The state of the MQTT link, shared by the publisher (which writes it) and whoever reports it:
//! the engine's `GET /health` (`mqtt`) and the doctor. It sits below the engine (not inside
//! `mqtt`, which reads the engine's snapshots) so that reporting it makes no import cycle.
//!
//! A [`LinkStatus`] is a cheap handle; [`LinkStatus::view`] gives the plain value
//! ([`LinkView`]) that `/health` serialises and a doctor check reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Where the link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// MQTT is not configured (no `mqtt_url`).
    Off,
    /// The first connection attempt is under way.
    Connecting,
    /// Connected; discovery, availability and states are published.
    Connected,
    /// The connection was lost or could not be made; the publisher retries with backoff.
    Disconnected,
    /// The broker refused the user name or password (or this client is not authorised); the
    /// publisher keeps retrying slowly in case the broker's side is fixed.
    AuthFailed,
}

impl LinkState {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Off => "off",
            LinkState::Connecting => "connecting",
            LinkState::Connected => "connected",
            LinkState::Disconnected => "disconnected",
            LinkState::AuthFailed => "auth_failed",
        }
    }
}

/// The MQTT link as `/health` reports it (`mqtt`). Nothing in it is secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkView {
    pub state: LinkState,
    /// `mqtt[s]://host:port`; `null` when MQTT is off.
    pub broker: Option<String>,
    /// The MQTT client id; `null` when MQTT is off.
    pub client_id: Option<String>,
    /// When `state` last changed (RFC 3339 UTC); `null` when MQTT is off.
    pub since: Option<String>,
    /// Why the last connection attempt failed or the link dropped; `null` after a success.
    pub last_error: Option<String>,
    /// Successful connections after the first.
    pub reconnects: u64,
    /// Messages handed to the MQTT client.
    pub published: u64,
    /// Messages dropped because the client's queue was full (the broker was slower than us).
    pub dropped: u64,
}

impl LinkView {
    /// MQTT not configured.
    pub fn off() -> Self {
        Self {
            state: LinkState::Off,
            broker: None,
            client_id: None,
            since: None,
            last_error: None,
            reconnects: 0,
            published: 0,
            dropped: 0,
        }
    }

    /// What a doctor check reports: a level, what was found and what to do, one sentence each.
    /// `Off` is fine (MQTT is optional).
    pub fn diagnosis(&self) -> Diagnosis {
        let broker = self.broker.as_deref().unwrap_or("the broker");
        let since = self
            .since
            .as_deref()
            .map(|s| format!(" since {s}"))
            .unwrap_or_default();
        let error = self.last_error.as_deref().unwrap_or("no answer yet");
        match self.state {
            LinkState::Off => Diagnosis::ok(
                "MQTT is off, so nothing is published to Home Assistant (set mqtt_url in the config file to turn it on).",
            ),
            LinkState::Connected if self.dropped == 0 => Diagnosis::ok(format!(
                "Connected to {broker} as {}{since}; {} messages published.",
                self.client_id.as_deref().unwrap_or("?"),
                self.published
            )),
            LinkState::Connected => Diagnosis {
                level: Severity::Warning,
                detail: format!(
                    "Connected to {broker}, but {} of {} messages were dropped because the broker took them slower than the agent sent them.",
                    self.dropped,
                    self.published + self.dropped
                ),
                fix: Some(
                    "Check the broker's load and the network to it; states catch up by themselves once it keeps up."
                        .into(),
                ),
            },
            LinkState::Connecting => Diagnosis {
                level: Severity::Warning,
                detail: format!("Connecting to {broker}{since}."),
                fix: Some(
                    "If this lasts, check that the broker runs and that mqtt_url names its host and MQTT port."
                        .into(),
                ),
            },
            LinkState::Disconnected => Diagnosis {
                level: Severity::Problem,
                detail: format!(
                    "Not connected to {broker}{since}: {error}. The agent keeps sensing and retries with backoff."
                ),
                fix: Some(
                    if error.starts_with("TLS") {
                        "Set mqtt_ca to the broker's CA certificate (PEM), and check that the host in mqtt_url is in the broker's certificate."
                    } else if error.starts_with("no answer") {
                        "Check that mqtt_url names the broker's MQTT port (mqtts:// for a TLS port, mqtt:// for a plain one)."
                    } else {
                        "Check that the broker runs and that mqtt_url names its host and port."
                    }
                    .into(),
                ),
            },
            LinkState::AuthFailed => Diagnosis {
                level: Severity::Problem,
                detail: format!("{broker} refused the agent's login: {error}."),
                fix: Some(
                    "Check SERVICE_MQTT_USERNAME and SERVICE_MQTT_PASSWORD (or SERVICE_MQTT_PASSWORD_FILE) against the broker's users."
                        .into(),
                ),
            },
        }
    }
}

/// How bad a link diagnosis is (the doctor's levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Ok,
    Warning,
    Problem,
}

/// One doctor finding about the MQTT link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub level: Severity,
    /// What was found, one sentence.
    pub detail: String,
    /// What to do, one sentence; `None` when nothing needs doing.
    pub fix: Option<String>,
}

impl Diagnosis {
    fn ok(detail: impl Into<String>) -> Self {
        Self {
            level: Severity::Ok,
            detail: detail.into(),
            fix: None,
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: LinkState,
    since: Option<String>,
    last_error: Option<String>,
    reconnects: u64,
    connected_once: bool,
}

/// Shared link status. `Default` is "MQTT off".
#[derive(Debug, Clone)]
pub struct LinkStatus {
    broker: Option<String>,
    client_id: Option<String>,
    inner: Arc<Mutex<Inner>>,
    published: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl Default for LinkStatus {
    fn default() -> Self {
        Self::off()
    }
}

impl LinkStatus {
    /// MQTT is not configured.
    pub fn off() -> Self {
        Self::with(LinkState::Off, None, None)
    }

    /// MQTT is configured for `broker` (safe to show) as `client_id`; the first attempt starts.
    pub fn connecting(broker: String, client_id: String) -> Self {
        Self::with(LinkState::Connecting, Some(broker), Some(client_id))
    }

    fn with(state: LinkState, broker: Option<String>, client_id: Option<String>) -> Self {
        let since = (state != LinkState::Off).then(now);
        Self {
            broker,
            client_id,
            inner: Arc::new(Mutex::new(Inner {
                state,
                since,
                last_error: None,
                reconnects: 0,
                connected_once: false,
            })),
            published: Arc::new(AtomicU64::new(0)),
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Inner)) {
        // A poisoned lock only means another thread panicked mid-update; the fields are plain
        // values, so the status stays usable.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let before = inner.state;
        f(&mut inner);
        if inner.state != before {
            inner.since = Some(now());
        }
    }

    pub fn set_connected(&self) {
        self.update(|i| {
            if i.connected_once {
                i.reconnects += 1;
            }
            i.connected_once = true;
            i.state = LinkState::Connected;
            i.last_error = None;
        });
    }

    pub fn set_disconnected(&self, error: String) {
        self.update(|i| {
            i.state = LinkState::Disconnected;
            i.last_error = Some(error);
        });
    }

    pub fn set_auth_failed(&self, error: String) {
        self.update(|i| {
            i.state = LinkState::AuthFailed;
            i.last_error = Some(error);
        });
    }

    pub fn state(&self) -> LinkState {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).state
    }

    pub fn count_published(&self) {
        self.published.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// The plain value for `/health` and the doctor.
    pub fn view(&self) -> LinkView {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        LinkView {
            state: inner.state,
            broker: self.broker.clone(),
            client_id: self.client_id.clone(),
            since: inner.since.clone(),
            last_error: inner.last_error.clone(),
            reconnects: inner.reconnects,
            published: self.published.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

fn now() -> String {
    format!("{:.0}", jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_is_healthy_and_says_how_to_turn_it_on() {
        let v = LinkStatus::off().view();
        assert_eq!(v, LinkView::off());
        let d = v.diagnosis();
        assert_eq!(d.level, Severity::Ok);
        assert!(d.detail.contains("mqtt_url"), "{d:?}");
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["state"], "off");
        assert!(json["broker"].is_null());
    }

    #[test]
    fn transitions_are_counted_and_explained() {
        let s = LinkStatus::connecting("mqtt://b:1883".into(), "id".into());
        assert_eq!(s.state(), LinkState::Connecting);
        s.set_auth_failed("bad user name or password".into());
        let d = s.view().diagnosis();
        assert_eq!(d.level, Severity::Problem);
        assert!(d.fix.unwrap().contains("SERVICE_MQTT_PASSWORD"));
        s.set_connected();
        s.set_disconnected("connection reset".into());
        s.set_connected();
        let v = s.view();
        assert_eq!(v.reconnects, 1);
        assert_eq!(v.last_error, None);
        s.count_published();
        s.count_dropped();
        let v = s.view();
        assert_eq!((v.published, v.dropped), (1, 1));
        assert_eq!(v.diagnosis().level, Severity::Warning, "drops need a look");
        s.set_disconnected("TLS failed: invalid peer certificate: UnknownIssuer".into());
        assert!(s.view().diagnosis().fix.unwrap().contains("mqtt_ca"));
    }
}
