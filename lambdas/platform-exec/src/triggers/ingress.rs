//! The webhook ingress: an app's webhook, POSTed to `/hooks/{trigger_id}/{token}`, becomes a
//! `trigger.event` message for the trigger's receiver. The token in the path is the credential;
//! only its SHA-256 is stored, compared in constant time.

use platform_domain::ids;
use platform_domain::triggers::Trigger;
use platform_domain::triggers::items::{event_message, matches_filter};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use super::{Triggers, TriggersError};

/// What the ingress did with a webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ingested {
    /// The trigger's filter left it out.
    Filtered,
    /// Enqueued as this message.
    Enqueued(String),
}

/// A webhook trigger whose ingress token checked out ([`Triggers::check_hook`]).
#[derive(Debug, Clone)]
pub struct HookTrigger(Trigger);

impl Triggers {
    /// Finds trigger `id` and checks `token` against it (one read). An unknown trigger and a
    /// wrong token get the same answer. Split from [`Triggers::ingest`] so that the ingress can
    /// count a miss against the sender before anything else touches the store.
    pub async fn check_hook(&self, id: &str, token: &str) -> Result<HookTrigger, TriggersError> {
        let Some((t, stored)) = self.store.hook_trigger(id).await? else {
            return Err(TriggersError::HookNotFound);
        };
        let given = ids::sha256_hex(token);
        if !bool::from(stored.as_bytes().ct_eq(given.as_bytes())) {
            return Err(TriggersError::HookNotFound);
        }
        Ok(HookTrigger(t))
    }

    /// Takes the webhook `body` for a checked trigger. `sender_id` is the sender's own delivery
    /// id (its retries are then one message).
    pub async fn ingest(
        &self,
        hook: HookTrigger,
        sender_id: Option<&str>,
        body: &[u8],
    ) -> Result<Ingested, TriggersError> {
        let t = hook.0;
        if !t.active {
            return Err(TriggersError::Disabled);
        }
        let item: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => json!({ "raw": String::from_utf8_lossy(body) }),
        };
        if !matches_filter(&item, t.filter.as_ref()) {
            return Ok(Ingested::Filtered);
        }
        // Without the sender's own delivery id, each webhook is a message of its own.
        let key = sender_id
            .map(str::to_owned)
            .unwrap_or_else(|| ids::random_token(16));
        let now = self.clock.now_ms();
        let msg = event_message(&t, &item, &key, now);
        self.outbox.enqueue(&msg, now).await?;
        self.store.record_event_seen(&t, now).await?;
        Ok(Ingested::Enqueued(msg.id))
    }
}
