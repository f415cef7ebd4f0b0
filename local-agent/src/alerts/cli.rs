//! The `alert test` and `away on|off|status` commands.

use std::time::Duration;

use serde::Deserialize;

use super::config::{AlertConfig, WEBHOOK_ENV, config_path};
use super::outbox::{AttemptOutcome, Outbox, now_ms};
use super::sender::{self, Sender};
use super::service::AlertsError;
use crate::store;

/// The hub's port, where the loopback-only control route lives (the hub owns the listener).
pub const CONTROL_PORT_ENV: &str = "SERVICE_SENTINEL_PORT";
pub const DEFAULT_CONTROL_PORT: u16 = 8790;
/// The control route for away mode: `POST {"on": bool}` sets it, `GET` reads it; both answer
/// `{"away": bool}`.
pub const AWAY_PATH: &str = "/control/away";

/// What `alert test` came to.
#[derive(Debug)]
pub enum TestResult {
    Delivered {
        id: String,
        address: String,
        status: u16,
    },
    NotDelivered {
        id: String,
        address: String,
        reason: String,
        outbox: String,
    },
    /// No address is configured; the alert was kept in the log as `disabled`.
    NoAddress { id: String, hint: String },
}

/// Stores a `test` alert and makes one attempt now. A failed attempt leaves the row pending (with
/// its backoff), so a running agent retries it.
pub async fn alert_test() -> Result<TestResult, AlertsError> {
    let config = AlertConfig::load()?;
    let dir = store::data_dir()?;
    let sender = Sender::from_config(&config)?;
    let outbox = Outbox::open_in(&dir, sender.is_some(), config.retry)?;
    let alert = sender::test_alert();
    let Some(sender) = sender else {
        outbox.insert(&alert, now_ms(), None)?;
        let file = config_path()
            .map(|(p, _)| format!("alert_webhook in {}", p.display()))
            .unwrap_or_else(|| "alert_webhook in the config file".into());
        return Ok(TestResult::NoAddress {
            id: alert.id,
            hint: format!("set {WEBHOOK_ENV} or {file}"),
        });
    };
    let Some(claimed) = outbox.insert_for_attempt(&alert, now_ms(), sender.lease_ms())? else {
        // A fresh random id cannot already be stored; treat it as a storage fault.
        return Ok(TestResult::NotDelivered {
            id: alert.id,
            address: sender.address().to_string(),
            reason: "the alert could not be queued".into(),
            outbox: outbox.path().display().to_string(),
        });
    };
    let outcome = sender.send(&claimed).await;
    sender::record(&outbox, &claimed, &outcome, &sender);
    let address = sender.address().to_string();
    Ok(match outcome {
        AttemptOutcome::Delivered { status } => TestResult::Delivered {
            id: alert.id,
            address,
            status,
        },
        other => {
            let reason = outbox
                .get(&alert.id)?
                .and_then(|r| r.last_error)
                .unwrap_or_else(|| format!("{other:?}"));
            TestResult::NotDelivered {
                id: alert.id,
                address,
                reason,
                outbox: outbox.path().display().to_string(),
            }
        }
    })
}

/// What `local-agent away` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwayCommand {
    On,
    Off,
    Status,
}

/// Why the running agent could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(
        "the agent is not running (nothing answers on 127.0.0.1:{port}); start it with `local-agent run`, or set {CONTROL_PORT_ENV} to its hub port"
    )]
    NotRunning { port: u16 },
    #[error("the agent on 127.0.0.1:{port} did not answer in time")]
    Timeout { port: u16 },
    #[error("the agent on 127.0.0.1:{port} refused: {status} {detail}")]
    Refused {
        port: u16,
        status: u16,
        detail: String,
    },
    #[error("the agent on 127.0.0.1:{port} gave an unexpected reply: {detail}")]
    BadReply { port: u16, detail: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

#[derive(Debug, Deserialize)]
struct AwayReply {
    away: bool,
}

/// Asks the running agent's control route; returns whether away mode is on afterwards.
pub async fn away(port: u16, command: AwayCommand) -> Result<bool, ControlError> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ControlError::Client(e.to_string()))?;
    let url = format!("http://127.0.0.1:{port}{AWAY_PATH}");
    let request = match command {
        AwayCommand::Status => client.get(&url),
        AwayCommand::On | AwayCommand::Off => client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(if command == AwayCommand::On {
                r#"{"on":true}"#
            } else {
                r#"{"on":false}"#
            }),
    };
    let reply = request.send().await.map_err(|e| {
        if e.is_timeout() {
            ControlError::Timeout { port }
        } else if e.is_connect() {
            ControlError::NotRunning { port }
        } else {
            ControlError::BadReply {
                port,
                detail: e.without_url().to_string(),
            }
        }
    })?;
    let status = reply.status();
    let body = reply.bytes().await.map_err(|e| ControlError::BadReply {
        port,
        detail: e.without_url().to_string(),
    })?;
    if !status.is_success() {
        let detail: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(ControlError::Refused {
            port,
            status: status.as_u16(),
            detail,
        });
    }
    serde_json::from_slice::<AwayReply>(&body)
        .map(|r| r.away)
        .map_err(|e| ControlError::BadReply {
            port,
            detail: format!("expected {{\"away\": true|false}}: {e}"),
        })
}
