//! Deliveries in a jobs round: due outbox messages are claimed and sent, signed as Standard
//! Webhooks, to their trigger's receiver; each attempt ends delivered, retried on the schedule
//! (`Retry-After` can only push it later) or failed, and a `410 Gone` disables the trigger.

use std::time::{Duration, Instant};

use platform_domain::triggers::{DeliveryReport, TriggerError};
use platform_domain::webhooks::{self, Attempt, Finish, Message, sign};

use super::Triggers;
use crate::outbound::{Outbound, OutboundError};

/// Per-attempt timeout of a delivery.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(15);

impl Triggers {
    /// Attempts up to `limit` due outbox messages.
    pub async fn deliver_due(
        &self,
        now_ms: i64,
        limit: usize,
        until: Instant,
    ) -> Result<DeliveryReport, TriggerError> {
        let mut report = DeliveryReport::default();
        for msg in self.outbox.claim_due_messages(now_ms, limit).await? {
            if Instant::now() >= until {
                break;
            }
            report.attempted += 1;
            match self.deliver_one(&msg, now_ms).await? {
                Finish::Delivered { .. } => report.delivered += 1,
                Finish::Retry { .. } => report.retrying += 1,
                Finish::Failed { .. } => report.failed += 1,
                Finish::Cancelled { .. } => report.cancelled += 1,
            }
        }
        Ok(report)
    }

    async fn deliver_one(&self, msg: &Message, now_ms: i64) -> Result<Finish, TriggerError> {
        let t = self
            .store
            .get_trigger(&msg.account_id, &msg.trigger_id)
            .await?;
        let Some(t) = t.filter(|t| t.active) else {
            let outcome = Finish::Cancelled {
                reason: "the trigger was deleted or disabled".into(),
            };
            self.outbox.finish(msg, &outcome, now_ms).await?;
            return Ok(outcome);
        };
        let secret = self
            .sealer
            .open(&t.sealed_secret, &t.secret_context())
            .await
            .map_err(|_| TriggerError::Seal)?;
        let secret = String::from_utf8(secret).map_err(|_| TriggerError::Seal)?;
        let attempt = attempt(&self.outbound, &t.webhook_url, &secret, msg, now_ms).await;
        let outcome = attempt.outcome(msg, now_ms);
        self.outbox.finish(msg, &outcome, now_ms).await?;
        tracing::info!(
            trigger = %t.id,
            message = %msg.id,
            attempt = msg.attempts + 1,
            outcome = ?outcome,
            "webhook delivery attempt"
        );
        match attempt {
            Attempt::Success(_) => self.store.delivery_health(&t, None, now_ms).await?,
            Attempt::Gone => self.disable(&t, "endpoint_gone", now_ms).await?,
            Attempt::Failure { error, .. } => {
                self.store
                    .delivery_health(&t, Some(format!("delivery: {error}")), now_ms)
                    .await?
            }
        }
        Ok(outcome)
    }
}

/// Sends one attempt of `msg` to `url`, signed with `secret`, stamped `now_ms`.
async fn attempt(
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
                .then(|| {
                    resp.headers
                        .get(http::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| webhooks::retry_after(v, now_ms))
                })
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
