//! Polling in a jobs round: due poll triggers are claimed, their app's list read through a
//! [`ListSource`] (in production the tool executor, with the trigger's connection, credentials,
//! SSRF guard and a recorded run), new items written to the outbox, and the trigger's health
//! updated; a failing poll backs off.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use platform_domain::runs::Arguments;
use platform_domain::triggers::items::{self, event_message, list_items};
use platform_domain::triggers::{
    MAX_POLL_BACKOFF_MS, POLL_INTERVAL_MS, POLL_LEASE_MS, PollReport, PollUpdate, RoundReport,
    Trigger, TriggerError,
};
use serde_json::{Value, json};

use super::Triggers;
use crate::executor::{Executor, RunError, RunOrigin, RunRequest};
use crate::outbound::{Outbound, OutboundError};

#[derive(Debug, thiserror::Error)]
pub enum PollError {
    #[error("polling is not available for {0}")]
    Unsupported(String),
    #[error("the app's connection is missing or needs re-authorisation")]
    ConnectionRequired,
    #[error("the app answered HTTP {0}")]
    Upstream(u16),
    #[error("the app's answer is not a list: {0}")]
    InvalidResponse(String),
    #[error("{0}")]
    Outbound(#[from] OutboundError),
    /// The executor's own refusal or failure, in its words.
    #[error("{0}")]
    Run(String),
}

/// Runs an app's list operation for an account. In production this is the tool executor
/// (`exec.rs`: the account's connection, credentials, SSRF guard, a recorded run); tests may use
/// [`UrlListSource`].
#[async_trait]
pub trait ListSource: Send + Sync {
    async fn list(
        &self,
        account_id: &str,
        tool: &str,
        params: &Value,
        connection_id: Option<&str>,
    ) -> Result<Value, PollError>;
}

#[async_trait]
impl ListSource for Executor {
    async fn list(
        &self,
        account_id: &str,
        tool: &str,
        params: &Value,
        connection_id: Option<&str>,
    ) -> Result<Value, PollError> {
        // A trigger's params are the list operation's query parameters, unless already grouped
        // the way tools take arguments.
        let grouped = params.as_object().is_some_and(|o| {
            !o.is_empty()
                && o.keys()
                    .all(|k| matches!(k.as_str(), "path" | "query" | "header" | "body"))
        });
        let arguments = if grouped || params.is_null() {
            params.clone()
        } else {
            serde_json::json!({ "query": params })
        };
        let req = RunRequest {
            tool,
            arguments: &arguments,
            connection_id,
            origin: RunOrigin::Trigger,
            keep_arguments: Arguments::Redacted,
        };
        match self.execute(account_id, req).await {
            Ok(out) => Ok(out.data),
            Err(RunError::ConnectionRequired { .. } | RunError::NeedsReauth { .. }) => {
                Err(PollError::ConnectionRequired)
            }
            Err(RunError::Upstream {
                status: Some(s), ..
            }) => Err(PollError::Upstream(s)),
            Err(RunError::ToolNotFound(t) | RunError::NotRunnable(t)) => {
                Err(PollError::Unsupported(t))
            }
            Err(e) => Err(PollError::Run(e.detail())),
        }
    }
}

/// A [`ListSource`] that GETs a fixed URL per tool through [`Outbound`], with `params` (an
/// object of scalars) as the query string. For tests and development against local apps; it
/// injects no credentials.
pub struct UrlListSource {
    outbound: Arc<Outbound>,
    urls: HashMap<String, String>,
}

impl UrlListSource {
    pub fn new(outbound: Arc<Outbound>, urls: HashMap<String, String>) -> Self {
        Self { outbound, urls }
    }
}

#[async_trait]
impl ListSource for UrlListSource {
    async fn list(
        &self,
        _account_id: &str,
        tool: &str,
        params: &Value,
        _connection_id: Option<&str>,
    ) -> Result<Value, PollError> {
        let url = self
            .urls
            .get(tool)
            .ok_or_else(|| PollError::Unsupported(tool.to_string()))?;
        let mut url = self.outbound.check_url(url)?;
        if let Some(obj) = params.as_object().filter(|o| !o.is_empty()) {
            let mut q = url.query_pairs_mut();
            for (k, v) in obj {
                match v {
                    Value::String(s) => q.append_pair(k, s),
                    other => q.append_pair(k, &other.to_string()),
                };
            }
        }
        let resp = self.outbound.send(self.outbound.client().get(url)).await?;
        if !(200..300).contains(&resp.status) {
            return Err(PollError::Upstream(resp.status));
        }
        serde_json::from_slice(&resp.body).map_err(|e| PollError::InvalidResponse(e.to_string()))
    }
}

impl Triggers {
    /// One jobs round: poll due triggers, then attempt due deliveries (including what the polls
    /// just enqueued). Repeats each step while it finds a full batch, and starts no poll or
    /// delivery after `until` (the caller leaves room for one request's timeout after it).
    pub async fn run_round(
        &self,
        source: &dyn ListSource,
        now_ms: i64,
        until: Instant,
    ) -> Result<RoundReport, TriggerError> {
        // Small batches: claims not reached before `until` wait out their lease.
        const BATCH: usize = 10;
        const MAX_BATCHES: usize = 100;
        let mut r = RoundReport::default();
        for _ in 0..MAX_BATCHES {
            if Instant::now() >= until {
                break;
            }
            let p = self.poll_due(source, now_ms, BATCH, until).await?;
            let full = p.polled >= BATCH;
            r.poll.polled += p.polled;
            r.poll.failed += p.failed;
            r.poll.new_items += p.new_items;
            if !full {
                break;
            }
        }
        for _ in 0..MAX_BATCHES {
            if Instant::now() >= until {
                break;
            }
            let d = self.deliver_due(now_ms, BATCH, until).await?;
            let full = d.attempted >= BATCH;
            r.delivery.attempted += d.attempted;
            r.delivery.delivered += d.delivered;
            r.delivery.retrying += d.retrying;
            r.delivery.failed += d.failed;
            r.delivery.cancelled += d.cancelled;
            if !full {
                break;
            }
        }
        Ok(r)
    }

    /// Polls up to `limit` triggers due at `now_ms` with `source`, starting none after `until`
    /// (a claimed trigger left over is polled by a later round once its lease ends).
    pub async fn poll_due(
        &self,
        source: &dyn ListSource,
        now_ms: i64,
        limit: usize,
        until: Instant,
    ) -> Result<PollReport, TriggerError> {
        let mut report = PollReport::default();
        let lease_until = now_ms + POLL_LEASE_MS;
        for t in self
            .store
            .claim_due_triggers(now_ms, limit, lease_until)
            .await?
        {
            if Instant::now() >= until {
                break;
            }
            report.polled += 1;
            let t = self.canonical(t);
            match self.poll_one(source, &t, now_ms, lease_until).await? {
                Some(fired) => report.new_items += fired,
                None => report.failed += 1,
            }
        }
        Ok(report)
    }

    /// Polls one claimed trigger; returns how many new items were enqueued, or `None` if the
    /// list could not be read (recorded in the trigger's health).
    async fn poll_one(
        &self,
        source: &dyn ListSource,
        t: &Trigger,
        now_ms: i64,
        lease_until: i64,
    ) -> Result<Option<usize>, TriggerError> {
        let tool = t.tool.clone().unwrap_or_default();
        let params = t.params.clone().unwrap_or_else(|| json!({}));
        let listed = source
            .list(&t.account_id, &tool, &params, t.connection_id.as_deref())
            .await
            .and_then(|v| {
                list_items(&v)
                    .cloned()
                    .ok_or_else(|| PollError::InvalidResponse("no array in the answer".into()))
            });
        let items = match listed {
            Ok(items) => items,
            Err(e) => {
                let failures = t.poll_failures.saturating_add(1);
                let backoff = POLL_INTERVAL_MS
                    .saturating_mul(1 << failures.min(5))
                    .min(MAX_POLL_BACKOFF_MS);
                let update = PollUpdate {
                    seen: None,
                    baseline: t.baseline,
                    failures,
                    error: Some(format!("poll: {e}")),
                    fired: false,
                    next_ms: now_ms + backoff,
                };
                self.store
                    .after_poll(t, lease_until, &update, now_ms)
                    .await?;
                tracing::warn!(trigger = %t.id, error = %e, "trigger poll failed");
                return Ok(None);
            }
        };
        let diff = items::diff(t, &items);
        for (key, item) in &diff.fire {
            let msg = event_message(t, item, key, now_ms);
            self.outbox.enqueue(&msg, now_ms).await?;
        }
        let update = PollUpdate {
            seen: Some(diff.seen),
            baseline: true,
            failures: 0,
            error: None,
            fired: !diff.fire.is_empty(),
            next_ms: now_ms + POLL_INTERVAL_MS,
        };
        self.store
            .after_poll(t, lease_until, &update, now_ms)
            .await?;
        Ok(Some(diff.fire.len()))
    }
}
