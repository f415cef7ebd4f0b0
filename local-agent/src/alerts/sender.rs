//! The HTTPS sender: posts outbox rows to the one configured address and records each attempt.
//!
//! TLS is rustls with the bundled Mozilla root set (`webpki-roots`), plus the optional extra CA
//! file for self-hosted receivers. Redirects are not followed: a 3xx is not a delivery, and
//! following one could send a home's alerts somewhere the user never configured.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use tokio::sync::watch;

use super::config::{AlertConfig, ConfigError, SOURCE_NAME, WebhookAddress, load_ca};
use super::outbox::{AttemptOutcome, Claimed, Outbox, now_ms};
use super::{AlertKind, DeliveryState};

/// The body: exactly these three fields (keys in this order).
#[derive(Debug, Serialize)]
struct Body<'a> {
    message: &'a str,
    source: &'a str,
    title: &'a str,
}

/// Posts alerts to the configured address.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    address: WebhookAddress,
    timeout: Duration,
}

impl Sender {
    /// `None` when no address is configured.
    pub fn from_config(config: &AlertConfig) -> Result<Option<Self>, ConfigError> {
        let Some(address) = config.webhook.clone() else {
            return Ok(None);
        };
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("presence-agent/", env!("CARGO_PKG_VERSION")));
        if address.is_loopback() {
            // A receiver on this computer: a proxy from the environment could not reach it, and
            // plain http must not leave the machine.
            builder = builder.no_proxy();
        }
        if let Some(path) = &config.extra_ca {
            for cert in load_ca(path).map_err(|reason| ConfigError::BadCa {
                path: path.clone(),
                origin: "extra CA".into(),
                reason,
            })? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|e| ConfigError::Client(describe(&e, &address)))?;
        Ok(Some(Self {
            client,
            address,
            timeout: config.request_timeout,
        }))
    }

    /// The address, as it may be logged.
    pub fn address(&self) -> &WebhookAddress {
        &self.address
    }

    /// The lease a sender takes on a row: one request plus margin.
    pub fn lease_ms(&self) -> i64 {
        (self.timeout + Duration::from_secs(5)).as_millis() as i64
    }

    /// One attempt. Never fails: every way it can go wrong is an [`AttemptOutcome`].
    pub async fn send(&self, alert: &Claimed) -> AttemptOutcome {
        let body = match serde_json::to_vec(&Body {
            message: &alert.message,
            source: SOURCE_NAME,
            title: &alert.title,
        }) {
            Ok(b) => b,
            Err(e) => {
                return AttemptOutcome::NoReply {
                    error: format!("cannot encode the alert: {e}"),
                };
            }
        };
        let headers = match headers(alert) {
            Ok(h) => h,
            Err(error) => return AttemptOutcome::NoReply { error },
        };
        let sent = self
            .client
            .post(self.address.url().clone())
            .headers(headers)
            .body(body)
            .send()
            .await;
        match sent {
            Ok(reply) => {
                let status = reply.status().as_u16();
                if reply.status().is_success() {
                    AttemptOutcome::Delivered { status }
                } else {
                    AttemptOutcome::Refused { status }
                }
            }
            Err(e) => AttemptOutcome::NoReply {
                error: describe(&e, &self.address),
            },
        }
    }
}

fn headers(alert: &Claimed) -> Result<HeaderMap, String> {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(
        HeaderName::from_static("title"),
        HeaderValue::from_str(&title_header(&alert.title))
            .map_err(|_| "the title cannot be sent as a header".to_string())?,
    );
    h.insert(
        HeaderName::from_static("priority"),
        HeaderValue::from_static("high"),
    );
    h.insert(
        HeaderName::from_static("tags"),
        HeaderValue::from_static("warning"),
    );
    h.insert(
        HeaderName::from_static("idempotency-key"),
        HeaderValue::from_str(&alert.id)
            .map_err(|_| format!("alert id {:?} is not a valid header value", alert.id))?,
    );
    Ok(h)
}

/// The `Title` header: printable ASCII as it is; anything else as an RFC 2047 encoded word,
/// which ntfy decodes (the body's `title` always carries the exact text).
pub fn title_header(title: &str) -> String {
    let clean: String = title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.bytes().all(|b| (0x20..0x7f).contains(&b)) && !clean.contains("=?") {
        clean
    } else {
        format!(
            "=?UTF-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(clean.as_bytes())
        )
    }
}

/// A transport error as one line: kind, then the causes (TLS reason, OS error), without the URL.
fn describe(e: &reqwest::Error, address: &WebhookAddress) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_builder() {
        "bad request"
    } else {
        "request failed"
    };
    let mut parts: Vec<String> = vec![kind.to_string()];
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    let line = parts.join(": ");
    // Belt and braces: the URL may carry a secret topic or token.
    line.replace(address.url().as_str(), &address.redacted())
}

/// The sender loop: sends every due row, then sleeps until the next one is due, a new alert is
/// raised in this process, or `poll` passes (rows written by another process), whichever is
/// first. Stops when `shutdown` turns true.
pub async fn run(
    outbox: Arc<Outbox>,
    sender: Sender,
    poll: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let wake = outbox.wake_handle();
    let lease = sender.lease_ms();
    tracing::info!(address = %sender.address(), "alert sender running");
    loop {
        if *shutdown.borrow() {
            break;
        }
        match outbox.claim_due(now_ms(), lease) {
            Ok(Some(claimed)) => {
                let outcome = tokio::select! {
                    outcome = sender.send(&claimed) => outcome,
                    _ = shutdown.changed() => {
                        // Give the row back so the next start sends it without waiting out the
                        // lease.
                        if let Err(e) = outbox.release(&claimed.id) {
                            tracing::warn!(error = %e, "cannot release an alert on shutdown");
                        }
                        break;
                    }
                };
                record(&outbox, &claimed, &outcome, &sender);
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "cannot read the alert outbox"),
        }
        let now = now_ms();
        let wait = match outbox.next_due_ms() {
            Ok(Some(due)) => Duration::from_millis(due.saturating_sub(now).max(0) as u64).min(poll),
            Ok(None) | Err(_) => poll,
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => {}
        }
    }
    tracing::info!("alert sender stopped");
}

/// Stores an attempt's outcome and logs it (with the redacted address only).
pub fn record(
    outbox: &Outbox,
    claimed: &Claimed,
    outcome: &AttemptOutcome,
    sender: &Sender,
) -> Option<DeliveryState> {
    let attempt = claimed.attempts + 1;
    match outbox.record_attempt(claimed, outcome, now_ms()) {
        Ok(state) => {
            match (state, outcome) {
                (DeliveryState::Delivered, _) => tracing::info!(
                    id = %claimed.id, kind = %claimed.kind, attempt,
                    status = outcome.status(), address = %sender.address(),
                    "alert delivered"
                ),
                (DeliveryState::Failed, _) => tracing::error!(
                    id = %claimed.id, kind = %claimed.kind, attempt,
                    outcome = ?outcome, address = %sender.address(),
                    "alert not delivered within its retry window; giving up"
                ),
                _ => tracing::warn!(
                    id = %claimed.id, kind = %claimed.kind, attempt,
                    outcome = ?outcome, address = %sender.address(),
                    "alert not delivered yet; will retry"
                ),
            }
            Some(state)
        }
        Err(e) => {
            tracing::error!(id = %claimed.id, error = %e, "cannot record a delivery attempt");
            None
        }
    }
}

/// The test alert `local-agent alert test` sends.
pub fn test_alert() -> super::NewAlert {
    super::NewAlert::new(
        AlertKind::Test,
        "Test alert from presence-agent",
        "This is a test. If you can read it, Away Alerts reach you.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_titles_pass_and_others_are_encoded_words() {
        assert_eq!(title_header("Fall detected"), "Fall detected");
        assert_eq!(title_header("a\r\nInjected: x"), "a  Injected: x");
        let enc = title_header("Chute détectée");
        assert!(
            enc.starts_with("=?UTF-8?B?") && enc.ends_with("?="),
            "{enc}"
        );
        let b64 = &enc[10..enc.len() - 2];
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "Chute détectée");
        assert!(HeaderValue::from_str(&enc).is_ok());
    }

    #[test]
    fn the_body_has_exactly_the_contract_fields() {
        let v = serde_json::to_value(Body {
            message: "m",
            source: SOURCE_NAME,
            title: "t",
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"message": "m", "source": "presence-agent", "title": "t"})
        );
    }
}
