//! Triggers: an account asks to be told, at a webhook URL of its own, when something new appears
//! in an app: a new item in one of the app's lists (polled by the jobs function), or a webhook
//! the app sends to the trigger's ingress URL (`POST /hooks/{trigger_id}/{token}`).
//!
//! Deliveries go through the Standard Webhooks outbox of [`crate::webhooks`]. Each trigger keeps
//! health fields (`last_poll_at`, `last_event_at`, `last_error`, `consecutive_failures`, `state`)
//! so a trigger that stops working says so, and a `410 Gone` from the receiver disables it and
//! emits a `trigger.disabled` account event (the silent-trigger complaint of the notes).
//!
//! Items: `pk = acct#<account>`, `sk = trg#<id>`. Active poll triggers are in the sparse due index
//! `gsi1pk = due#trg#<shard>`, `gsi1sk = <next poll, ms, 13 digits>#<id>`; webhook triggers are
//! found by id for the ingress through `gsi1pk = hook#<id>`. Nothing scans.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use aws_sdk_dynamodb::types::ReturnValue;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog_api::Catalog;
use crate::clock::{Clock, rfc3339};
use crate::outbound::{Outbound, OutboundError};
use crate::problem::{FieldError, Problem};
use crate::sealed::Sealer;
use crate::store::{
    CONNECTION_PREFIX, DynamoStore, Item, StoreError, account_pk, get_n, get_s, n, opt_s, s,
    unavailable, write_error,
};
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK};
use crate::webhooks::{self, Attempt, Finish, Message, NewMessage};

/// How often an active poll trigger is polled.
pub const POLL_INTERVAL_MS: i64 = 60_000;
/// A poll that fails waits `POLL_INTERVAL_MS * 2^failures`, at most this long.
pub const MAX_POLL_BACKOFF_MS: i64 = 16 * 60_000;
/// A claimed trigger is hidden from other runs this long (a run that dies frees it after this).
const POLL_LEASE_MS: i64 = 5 * 60_000;
/// Consecutive failures (of polls, or of delivery attempts) after which `state` is `failing`.
pub const FAILING_AFTER: u32 = 3;
/// Item ids remembered per trigger; older ones are forgotten first.
pub const MAX_SEEN: usize = 1_000;
/// New items sent per poll; the rest stay unseen and go out with the next poll.
pub const MAX_NEW_PER_POLL: usize = 100;
/// Largest webhook the ingress accepts (the router's body limit).
pub const MAX_HOOK_BODY: usize = crate::router::MAX_BODY;
/// Triggers one account may have.
pub const MAX_TRIGGERS: usize = 100;
pub const DUE_SHARDS: u8 = 4;

const TRIGGER_PREFIX: &str = "trg#";
const WEBHOOK_EVENT: &str = "webhook";
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 100;
const MAX_URL_LEN: usize = 2_048;

// ---------------------------------------------------------------------------------------------
// Events an app offers.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Poll,
    Webhook,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Poll => "poll",
            EventKind::Webhook => "webhook",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "poll" => Some(EventKind::Poll),
            "webhook" => Some(EventKind::Webhook),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventDef {
    pub name: String,
    pub app: String,
    pub kind: EventKind,
    pub description: String,
    /// The list tool a poll event calls.
    pub tool: Option<String>,
}

impl EventDef {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "app": self.app,
            "kind": self.kind.as_str(),
            "description": self.description,
            "tool": self.tool,
        })
    }
}

fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if word.ends_with("ss") || word.ends_with("us") {
        word.to_string()
    } else if let Some(stem) = word.strip_suffix("ses") {
        format!("{stem}s")
    } else {
        word.strip_suffix('s').unwrap_or(word).to_string()
    }
}

/// The events of `app`: one poll event per list operation (a GET of a collection, named
/// `new_<resource>`), and the generic `webhook` event for whatever the app posts to the ingress.
pub fn events_for_app(catalog: &dyn Catalog, app: &str) -> Vec<EventDef> {
    let mut out: Vec<EventDef> = Vec::new();
    let mut names = HashSet::new();
    for t in catalog.tool_outlines(app) {
        if t.method.is_some_and(|m| m != "GET") {
            continue;
        }
        // A path ending in a parameter reads one item, not a list.
        if let Some(path) = &t.path {
            let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            if last.starts_with('{') {
                continue;
            }
        }
        let op = t
            .name
            .strip_prefix(app)
            .map(|r| r.trim_start_matches(['.', '_']))
            .unwrap_or(&t.name);
        let words: Vec<String> = op
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        if !words.iter().any(|w| w == "list") {
            continue;
        }
        let resource: Vec<String> = words
            .iter()
            .filter(|w| !matches!(w.as_str(), "list" | "all" | "get" | "search"))
            .cloned()
            .collect();
        let Some((last, rest)) = resource.split_last() else {
            continue;
        };
        let mut parts = rest.to_vec();
        parts.push(singular(last));
        let base = format!("new_{}", parts.join("_"));
        let mut name = base.clone();
        let mut k = 2;
        while !names.insert(name.clone()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        out.push(EventDef {
            name,
            app: app.to_string(),
            kind: EventKind::Poll,
            description: format!(
                "A new item in the list {} returns: {}",
                t.name, t.description
            ),
            tool: Some(t.name),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.push(EventDef {
        name: WEBHOOK_EVENT.into(),
        app: app.to_string(),
        kind: EventKind::Webhook,
        description: "Each webhook the app (or anything else) POSTs to the trigger's ingress URL \
                      (hook_url, shown once at creation)."
            .into(),
        tool: None,
    });
    out
}

// ---------------------------------------------------------------------------------------------
// The list source the poller calls.

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
pub trait ListSource: Send + Sync {
    fn list(
        &self,
        account_id: &str,
        tool: &str,
        params: &Value,
        connection_id: Option<&str>,
    ) -> impl Future<Output = Result<Value, PollError>> + Send;
}

impl ListSource for crate::exec::Executor {
    async fn list(
        &self,
        account_id: &str,
        tool: &str,
        params: &Value,
        connection_id: Option<&str>,
    ) -> Result<Value, PollError> {
        use crate::exec::{RunError, RunOrigin, RunRequest};
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
            keep_arguments: crate::runs::Arguments::Redacted,
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
            Err(e) => Err(PollError::Run(e.to_problem().detail)),
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

/// The items of a list answer: the array itself, or the first array of objects inside an
/// object (`{"data": [...]}`, `{"channels": [...]}`), preferring the usual names.
pub fn list_items(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        Value::Object(m) => {
            for k in ["data", "items", "results", "records", "entries", "value"] {
                if let Some(Value::Array(a)) = m.get(k) {
                    return Some(a);
                }
            }
            let arrays: Vec<&Vec<Value>> = m
                .values()
                .filter_map(|x| match x {
                    Value::Array(a) if a.iter().all(Value::is_object) => Some(a),
                    _ => None,
                })
                .collect();
            // An empty list is still the list (`{"channels": []}` before the first item).
            match arrays.as_slice() {
                [only] => Some(*only),
                _ => arrays.iter().find(|a| !a.is_empty()).copied(),
            }
        }
        _ => None,
    }
}

/// A stable key for an item: its `id` (or `uuid`, `key`, `ts`), else a hash of its content.
pub fn item_key(item: &Value) -> String {
    for k in ["id", "uuid", "key", "ts"] {
        match item.get(k) {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= 64 => return format!("{k}:{s}"),
            Some(Value::Number(x)) => return format!("{k}:{x}"),
            _ => {}
        }
    }
    // serde_json's map is ordered by key, so equal items hash equally.
    let d = Sha256::digest(item.to_string().as_bytes());
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Whether `item` passes `filter`: every member equals the item's value at that key (a top-level
/// name, or a JSON pointer starting with `/`).
pub fn matches_filter(item: &Value, filter: Option<&Value>) -> bool {
    let Some(Value::Object(f)) = filter else {
        return true;
    };
    f.iter().all(|(k, want)| {
        let got = if k.starts_with('/') {
            item.pointer(k)
        } else {
            item.get(k)
        };
        got == Some(want)
    })
}

// ---------------------------------------------------------------------------------------------
// The stored trigger.

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
    sealed_secret: String,
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

fn secret_context(id: &str) -> String {
    format!("trg#{id}")
}

fn trigger_sk(id: &str) -> String {
    format!("{TRIGGER_PREFIX}{id}")
}

fn shard_of(id: &str) -> u8 {
    Sha256::digest(id.as_bytes())[0] % DUE_SHARDS
}

fn due_pk(shard: u8) -> String {
    format!("due#trg#{shard}")
}

fn due_sk(at_ms: i64, id: &str) -> String {
    format!("{:013}#{id}", at_ms.max(0))
}

fn hook_pk(id: &str) -> String {
    format!("hook#{id}")
}

fn json_attr(item: &Item, name: &str) -> Result<Option<Value>, StoreError> {
    opt_s(item, name)
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("trigger {name}: {e}")))
}

fn trigger_from_item(item: &Item) -> Result<Trigger, StoreError> {
    let kind = get_s(item, "kind")?;
    let seen: Vec<String> = match opt_s(item, "seen") {
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| StoreError::Corrupt(format!("trigger seen: {e}")))?,
        None => Vec::new(),
    };
    Ok(Trigger {
        id: get_s(item, "trigger_id")?,
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        event: get_s(item, "event")?,
        kind: EventKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("trigger kind {kind}")))?,
        tool: opt_s(item, "tool"),
        connection_id: opt_s(item, "connection_id"),
        webhook_url: get_s(item, "webhook_url")?,
        filter: json_attr(item, "filter")?,
        params: json_attr(item, "params")?,
        active: get_s(item, "status")? == "active",
        disabled_reason: opt_s(item, "disabled_reason"),
        created_at_ms: get_n(item, "created_at_ms")?,
        last_poll_ms: get_n(item, "last_poll_ms").ok(),
        last_event_ms: get_n(item, "last_event_ms").ok(),
        last_delivery_ms: get_n(item, "last_delivery_ms").ok(),
        last_error: opt_s(item, "last_error"),
        poll_failures: get_n(item, "poll_failures").unwrap_or(0),
        delivery_failures: get_n(item, "delivery_failures").unwrap_or(0),
        baseline: get_n::<u8>(item, "baseline").unwrap_or(0) == 1,
        seen,
        sealed_secret: get_s(item, "secret")?,
    })
}

fn random_token(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

fn new_trigger_id() -> String {
    let mut b = [0u8; 10];
    rand::rng().fill_bytes(&mut b);
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("trg_{hex}")
}

fn token_hash(token: &str) -> String {
    let d = Sha256::digest(token.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// Errors of the service.

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot seal or open a trigger secret")]
    Seal,
}

fn store_problem(e: &StoreError) -> Problem {
    tracing::error!(error = %e, "trigger store failure");
    Problem::unavailable()
}

fn trigger_error_problem(e: &TriggerError) -> Problem {
    match e {
        TriggerError::Store(e) => store_problem(e),
        TriggerError::Seal => {
            tracing::error!("trigger secret sealing failed");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "secrets_unavailable",
                "The platform could not protect the trigger's secret; retry shortly.",
            )
        }
    }
}

fn not_found(id: &str) -> Problem {
    Problem::not_found(
        "trigger_not_found",
        format!("No trigger {id:?} in this account; GET /triggers lists them."),
    )
}

/// What a trigger route answers: a status and a JSON body (none for 204).
pub struct Answer {
    pub status: StatusCode,
    pub body: Option<Value>,
    /// `Allow` for a 405.
    pub allow: Option<&'static str>,
}

impl Answer {
    fn ok(v: Value) -> Self {
        Self {
            status: StatusCode::OK,
            body: Some(v),
            allow: None,
        }
    }
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

// ---------------------------------------------------------------------------------------------
// The service.

pub struct Triggers {
    store: DynamoStore,
    catalog: Arc<dyn Catalog>,
    clock: Arc<dyn Clock>,
    outbound: Arc<Outbound>,
    sealer: Arc<Sealer>,
    /// Origin of public URLs (`hook_url`); without it the ingress URL is given as a path.
    public_base_url: Option<String>,
    create_request: jsonschema::Validator,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    OpenApi(#[from] crate::openapi::OpenApiError),
}

impl Triggers {
    pub fn new(
        store: DynamoStore,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        outbound: Arc<Outbound>,
        sealer: Arc<Sealer>,
        public_base_url: Option<String>,
    ) -> Result<Self, StartError> {
        let doc: Value = serde_json::from_str(crate::openapi::DOCUMENT)
            .map_err(crate::openapi::OpenApiError::from)?;
        Ok(Self {
            store,
            catalog,
            clock,
            outbound,
            sealer,
            public_base_url: public_base_url.map(|u| u.trim_end_matches('/').to_string()),
            create_request: crate::openapi::component_validator(&doc, "CreateTriggerRequest")?,
        })
    }

    pub fn store(&self) -> &DynamoStore {
        &self.store
    }

    // -- REST --------------------------------------------------------------------------------

    /// Answers `/api/v1/triggers…` and `/api/v1/events` (`rest` is the path below `/api/v1`)
    /// for an authenticated account.
    pub async fn api(
        &self,
        method: &Method,
        rest: &str,
        query: Option<&str>,
        headers: &HeaderMap,
        body: &Bytes,
        account_id: &str,
    ) -> Result<Answer, Problem> {
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let allow = |m: &'static str| Answer {
            status: StatusCode::METHOD_NOT_ALLOWED,
            body: None,
            allow: Some(m),
        };
        match (segments.as_slice(), method) {
            (["events"], &Method::GET) => {
                let q = parse_query(query, &["limit"])?;
                let limit = page_limit(&q)?;
                self.events(account_id, limit).await
            }
            (["events"], _) => Ok(allow("GET")),
            (["triggers", "events"], &Method::GET) => {
                let q = parse_query(query, &["app"])?;
                let Some(app) = q.get("app") else {
                    return Err(Problem::bad_request(
                        "missing_parameter",
                        "Give the app: GET /triggers/events?app=<app id>.",
                    ));
                };
                self.app_events(app)
            }
            (["triggers", "events"], _) => Ok(allow("GET")),
            (["triggers"], &Method::GET) => {
                let q = parse_query(query, &["cursor", "limit"])?;
                let limit = page_limit(&q)?;
                self.list(account_id, q.get("cursor").map(String::as_str), limit)
                    .await
            }
            (["triggers"], &Method::POST) => {
                parse_query(query, &[])?;
                let body = json_body(headers, body, &self.create_request)?;
                self.create(account_id, &body).await
            }
            (["triggers"], _) => Ok(allow("GET, POST")),
            (["triggers", id], &Method::GET) => {
                parse_query(query, &[])?;
                match self.get(account_id, id).await {
                    Ok(Some(t)) => Ok(Answer::ok(t.to_json())),
                    Ok(None) => Err(not_found(id)),
                    Err(e) => Err(store_problem(&e)),
                }
            }
            (["triggers", id], &Method::DELETE) => {
                parse_query(query, &[])?;
                self.delete(account_id, id).await
            }
            (["triggers", _], _) => Ok(allow("GET, DELETE")),
            (["triggers", id, "enable"], &Method::POST) => {
                parse_query(query, &[])?;
                self.enable(account_id, id).await
            }
            (["triggers", _, "enable"], _) => Ok(allow("POST")),
            _ => Err(Problem::not_found(
                "not_found",
                format!("No endpoint /api/v1{rest}."),
            )),
        }
    }

    fn app_events(&self, app: &str) -> Result<Answer, Problem> {
        if self.catalog.app(app).is_none() {
            return Err(Problem::not_found(
                "app_not_found",
                format!("No app {app:?} in the catalog; GET /apps?search= finds app ids."),
            ));
        }
        let events: Vec<Value> = events_for_app(self.catalog.as_ref(), app)
            .iter()
            .map(EventDef::to_json)
            .collect();
        Ok(Answer::ok(json!({ "events": events })))
    }

    async fn events(&self, account_id: &str, limit: usize) -> Result<Answer, Problem> {
        let events = crate::events::list_events(&self.store, account_id, limit)
            .await
            .map_err(|e| store_problem(&e))?;
        let events: Vec<Value> = events.iter().map(|e| e.to_json()).collect();
        Ok(Answer::ok(json!({ "events": events })))
    }

    async fn create(&self, account_id: &str, body: &Value) -> Result<Answer, Problem> {
        // The schema guarantees the types below.
        let app = body["app"].as_str().unwrap_or_default();
        let event = body["event"].as_str().unwrap_or_default();
        let url = body["webhook_url"].as_str().unwrap_or_default();
        let connection_id = body.get("connection_id").and_then(Value::as_str);
        let filter = body.get("filter").cloned();
        let params = body.get("params").cloned();

        if self.catalog.app(app).is_none() {
            return Err(Problem::not_found(
                "app_not_found",
                format!("No app {app:?} in the catalog; GET /apps?search= finds app ids."),
            ));
        }
        let events = events_for_app(self.catalog.as_ref(), app);
        let Some(def) = events.iter().find(|e| e.name == event) else {
            let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
            return Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_event",
                format!(
                    "{app} has no event {event:?}; it offers: {}. See GET /triggers/events?app={app}.",
                    names.join(", ")
                ),
            )
            .with_errors(vec![FieldError {
                pointer: "/event".into(),
                detail: "not an event of this app".into(),
            }]));
        };
        check_webhook_url(&self.outbound, url)?;
        if let Some(cid) = connection_id {
            self.check_connection(account_id, app, cid).await?;
        }
        let count = self
            .count(account_id)
            .await
            .map_err(|e| store_problem(&e))?;
        if count >= MAX_TRIGGERS {
            return Err(Problem::new(
                StatusCode::CONFLICT,
                "trigger_limit_reached",
                format!("An account may have {MAX_TRIGGERS} triggers; delete one first."),
            ));
        }

        let now = self.clock.now_ms();
        let id = new_trigger_id();
        let secret = webhooks::new_secret();
        let sealed = self
            .sealer
            .seal(secret.as_bytes(), &secret_context(&id))
            .await
            .map_err(|_| trigger_error_problem(&TriggerError::Seal))?;
        let mut item = HashMap::from([
            (PK.to_owned(), s(account_pk(account_id))),
            (SK.to_owned(), s(trigger_sk(&id))),
            ("trigger_id".to_owned(), s(&id)),
            ("account_id".to_owned(), s(account_id)),
            ("app".to_owned(), s(app)),
            ("event".to_owned(), s(event)),
            ("kind".to_owned(), s(def.kind.as_str())),
            ("webhook_url".to_owned(), s(url)),
            ("status".to_owned(), s("active")),
            ("secret".to_owned(), s(sealed)),
            ("created_at_ms".to_owned(), n(now)),
            ("poll_failures".to_owned(), n(0)),
            ("delivery_failures".to_owned(), n(0)),
            ("baseline".to_owned(), n(0)),
        ]);
        if let Some(tool) = &def.tool {
            item.insert("tool".into(), s(tool));
        }
        if let Some(c) = connection_id {
            item.insert("connection_id".into(), s(c));
        }
        if let Some(f) = &filter {
            item.insert("filter".into(), s(f.to_string()));
        }
        if let Some(p) = &params {
            item.insert("params".into(), s(p.to_string()));
        }
        let mut hook_token = None;
        match def.kind {
            EventKind::Poll => {
                // Due at once: the first poll records what exists (the baseline) without firing.
                item.insert(GSI1_PK.into(), s(due_pk(shard_of(&id))));
                item.insert(GSI1_SK.into(), s(due_sk(now, &id)));
            }
            EventKind::Webhook => {
                let token = random_token(32);
                item.insert("hook_token_hash".into(), s(token_hash(&token)));
                item.insert(GSI1_PK.into(), s(hook_pk(&id)));
                item.insert(GSI1_SK.into(), s(account_pk(account_id)));
                hook_token = Some(token);
            }
        }
        let stored = trigger_from_item(&item).map_err(|e| store_problem(&e))?;
        self.store
            .client()
            .put_item()
            .table_name(self.store.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| store_problem(&write_error(e, "trigger id taken")))?;
        tracing::info!(trigger = %id, app, event, "trigger created");

        let mut v = stored.to_json();
        v["secret"] = secret.into();
        if let Some(token) = hook_token {
            let path = format!("/hooks/{id}/{token}");
            v["hook_url"] = match &self.public_base_url {
                Some(base) => format!("{base}{path}"),
                None => path,
            }
            .into();
        }
        Ok(Answer {
            status: StatusCode::CREATED,
            body: Some(v),
            allow: None,
        })
    }

    async fn check_connection(&self, account_id: &str, app: &str, id: &str) -> Result<(), Problem> {
        let got = self
            .store
            .client()
            .get_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(format!("{CONNECTION_PREFIX}{id}")))
            .send()
            .await
            .map_err(|e| store_problem(&unavailable(e)))?;
        match got.item() {
            None => Err(Problem::not_found(
                "connection_not_found",
                format!("No connection {id:?} in this account; GET /connections lists them."),
            )),
            Some(item) if opt_s(item, "app").as_deref() != Some(app) => Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "connection_app_mismatch",
                format!("Connection {id:?} is not a connection to {app}."),
            )),
            Some(_) => Ok(()),
        }
    }

    async fn count(&self, account_id: &str) -> Result<usize, StoreError> {
        let out = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :t)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":t", s(TRIGGER_PREFIX))
            .select(aws_sdk_dynamodb::types::Select::Count)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(usize::try_from(out.count()).unwrap_or(0))
    }

    /// One trigger of the account (strongly consistent).
    pub async fn get(&self, account_id: &str, id: &str) -> Result<Option<Trigger>, StoreError> {
        if !id.starts_with("trg_") {
            return Ok(None);
        }
        let got = self
            .store
            .client()
            .get_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(trigger_sk(id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        got.item().map(trigger_from_item).transpose()
    }

    async fn all_of(&self, account_id: &str) -> Result<Vec<Trigger>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .store
                .client()
                .query()
                .table_name(self.store.table())
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :t)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(account_pk(account_id)))
                .expression_attribute_values(":t", s(TRIGGER_PREFIX))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items() {
                out.push(trigger_from_item(item)?);
            }
            match page.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    async fn list(
        &self,
        account_id: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Answer, Problem> {
        let bad_cursor = || {
            Problem::bad_request(
                "invalid_cursor",
                "The cursor is not one this API issued; start again without it.",
            )
        };
        let start = match cursor {
            None => None,
            Some(c) => {
                let raw = URL_SAFE_NO_PAD.decode(c).map_err(|_| bad_cursor())?;
                let id = String::from_utf8(raw).map_err(|_| bad_cursor())?;
                if !id.starts_with("trg_") {
                    return Err(bad_cursor());
                }
                Some(HashMap::from([
                    (PK.to_owned(), s(account_pk(account_id))),
                    (SK.to_owned(), s(trigger_sk(&id))),
                ]))
            }
        };
        let page = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :t)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":t", s(TRIGGER_PREFIX))
            .set_exclusive_start_key(start)
            .limit(i32::try_from(limit).unwrap_or(50))
            .send()
            .await
            .map_err(|e| store_problem(&unavailable(e)))?;
        let triggers: Vec<Trigger> = page
            .items()
            .iter()
            .map(trigger_from_item)
            .collect::<Result<_, _>>()
            .map_err(|e| store_problem(&e))?;
        let next = match page.last_evaluated_key() {
            Some(k) if !k.is_empty() => triggers.last().map(|t| URL_SAFE_NO_PAD.encode(&t.id)),
            _ => None,
        };
        let list: Vec<Value> = triggers.iter().map(Trigger::to_json).collect();
        Ok(Answer::ok(json!({"triggers": list, "next_cursor": next})))
    }

    async fn delete(&self, account_id: &str, id: &str) -> Result<Answer, Problem> {
        if !id.starts_with("trg_") {
            return Err(not_found(id));
        }
        let res = self
            .store
            .client()
            .delete_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(trigger_sk(id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        match res {
            Ok(_) => {
                tracing::info!(trigger = %id, "trigger deleted");
                Ok(Answer {
                    status: StatusCode::NO_CONTENT,
                    body: None,
                    allow: None,
                })
            }
            Err(e) => match write_error(e, "no such trigger") {
                StoreError::Conflict(_) => Err(not_found(id)),
                other => Err(store_problem(&other)),
            },
        }
    }

    async fn enable(&self, account_id: &str, id: &str) -> Result<Answer, Problem> {
        let Some(t) = self
            .get(account_id, id)
            .await
            .map_err(|e| store_problem(&e))?
        else {
            return Err(not_found(id));
        };
        if !t.active {
            // The URL may have been refused since (policy change); check it again.
            check_webhook_url(&self.outbound, &t.webhook_url)?;
            let now = self.clock.now_ms();
            let mut u = self
                .store
                .client()
                .update_item()
                .table_name(self.store.table())
                .key(PK, s(account_pk(account_id)))
                .key(SK, s(trigger_sk(id)))
                .condition_expression("attribute_exists(#pk) AND #st = :disabled")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#st", "status")
                .expression_attribute_values(":disabled", s("disabled"))
                .expression_attribute_values(":active", s("active"))
                .expression_attribute_values(":zero", n(0));
            u = match t.kind {
                EventKind::Poll => u
                    .update_expression(
                        "SET #st = :active, poll_failures = :zero, delivery_failures = :zero, \
                         #g = :due, #gs = :at REMOVE disabled_reason",
                    )
                    .expression_attribute_names("#g", GSI1_PK)
                    .expression_attribute_names("#gs", GSI1_SK)
                    .expression_attribute_values(":due", s(due_pk(shard_of(id))))
                    .expression_attribute_values(":at", s(due_sk(now, id))),
                EventKind::Webhook => u.update_expression(
                    "SET #st = :active, poll_failures = :zero, delivery_failures = :zero \
                     REMOVE disabled_reason",
                ),
            };
            match u.send().await {
                Ok(_) => tracing::info!(trigger = %id, "trigger re-enabled"),
                Err(e) => match write_error(e, "changed meanwhile") {
                    // Enabled (or deleted) concurrently: answer with what is stored now.
                    StoreError::Conflict(_) => {}
                    other => return Err(store_problem(&other)),
                },
            }
        }
        match self.get(account_id, id).await {
            Ok(Some(t)) => Ok(Answer::ok(t.to_json())),
            Ok(None) => Err(not_found(id)),
            Err(e) => Err(store_problem(&e)),
        }
    }

    // -- Ingress -------------------------------------------------------------------------------

    /// `POST /hooks/{trigger_id}/{token}`: an app's webhook, fanned out as a `trigger.event`.
    /// `tail` is the path after `/hooks/`. An unknown trigger and a wrong token get the same 404.
    pub async fn ingress(
        &self,
        method: &Method,
        tail: &str,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<Answer, Problem> {
        let gone = || {
            Problem::not_found(
                "hook_not_found",
                "No trigger ingress at this URL (unknown trigger or wrong token).",
            )
        };
        let parts: Vec<&str> = tail.split('/').collect();
        let [id, token] = parts.as_slice() else {
            return Err(gone());
        };
        if method != Method::POST {
            return Ok(Answer {
                status: StatusCode::METHOD_NOT_ALLOWED,
                body: None,
                allow: Some("POST"),
            });
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if body.len() > MAX_HOOK_BODY || declared > MAX_HOOK_BODY as u64 {
            return Err(Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("Webhooks are limited to {MAX_HOOK_BODY} bytes."),
            ));
        }
        if !id.starts_with("trg_") || token.is_empty() {
            return Err(gone());
        }
        let found = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .index_name(GSI1)
            .key_condition_expression("#g = :h")
            .expression_attribute_names("#g", GSI1_PK)
            .expression_attribute_values(":h", s(hook_pk(id)))
            .limit(1)
            .send()
            .await
            .map_err(|e| store_problem(&unavailable(e)))?;
        let Some(item) = found.items().first() else {
            return Err(gone());
        };
        let stored = opt_s(item, "hook_token_hash").unwrap_or_default();
        let given = token_hash(token);
        if !bool::from(stored.as_bytes().ct_eq(given.as_bytes())) {
            return Err(gone());
        }
        let t = trigger_from_item(item).map_err(|e| store_problem(&e))?;
        if !t.active {
            return Err(Problem::new(
                StatusCode::CONFLICT,
                "trigger_disabled",
                "The trigger is disabled; its owner can re-enable it.",
            ));
        }
        let item_value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => json!({ "raw": String::from_utf8_lossy(body) }),
        };
        if !matches_filter(&item_value, t.filter.as_ref()) {
            return Ok(Answer {
                status: StatusCode::ACCEPTED,
                body: Some(json!({"accepted": true, "filtered": true, "message_id": null})),
                allow: None,
            });
        }
        // The sender's own delivery id makes its retries one message; otherwise each is new.
        let sender_id = headers
            .get("webhook-id")
            .or_else(|| headers.get("x-github-delivery"))
            .or_else(|| headers.get("idempotency-key"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .unwrap_or_else(|| random_token(16));
        let now = self.clock.now_ms();
        let msg = event_message(&t, &item_value, &sender_id, now);
        webhooks::enqueue(&self.store, &msg, now)
            .await
            .map_err(|e| store_problem(&e))?;
        self.record_event_seen(&t, now)
            .await
            .map_err(|e| store_problem(&e))?;
        Ok(Answer {
            status: StatusCode::ACCEPTED,
            body: Some(json!({"accepted": true, "filtered": false, "message_id": msg.id})),
            allow: None,
        })
    }

    async fn record_event_seen(&self, t: &Trigger, now: i64) -> Result<(), StoreError> {
        self.store
            .client()
            .update_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(&t.account_id)))
            .key(SK, s(trigger_sk(&t.id)))
            .update_expression("SET last_event_ms = :now")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| write_error(e, "trigger gone"))
            .or_else(|e| match e {
                StoreError::Conflict(_) => Ok(()),
                other => Err(other),
            })
    }

    // -- Jobs: polling ----------------------------------------------------------------------

    /// Polls up to `limit` triggers due at `now_ms` with `source`, starting none after `until`
    /// (a claimed trigger left over is polled by a later round once its lease ends).
    pub async fn poll_due(
        &self,
        source: &impl ListSource,
        now_ms: i64,
        limit: usize,
        until: Instant,
    ) -> Result<PollReport, TriggerError> {
        let mut report = PollReport::default();
        for t in self.claim_due_triggers(now_ms, limit).await? {
            if Instant::now() >= until {
                break;
            }
            report.polled += 1;
            match self.poll_one(source, &t, now_ms).await? {
                Some(fired) => report.new_items += fired,
                None => report.failed += 1,
            }
        }
        Ok(report)
    }

    async fn claim_due_triggers(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<Trigger>, StoreError> {
        let mut out = Vec::new();
        for shard in 0..DUE_SHARDS {
            if out.len() >= limit {
                break;
            }
            let page = self
                .store
                .client()
                .query()
                .table_name(self.store.table())
                .index_name(GSI1)
                .key_condition_expression("#g = :due AND #gs <= :now")
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#gs", GSI1_SK)
                .expression_attribute_values(":due", s(due_pk(shard)))
                .expression_attribute_values(":now", s(format!("{:013}~", now_ms.max(0))))
                .limit(i32::try_from(limit - out.len()).unwrap_or(100))
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items() {
                let (Some(pk), Some(sk), Some(seen), Some(id)) = (
                    item.get(PK).cloned(),
                    item.get(SK).cloned(),
                    opt_s(item, GSI1_SK),
                    opt_s(item, "trigger_id"),
                ) else {
                    continue;
                };
                let res = self
                    .store
                    .client()
                    .update_item()
                    .table_name(self.store.table())
                    .key(PK, pk)
                    .key(SK, sk)
                    .update_expression("SET #gs = :lease")
                    .condition_expression("#gs = :seen AND #st = :active")
                    .expression_attribute_names("#gs", GSI1_SK)
                    .expression_attribute_names("#st", "status")
                    .expression_attribute_values(":seen", s(seen))
                    .expression_attribute_values(":active", s("active"))
                    .expression_attribute_values(":lease", s(due_sk(now_ms + POLL_LEASE_MS, &id)))
                    .return_values(ReturnValue::AllNew)
                    .send()
                    .await;
                match res {
                    Ok(r) => match r.attributes().map(trigger_from_item) {
                        Some(Ok(t)) => out.push(t),
                        Some(Err(e)) => tracing::error!(error = %e, "malformed trigger"),
                        None => {}
                    },
                    Err(e) => match write_error(e, "claimed elsewhere") {
                        StoreError::Conflict(_) => {}
                        other => return Err(other),
                    },
                }
            }
        }
        Ok(out)
    }

    /// Polls one claimed trigger; returns how many new items were enqueued, or `None` if the
    /// list could not be read (recorded in the trigger's health).
    async fn poll_one(
        &self,
        source: &impl ListSource,
        t: &Trigger,
        now_ms: i64,
    ) -> Result<Option<usize>, TriggerError> {
        let lease = due_sk(now_ms + POLL_LEASE_MS, &t.id);
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
                self.after_poll(
                    t,
                    &lease,
                    PollUpdate {
                        seen: None,
                        baseline: t.baseline,
                        failures,
                        error: Some(format!("poll: {e}")),
                        fired: false,
                        next_ms: now_ms + backoff,
                    },
                    now_ms,
                )
                .await?;
                tracing::warn!(trigger = %t.id, error = %e, "trigger poll failed");
                return Ok(None);
            }
        };
        let keyed: Vec<(String, &Value)> = items.iter().map(|i| (item_key(i), i)).collect();
        let seen: HashSet<&str> = t.seen.iter().map(String::as_str).collect();
        let mut fired = 0;
        let mut newly_seen: Vec<String> = Vec::new();
        if t.baseline {
            for (key, item) in &keyed {
                if seen.contains(key.as_str()) || newly_seen.contains(key) {
                    continue;
                }
                if fired >= MAX_NEW_PER_POLL {
                    // Left unseen: it goes out with the next poll.
                    continue;
                }
                if matches_filter(item, t.filter.as_ref()) {
                    let msg = event_message(t, item, key, now_ms);
                    webhooks::enqueue(&self.store, &msg, now_ms).await?;
                    fired += 1;
                }
                newly_seen.push(key.clone());
            }
        } else {
            newly_seen = keyed.iter().map(|(k, _)| k.clone()).collect();
        }
        // Newest knowledge first: what the list holds now, then what was seen before.
        let mut merged: Vec<String> = Vec::new();
        let mut set = HashSet::new();
        for k in keyed
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| seen.contains(k.as_str()) || newly_seen.contains(k))
            .chain(t.seen.iter().cloned())
        {
            if set.insert(k.clone()) {
                merged.push(k);
            }
        }
        merged.truncate(MAX_SEEN);
        self.after_poll(
            t,
            &lease,
            PollUpdate {
                seen: Some(merged),
                baseline: true,
                failures: 0,
                error: None,
                fired: fired > 0,
                next_ms: now_ms + POLL_INTERVAL_MS,
            },
            now_ms,
        )
        .await?;
        Ok(Some(fired))
    }

    async fn after_poll(
        &self,
        t: &Trigger,
        lease: &str,
        u: PollUpdate,
        now_ms: i64,
    ) -> Result<(), TriggerError> {
        let mut set = vec![
            "last_poll_ms = :now",
            "poll_failures = :f",
            "baseline = :b",
            "#gs = :next",
        ];
        let mut remove = Vec::new();
        let mut req = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(&t.account_id)))
            .key(SK, s(trigger_sk(&t.id)))
            .condition_expression("#st = :active AND #gs = :lease")
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#gs", GSI1_SK)
            .expression_attribute_values(":active", s("active"))
            .expression_attribute_values(":lease", s(lease))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":f", n(u.failures))
            .expression_attribute_values(":b", n(u8::from(u.baseline)))
            .expression_attribute_values(":next", s(due_sk(u.next_ms, &t.id)));
        if let Some(seen) = &u.seen {
            set.push("seen = :seen");
            req = req.expression_attribute_values(
                ":seen",
                s(serde_json::to_string(seen).unwrap_or_else(|_| "[]".into())),
            );
        }
        if u.fired {
            set.push("last_event_ms = :now");
        }
        match &u.error {
            Some(e) => {
                set.push("last_error = :err");
                req = req.expression_attribute_values(":err", s(e));
            }
            // A success clears the error only if deliveries are not failing too.
            None if t.delivery_failures == 0 => remove.push("last_error"),
            None => {}
        }
        let mut expr = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expr.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        match req.update_expression(expr).send().await {
            Ok(_) => Ok(()),
            Err(e) => match write_error(e, "trigger changed") {
                // Disabled or deleted while polling: nothing to record.
                StoreError::Conflict(_) => Ok(()),
                other => Err(other.into()),
            },
        }
    }

    // -- Jobs: deliveries ---------------------------------------------------------------------

    /// Attempts up to `limit` due outbox messages.
    pub async fn deliver_due(
        &self,
        now_ms: i64,
        limit: usize,
        until: Instant,
    ) -> Result<DeliveryReport, TriggerError> {
        let mut report = DeliveryReport::default();
        for msg in webhooks::claim_due(&self.store, now_ms, limit).await? {
            if Instant::now() >= until {
                break;
            }
            report.attempted += 1;
            let outcome = self.deliver_one(&msg, now_ms).await?;
            match outcome {
                Finish::Delivered { .. } => report.delivered += 1,
                Finish::Retry { .. } => report.retrying += 1,
                Finish::Failed { .. } => report.failed += 1,
                Finish::Cancelled { .. } => report.cancelled += 1,
            }
        }
        Ok(report)
    }

    async fn deliver_one(&self, msg: &Message, now_ms: i64) -> Result<Finish, TriggerError> {
        let t = self.get(&msg.account_id, &msg.trigger_id).await?;
        let Some(t) = t.filter(|t| t.active) else {
            let outcome = Finish::Cancelled {
                reason: "the trigger was deleted or disabled".into(),
            };
            webhooks::finish(&self.store, msg, &outcome, now_ms).await?;
            return Ok(outcome);
        };
        let secret = self
            .sealer
            .open(&t.sealed_secret, &secret_context(&t.id))
            .await
            .map_err(|_| TriggerError::Seal)?;
        let secret = String::from_utf8(secret).map_err(|_| TriggerError::Seal)?;
        let attempt = webhooks::attempt(&self.outbound, &t.webhook_url, &secret, msg, now_ms).await;
        let outcome = match &attempt {
            Attempt::Success(status) => Finish::Delivered { status: *status },
            Attempt::Gone => Finish::Failed {
                error: "the endpoint answered 410 Gone".into(),
            },
            Attempt::Failure {
                error,
                retry_after_s,
            } => match webhooks::next_attempt_at(msg.attempts + 1, now_ms, *retry_after_s) {
                Some(at_ms) => Finish::Retry {
                    at_ms,
                    error: error.clone(),
                },
                None => Finish::Failed {
                    error: format!("gave up after {} attempts: {error}", msg.attempts + 1),
                },
            },
        };
        webhooks::finish(&self.store, msg, &outcome, now_ms).await?;
        tracing::info!(
            trigger = %t.id,
            message = %msg.id,
            attempt = msg.attempts + 1,
            outcome = ?outcome,
            "webhook delivery attempt"
        );
        match attempt {
            Attempt::Success(_) => self.delivery_health(&t, None, now_ms).await?,
            Attempt::Gone => self.disable(&t, "endpoint_gone", now_ms).await?,
            Attempt::Failure { error, .. } => {
                self.delivery_health(&t, Some(format!("delivery: {error}")), now_ms)
                    .await?
            }
        }
        Ok(outcome)
    }

    async fn delivery_health(
        &self,
        t: &Trigger,
        error: Option<String>,
        now_ms: i64,
    ) -> Result<(), TriggerError> {
        let req = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(&t.account_id)))
            .key(SK, s(trigger_sk(&t.id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK);
        let req = match error {
            Some(e) => req
                .update_expression("SET last_error = :e ADD delivery_failures :one")
                .expression_attribute_values(":e", s(e))
                .expression_attribute_values(":one", n(1)),
            None if t.poll_failures == 0 => req
                .update_expression(
                    "SET last_delivery_ms = :now, delivery_failures = :zero REMOVE last_error",
                )
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":zero", n(0)),
            None => req
                .update_expression("SET last_delivery_ms = :now, delivery_failures = :zero")
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":zero", n(0)),
        };
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) => match write_error(e, "trigger gone") {
                StoreError::Conflict(_) => Ok(()),
                other => Err(other.into()),
            },
        }
    }

    /// Disables `t` (it leaves the due index), records a `trigger.disabled` account event and
    /// sends it to the account's other active triggers.
    pub async fn disable(
        &self,
        t: &Trigger,
        reason: &str,
        now_ms: i64,
    ) -> Result<(), TriggerError> {
        let mut req = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table())
            .key(PK, s(account_pk(&t.account_id)))
            .key(SK, s(trigger_sk(&t.id)))
            .condition_expression("#st = :active")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":active", s("active"))
            .expression_attribute_values(":disabled", s("disabled"))
            .expression_attribute_values(":reason", s(reason))
            .expression_attribute_values(":err", s(format!("disabled: {reason}")));
        req = match t.kind {
            // Poll triggers leave the due index; webhook triggers keep their lookup entry so the
            // ingress can say "disabled" rather than "unknown".
            EventKind::Poll => req
                .update_expression(
                    "SET #st = :disabled, disabled_reason = :reason, last_error = :err \
                     REMOVE #g, #gs",
                )
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#gs", GSI1_SK),
            EventKind::Webhook => req.update_expression(
                "SET #st = :disabled, disabled_reason = :reason, last_error = :err",
            ),
        };
        match req.send().await {
            Ok(_) => {}
            Err(e) => {
                return match write_error(e, "not active") {
                    // Already disabled (or deleted): the event was emitted then.
                    StoreError::Conflict(_) => Ok(()),
                    other => Err(other.into()),
                };
            }
        }
        tracing::warn!(trigger = %t.id, reason, "trigger disabled");
        let data = json!({
            "trigger_id": t.id,
            "app": t.app,
            "event": t.event,
            "webhook_url": t.webhook_url,
            "reason": reason,
        });
        self.emit_account_event(&t.account_id, "trigger.disabled", data, now_ms)
            .await?;
        Ok(())
    }

    /// Records an account event (`GET /events`) and sends it, as a Standard Webhooks message of
    /// that type, to every active trigger of the account.
    ///
    /// MERGE NOTE (lead): `connection.expired` (H1) should be emitted through this function, or
    /// `events::record_event` should call [`Triggers::fan_out_account_event`], so that triggers'
    /// receivers hear about it too.
    pub async fn emit_account_event(
        &self,
        account_id: &str,
        kind: &str,
        data: Value,
        now_ms: i64,
    ) -> Result<String, TriggerError> {
        let event_id =
            crate::events::record_event(&self.store, account_id, kind, data.clone(), now_ms)
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
        for t in self.all_of(account_id).await?.iter().filter(|t| t.active) {
            let msg = NewMessage {
                id: webhooks::message_id(&[event_id, &t.id]),
                account_id: account_id.to_string(),
                trigger_id: t.id.clone(),
                kind: kind.to_string(),
                body: body.clone(),
            };
            if webhooks::enqueue(&self.store, &msg, now_ms).await? {
                n_sent += 1;
            }
        }
        Ok(n_sent)
    }

    /// One jobs round: poll due triggers, then attempt due deliveries (including what the polls
    /// just enqueued). Repeats each step while it finds a full batch, and starts no poll or
    /// delivery after `until` (the caller leaves room for one request's timeout after it).
    pub async fn run_round(
        &self,
        source: &impl ListSource,
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
}

struct PollUpdate {
    seen: Option<Vec<String>>,
    baseline: bool,
    failures: u32,
    error: Option<String>,
    fired: bool,
    next_ms: i64,
}

/// The `trigger.event` message for `item`, with an id derived from the trigger and `key`.
fn event_message(t: &Trigger, item: &Value, key: &str, now_ms: i64) -> NewMessage {
    let data = json!({
        "trigger_id": t.id,
        "app": t.app,
        "event": t.event,
        "item": item,
    });
    NewMessage {
        id: webhooks::message_id(&[&t.id, key]),
        account_id: t.account_id.clone(),
        trigger_id: t.id.clone(),
        kind: "trigger.event".into(),
        body: webhooks::envelope("trigger.event", now_ms, data).to_string(),
    }
}

fn check_webhook_url(outbound: &Outbound, url: &str) -> Result<(), Problem> {
    let invalid = |detail: String| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_webhook_url",
            detail,
        )
        .with_errors(vec![FieldError {
            pointer: "/webhook_url".into(),
            detail: "not a usable URL".into(),
        }])
    };
    if url.len() > MAX_URL_LEN {
        return Err(invalid(format!(
            "webhook_url is longer than {MAX_URL_LEN} characters."
        )));
    }
    match outbound.check_url(url) {
        Ok(_) => Ok(()),
        Err(OutboundError::Refused { reason, .. }) => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "destination_refused",
            format!("The platform will not send webhooks to this URL: {reason}."),
        )
        .with_errors(vec![FieldError {
            pointer: "/webhook_url".into(),
            detail: reason,
        }])),
        Err(OutboundError::InvalidUrl(e)) => {
            Err(invalid(format!("webhook_url is not a valid URL: {e}.")))
        }
        Err(e) => Err(invalid(format!("webhook_url cannot be used: {e}."))),
    }
}

fn parse_query(query: Option<&str>, allowed: &[&str]) -> Result<HashMap<String, String>, Problem> {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if !allowed.contains(&k.as_ref()) {
            return Err(Problem::bad_request(
                "unknown_parameter",
                format!(
                    "Unknown query parameter {k:?}; this endpoint accepts: {}.",
                    if allowed.is_empty() {
                        "none".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ));
        }
        if out.insert(k.to_string(), v.into_owned()).is_some() {
            return Err(Problem::bad_request(
                "invalid_parameter",
                format!("Query parameter {k:?} is given more than once."),
            ));
        }
    }
    Ok(out)
}

fn page_limit(q: &HashMap<String, String>) -> Result<usize, Problem> {
    match q.get("limit") {
        None => Ok(DEFAULT_PAGE),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                Problem::bad_request(
                    "invalid_parameter",
                    format!("limit must be an integer from 1 to {MAX_PAGE}, not {v:?}."),
                )
            }),
    }
}

fn json_body(
    headers: &HeaderMap,
    body: &Bytes,
    validator: &jsonschema::Validator,
) -> Result<Value, Problem> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence != "application/json" {
        return Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Send the body as JSON with Content-Type: application/json.",
        ));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        Problem::bad_request(
            "malformed_json",
            format!("The body is not valid JSON: {e}."),
        )
    })?;
    let errors = crate::openapi::violations(validator, &v);
    if !errors.is_empty() {
        return Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "The body does not match the request schema; see errors.",
        )
        .with_errors(errors));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_catalog::StaticCatalog;

    #[test]
    fn list_tools_become_new_item_events_and_every_app_has_the_webhook_event() {
        let c = StaticCatalog::from_json(
            br#"{"apps":[{"id":"github","name":"GitHub","description":"","tools":[
                {"name":"github_list_pull_requests","description":"List PRs."},
                {"name":"github_create_issue","description":"Create an issue."},
                {"name":"github_list_issues","description":"List issues."}]}]}"#,
        )
        .unwrap();
        let ev = events_for_app(&c, "github");
        let names: Vec<&str> = ev.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["new_issue", "new_pull_request", "webhook"]);
        assert_eq!(ev[1].tool.as_deref(), Some("github_list_pull_requests"));
        assert_eq!(ev[2].kind, EventKind::Webhook);
    }

    #[test]
    fn items_are_found_in_arrays_and_wrapped_lists_and_keyed_stably() {
        let wrapped = json!({"ok": true, "channels": [{"id": "C1"}, {"id": "C2"}]});
        assert_eq!(list_items(&wrapped).map(Vec::len), Some(2));
        assert_eq!(list_items(&json!({"data": []})).map(Vec::len), Some(0));
        assert_eq!(
            list_items(&json!({"ok": true, "channels": []})).map(Vec::len),
            Some(0)
        );
        assert!(list_items(&json!({"ok": true})).is_none());
        assert_eq!(item_key(&json!({"id": 7})), "id:7");
        assert_eq!(item_key(&json!({"id": "C1"})), "id:C1");
        let a = item_key(&json!({"x": 1, "y": 2}));
        assert_eq!(a, item_key(&json!({"y": 2, "x": 1})));
        assert!(a.starts_with("sha256:"));
    }

    #[test]
    fn filters_compare_top_level_names_and_pointers() {
        let item = json!({"state": "open", "user": {"login": "ada"}});
        assert!(matches_filter(&item, None));
        assert!(matches_filter(&item, Some(&json!({"state": "open"}))));
        assert!(matches_filter(&item, Some(&json!({"/user/login": "ada"}))));
        assert!(!matches_filter(&item, Some(&json!({"state": "closed"}))));
        assert!(!matches_filter(&item, Some(&json!({"missing": 1}))));
    }
}
