//! The triggers service: creating, listing and managing an account's triggers, the webhook
//! ingress ([`ingress`]), the jobs round's polling ([`poll`]) and deliveries ([`deliver`]).
//!
//! Deliveries go through the outbox (`platform_domain::webhooks`): a message is written first and
//! sent by a later step of the round, so nothing detected is lost. Types and rules are the
//! domain's (`platform_domain::triggers`); REST answers are `platform-http`'s.

mod deliver;
mod ingress;
mod poll;

use std::sync::Arc;

use platform_domain::apps::{Catalog, canonical_or_same};
use platform_domain::clock::Clock;
use platform_domain::connections::ConnectionStore;
use platform_domain::events::{self, Event, EventStore, TRIGGER_DISABLED};
use platform_domain::ids;
use platform_domain::secrets::SecretBox;
use platform_domain::triggers::{
    self, EventDef, EventKind, MAX_TRIGGERS, MAX_URL_LEN, Trigger, TriggerError, TriggerStore,
    events_for_app,
};
use platform_domain::webhooks::{self, NewMessage, OutboxStore};
use platform_domain::{Repositories, StoreError};
use serde_json::{Value, json};

use crate::outbound::{Outbound, OutboundError};

pub use ingress::{HookTrigger, Ingested};
pub use poll::{ListSource, PollError, UrlListSource};

/// Why a trigger request is refused.
#[derive(Debug, thiserror::Error)]
pub enum TriggersError {
    #[error("no app {0:?}")]
    AppNotFound(String),
    #[error("{app} has no event {event:?}")]
    UnknownEvent {
        app: String,
        event: String,
        /// The events the app offers.
        offered: Vec<String>,
    },
    #[error("webhook_url is longer than {MAX_URL_LEN} characters")]
    UrlTooLong,
    #[error("webhook_url is not a valid URL: {0}")]
    UrlInvalid(String),
    #[error("webhook_url cannot be used: {0}")]
    UrlUnusable(String),
    #[error("the platform will not send webhooks to this URL: {0}")]
    UrlRefused(String),
    #[error("no connection {0:?}")]
    ConnectionNotFound(String),
    #[error("connection {id:?} is not a connection to {app}")]
    ConnectionAppMismatch { id: String, app: String },
    #[error("the account has {MAX_TRIGGERS} triggers already")]
    LimitReached,
    #[error("no trigger {0:?}")]
    NotFound(String),
    #[error("the cursor is not one this API issued")]
    InvalidCursor,
    /// Unknown trigger or wrong ingress token: the same answer for both.
    #[error("no trigger ingress at this URL")]
    HookNotFound,
    #[error("the trigger is disabled")]
    Disabled,
    #[error(transparent)]
    Trigger(#[from] TriggerError),
}

impl From<StoreError> for TriggersError {
    fn from(e: StoreError) -> Self {
        TriggersError::Trigger(TriggerError::Store(e))
    }
}

/// What a new trigger is.
#[derive(Debug, Clone, Copy)]
pub struct NewTrigger<'a> {
    pub app: &'a str,
    pub event: &'a str,
    pub webhook_url: &'a str,
    pub connection_id: Option<&'a str>,
    pub filter: Option<&'a Value>,
    pub params: Option<&'a Value>,
}

/// A trigger just created, with what is shown only now: its signing secret and, for a webhook
/// trigger, its ingress URL.
#[derive(Debug)]
pub struct Created {
    pub trigger: Trigger,
    pub secret: String,
    pub hook_url: Option<String>,
}

pub struct Triggers {
    store: Arc<dyn TriggerStore>,
    outbox: Arc<dyn OutboxStore>,
    events: Arc<dyn EventStore>,
    connections: Arc<dyn ConnectionStore>,
    catalog: Arc<dyn Catalog>,
    clock: Arc<dyn Clock>,
    outbound: Arc<Outbound>,
    sealer: Arc<dyn SecretBox>,
    /// Origin of public URLs (`hook_url`); without it the ingress URL is given as a path.
    public_base_url: Option<String>,
}

impl Triggers {
    /// The service over `store`; `public_base_url` is the origin of the ingress URLs it hands out.
    pub fn new(
        store: impl Repositories + 'static,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        outbound: Arc<Outbound>,
        sealer: Arc<dyn SecretBox>,
        public_base_url: Option<String>,
    ) -> Self {
        Self::with_store(
            Arc::new(store),
            (catalog, clock),
            outbound,
            sealer,
            public_base_url,
        )
    }

    /// [`Triggers::new`] over a store already shared.
    pub fn with_store(
        store: Arc<dyn Repositories>,
        (catalog, clock): (Arc<dyn Catalog>, Arc<dyn Clock>),
        outbound: Arc<Outbound>,
        sealer: Arc<dyn SecretBox>,
        public_base_url: Option<String>,
    ) -> Self {
        Self {
            store: store.clone(),
            outbox: store.clone(),
            events: store.clone(),
            connections: store,
            catalog,
            clock,
            outbound,
            sealer,
            public_base_url: public_base_url.map(|u| u.trim_end_matches('/').to_string()),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// `GET /triggers/events?app=`: the events `app` offers.
    pub fn app_events(&self, app: &str) -> Result<Vec<EventDef>, TriggersError> {
        let Some(app) = self.catalog.canonical_app(app) else {
            return Err(TriggersError::AppNotFound(app.to_owned()));
        };
        Ok(events_for_app(self.catalog.as_ref(), &app))
    }

    /// `GET /events`: the account's latest events.
    pub async fn account_events(
        &self,
        account_id: &str,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        events::list_events(self.events.as_ref(), account_id, limit).await
    }

    /// `POST /triggers`.
    pub async fn create(
        &self,
        account_id: &str,
        new: NewTrigger<'_>,
    ) -> Result<Created, TriggersError> {
        // A trigger belongs to the product app, whichever of its ids the caller used.
        let Some(app) = self.catalog.canonical_app(new.app) else {
            return Err(TriggersError::AppNotFound(new.app.to_owned()));
        };
        let new = NewTrigger { app: &app, ..new };
        let offered = events_for_app(self.catalog.as_ref(), new.app);
        let Some(def) = offered.iter().find(|e| e.name == new.event) else {
            return Err(TriggersError::UnknownEvent {
                app: new.app.to_owned(),
                event: new.event.to_owned(),
                offered: offered.into_iter().map(|e| e.name).collect(),
            });
        };
        self.check_webhook_url(new.webhook_url)?;
        if let Some(cid) = new.connection_id {
            self.check_connection(account_id, new.app, cid).await?;
        }
        if self.store.count_triggers(account_id).await? >= MAX_TRIGGERS {
            return Err(TriggersError::LimitReached);
        }
        let now = self.clock.now_ms();
        let id = triggers::new_id();
        let secret = webhooks::new_secret();
        let sealed_secret = self
            .sealer
            .seal(secret.as_bytes(), &triggers::secret_context(&id))
            .await
            .map_err(|_| TriggerError::Seal)?;
        let trigger = Trigger {
            id: id.clone(),
            account_id: account_id.to_owned(),
            app: new.app.to_owned(),
            event: new.event.to_owned(),
            kind: def.kind,
            tool: def.tool.clone(),
            connection_id: new.connection_id.map(str::to_owned),
            webhook_url: new.webhook_url.to_owned(),
            filter: new.filter.cloned(),
            params: new.params.cloned(),
            active: true,
            disabled_reason: None,
            created_at_ms: now,
            last_poll_ms: None,
            last_event_ms: None,
            last_delivery_ms: None,
            last_error: None,
            poll_failures: 0,
            delivery_failures: 0,
            baseline: false,
            seen: Vec::new(),
            sealed_secret,
        };
        let token = (def.kind == EventKind::Webhook).then(|| ids::random_token(32));
        let token_hash = token.as_deref().map(ids::sha256_hex);
        self.store
            .put_trigger(&trigger, token_hash.as_deref())
            .await?;
        tracing::info!(trigger = %id, app = new.app, event = new.event, "trigger created");
        let hook_url = token.map(|token| {
            let path = format!("/hooks/{id}/{token}");
            match &self.public_base_url {
                Some(base) => format!("{base}{path}"),
                None => path,
            }
        });
        Ok(Created {
            trigger,
            secret,
            hook_url,
        })
    }

    /// A webhook URL must be short, valid and a destination the outbound guard allows.
    pub fn check_webhook_url(&self, url: &str) -> Result<(), TriggersError> {
        if url.len() > MAX_URL_LEN {
            return Err(TriggersError::UrlTooLong);
        }
        match self.outbound.check_url(url) {
            Ok(_) => Ok(()),
            Err(OutboundError::Refused { reason, .. }) => Err(TriggersError::UrlRefused(reason)),
            Err(OutboundError::InvalidUrl(e)) => Err(TriggersError::UrlInvalid(e)),
            Err(e) => Err(TriggersError::UrlUnusable(e.to_string())),
        }
    }

    async fn check_connection(
        &self,
        account_id: &str,
        app: &str,
        id: &str,
    ) -> Result<(), TriggersError> {
        match self.connections.get_connection(account_id, id).await? {
            None => Err(TriggersError::ConnectionNotFound(id.to_owned())),
            Some(c) if canonical_or_same(self.catalog.as_ref(), &c.app) != app => {
                Err(TriggersError::ConnectionAppMismatch {
                    id: id.to_owned(),
                    app: app.to_owned(),
                })
            }
            Some(_) => Ok(()),
        }
    }

    /// One trigger of the account (strongly consistent); `None` for an id that is not one.
    pub async fn get(&self, account_id: &str, id: &str) -> Result<Option<Trigger>, StoreError> {
        if !id.starts_with(triggers::ID_PREFIX) {
            return Ok(None);
        }
        Ok(self
            .store
            .get_trigger(account_id, id)
            .await?
            .map(|t| self.canonical(t)))
    }

    /// The trigger naming its app and tool as the catalog does now (a trigger stored under a
    /// former per-document id belongs to the product app). Read time only: `app` and `tool` are
    /// written when a trigger is created and never rewritten.
    pub(crate) fn canonical(&self, mut t: Trigger) -> Trigger {
        t.app = canonical_or_same(self.catalog.as_ref(), &t.app);
        if let Some(tool) = t
            .tool
            .as_deref()
            .and_then(|n| self.catalog.canonical_tool(n))
        {
            t.tool = Some(tool);
        }
        t
    }

    /// `GET /triggers`: a page of the account's triggers after the one `cursor` names, and the
    /// cursor of the next page.
    pub async fn list(
        &self,
        account_id: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Trigger>, Option<String>), TriggersError> {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let after = match cursor {
            None => None,
            Some(c) => {
                let raw = URL_SAFE_NO_PAD
                    .decode(c)
                    .map_err(|_| TriggersError::InvalidCursor)?;
                let id = String::from_utf8(raw).map_err(|_| TriggersError::InvalidCursor)?;
                if !id.starts_with(triggers::ID_PREFIX) {
                    return Err(TriggersError::InvalidCursor);
                }
                Some(id)
            }
        };
        let (page, more) = self
            .store
            .trigger_page(account_id, after.as_deref(), limit)
            .await?;
        let next = more
            .then(|| page.last().map(|t| URL_SAFE_NO_PAD.encode(&t.id)))
            .flatten();
        Ok((page.into_iter().map(|t| self.canonical(t)).collect(), next))
    }

    /// `DELETE /triggers/{id}`.
    pub async fn delete(&self, account_id: &str, id: &str) -> Result<(), TriggersError> {
        if !id.starts_with(triggers::ID_PREFIX) {
            return Err(TriggersError::NotFound(id.to_owned()));
        }
        match self.store.delete_trigger(account_id, id).await {
            Ok(()) => {
                tracing::info!(trigger = %id, "trigger deleted");
                Ok(())
            }
            Err(StoreError::NotFound(_)) => Err(TriggersError::NotFound(id.to_owned())),
            Err(e) => Err(e.into()),
        }
    }

    /// `POST /triggers/{id}/enable`: re-activates a disabled trigger (its URL checked again) and
    /// answers with the trigger as stored now.
    pub async fn enable(&self, account_id: &str, id: &str) -> Result<Trigger, TriggersError> {
        let Some(t) = self.get(account_id, id).await? else {
            return Err(TriggersError::NotFound(id.to_owned()));
        };
        if !t.active {
            // The URL may have been refused since (policy change); check it again.
            self.check_webhook_url(&t.webhook_url)?;
            match self.store.enable_trigger(&t, self.clock.now_ms()).await {
                Ok(()) => tracing::info!(trigger = %id, "trigger re-enabled"),
                // Enabled (or deleted) concurrently: answer with what is stored now.
                Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.get(account_id, id)
            .await?
            .ok_or_else(|| TriggersError::NotFound(id.to_owned()))
    }

    /// Disables `t` (it leaves the due index), records a `trigger.disabled` account event and
    /// sends it to the account's other active triggers.
    pub async fn disable(
        &self,
        t: &Trigger,
        reason: &str,
        now_ms: i64,
    ) -> Result<(), TriggerError> {
        match self.store.disable_trigger(t, reason).await {
            Ok(()) => {}
            // Already disabled (or deleted): the event was emitted then.
            Err(StoreError::Conflict(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        tracing::warn!(trigger = %t.id, reason, "trigger disabled");
        let data = json!({
            "trigger_id": t.id,
            "app": t.app,
            "event": t.event,
            "webhook_url": t.webhook_url,
            "reason": reason,
        });
        self.emit_account_event(&t.account_id, TRIGGER_DISABLED, data, now_ms)
            .await?;
        Ok(())
    }

    /// Records an account event (`GET /events`) and sends it, as a Standard Webhooks message of
    /// that type, to every active trigger of the account.
    pub async fn emit_account_event(
        &self,
        account_id: &str,
        kind: &str,
        data: Value,
        now_ms: i64,
    ) -> Result<String, TriggerError> {
        let event_id =
            events::record_event(self.events.as_ref(), account_id, kind, data.clone(), now_ms)
                .await?;
        self.fan_out_account_event(account_id, &event_id, kind, data, now_ms)
            .await?;
        Ok(event_id)
    }

    /// Enqueues an already recorded account event for every active trigger of the account.
    pub async fn fan_out_account_event(
        &self,
        account_id: &str,
        event_id: &str,
        kind: &str,
        data: Value,
        now_ms: i64,
    ) -> Result<usize, TriggerError> {
        let mut data = data;
        if let Value::Object(m) = &mut data {
            m.insert("event_id".into(), event_id.into());
        }
        let body = webhooks::envelope(kind, now_ms, data).to_string();
        let mut n_sent = 0;
        for t in self
            .store
            .all_triggers(account_id)
            .await?
            .iter()
            .filter(|t| t.active)
        {
            let msg = NewMessage {
                id: webhooks::message_id(&[event_id, &t.id]),
                account_id: account_id.to_string(),
                trigger_id: t.id.clone(),
                kind: kind.to_string(),
                body: body.clone(),
            };
            if self.outbox.enqueue(&msg, now_ms).await? {
                n_sent += 1;
            }
        }
        Ok(n_sent)
    }
}
