//! The commerce endpoints (`/agent/commerce/...`) and MCP tools, over a [`Backend`] that owns
//! the network, the clock, the idempotency store and the catalogue cache. The Worker glue
//! implements it with `worker::Fetch` and a Durable Object; host tests with a scripted Stripe.
//!
//! Errors are RFC 9457 problems with a stable `code` member (ACP's error codes where ACP has
//! one) and, for UCP, a `content` copy of the detail; see the README for the table.

use crate::catalog::{self, Catalog, Kind};
use crate::checkout::{self, BodyError, Checkout, Protocol, ReturnUrls, State};
use crate::config::Config;
use crate::idempotency::{self, Begin, StoredReply};
use crate::problem::CONTENT_TYPE as PROBLEM;
use crate::reply::Reply;
use crate::request::Request;
use crate::stripe::{
    self, CheckoutSession, HttpAnswer, HttpCall, List, Price, StripeError, TransportError,
};
use crate::tools::{ToolBox, ToolOutcome, ToolSpec};
use serde_json::{Value, json};
use std::future::Future;

pub const PRODUCTS_PATH: &str = "/agent/commerce/products";
pub const UCP_BASE: &str = "/agent/commerce/ucp";
pub const ACP_BASE: &str = "/agent/commerce/acp";
const UCP_SESSIONS: &str = "/agent/commerce/ucp/checkout-sessions";
const ACP_SESSIONS: &str = "/agent/commerce/acp/checkout_sessions";
/// Seconds a client should wait after Stripe failed.
const RETRY_AFTER_S: &str = "10";
/// Most price pages read for one catalogue (100 prices each).
const MAX_PRICE_PAGES: usize = 10;

/// What the commerce code needs from its host.
pub trait Backend {
    fn now_ms(&self) -> u64;
    /// Sends one request to Stripe, within [`stripe::TIMEOUT_MS`].
    fn send(&self, call: HttpCall) -> impl Future<Output = Result<HttpAnswer, TransportError>>;
    /// Starts a keyed request (see [`idempotency::begin`]); `Err` when the store is unreachable.
    fn idem_begin(
        &self,
        key: &str,
        fingerprint: &str,
    ) -> impl Future<Output = Result<Begin, String>>;
    /// Stores the answer of a keyed request (2xx–4xx) or forgets the key (5xx).
    fn idem_finish(
        &self,
        key: &str,
        fingerprint: &str,
        reply: Option<StoredReply>,
    ) -> impl Future<Output = ()>;
    fn cached_catalog(&self) -> Option<Catalog>;
    fn store_catalog(&self, catalog: &Catalog);
    /// Records an operational event (server-side failures); never called with secrets.
    fn log(&self, line: &str);
}

/// A backend without network or storage, for code paths that never reach commerce.
pub struct Offline;

impl Backend for Offline {
    fn now_ms(&self) -> u64 {
        0
    }
    async fn send(&self, _call: HttpCall) -> Result<HttpAnswer, TransportError> {
        Err(TransportError::Network("offline".into()))
    }
    async fn idem_begin(&self, _key: &str, _fp: &str) -> Result<Begin, String> {
        Err("offline".into())
    }
    async fn idem_finish(&self, _key: &str, _fp: &str, _reply: Option<StoredReply>) {}
    fn cached_catalog(&self) -> Option<Catalog> {
        None
    }
    fn store_catalog(&self, _catalog: &Catalog) {}
    fn log(&self, _line: &str) {}
}

/// A problem+json reply with a stable `code` (and the UCP-style `content`).
fn problem(status: u16, title: &str, code: &str, detail: impl Into<String>) -> Reply {
    let detail = detail.into();
    let body = json!({
        "type": "about:blank", "title": title, "status": status, "detail": detail,
        "code": code, "content": detail,
    });
    Reply::new(
        status,
        PROBLEM,
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

fn with_member(reply: Reply, name: &str, value: Value) -> Reply {
    let mut reply = reply;
    if let Ok(Value::Object(mut o)) = serde_json::from_slice::<Value>(&reply.body) {
        o.insert(name.into(), value);
        reply.body = serde_json::to_vec(&o).unwrap_or_default();
    }
    reply
}

fn json_reply(status: u16, v: &Value) -> Reply {
    Reply::new(
        status,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

fn stripe_problem(e: &StripeError) -> Reply {
    if e.is_unavailable() {
        let detail = match e {
            StripeError::NotConfigured => "The shop is not configured yet; try again later.".into(),
            e if e.is_auth() => {
                "The shop's payment set-up is not working; nothing was charged. Try again later."
                    .into()
            }
            _ => format!(
                "The payment processor is unavailable ({e}); nothing was charged. Retry after \
                 {RETRY_AFTER_S} seconds."
            ),
        };
        return problem(503, "Service Unavailable", "service_unavailable", detail)
            .with_header("retry-after", RETRY_AFTER_S);
    }
    if e.is_missing() {
        return problem(404, "Not Found", "not_found", "No such checkout session.");
    }
    if let StripeError::Api { kind, .. } = e
        && kind == "idempotency_error"
    {
        return problem(
            422,
            "Unprocessable Content",
            "idempotency_conflict",
            "This Idempotency-Key was already used with a different request.",
        );
    }
    problem(
        502,
        "Bad Gateway",
        "processing_error",
        format!("The payment processor refused the request: {e}"),
    )
}

fn body_problem(e: &BodyError) -> Reply {
    let r = problem(400, "Bad Request", e.code(), e.to_string());
    match e.param() {
        Some(p) => with_member(r, "param", json!(p)),
        None => r,
    }
}

fn payment_problem(found: &str) -> Reply {
    problem(
        400,
        "Bad Request",
        "payment_not_accepted",
        format!(
            "Payment credentials were sent ({found}). {}",
            checkout::PAYMENT_PATH
        ),
    )
}

/// Loads the catalogue from the cache or Stripe.
pub async fn catalog<B: Backend>(cfg: &Config, b: &B) -> Result<Catalog, StripeError> {
    let s = cfg.stripe.as_ref().ok_or(StripeError::NotConfigured)?;
    let now = b.now_ms();
    if let Some(c) = b.cached_catalog()
        && c.is_fresh(now, cfg.catalog_ttl_ms)
    {
        return Ok(c);
    }
    let mut prices: Vec<Price> = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PRICE_PAGES {
        let page: List<Price> = stripe::decode(b.send(s.list_prices(after.as_deref())).await)?;
        let more = page.has_more;
        after = page.data.last().map(|p| p.id.clone());
        prices.extend(page.data);
        if !more || after.is_none() {
            break;
        }
    }
    let c = catalog::from_prices(&prices, now);
    if cfg.catalog_ttl_ms > 0 {
        b.store_catalog(&c);
    }
    Ok(c)
}

/// Why a checkout could not be created, as a problem.
enum CreateError {
    Body(BodyError),
    UnknownOffer(String),
    Unavailable(String),
    Quantity(String),
    Currency(String),
    Stripe(StripeError),
    Session(String),
}

impl CreateError {
    fn reply(&self) -> Reply {
        match self {
            Self::Body(e) => body_problem(e),
            Self::UnknownOffer(id) => with_member(
                problem(
                    422,
                    "Unprocessable Content",
                    "unknown_offer",
                    format!(
                        "No offer {id:?}. List the offers with GET {PRODUCTS_PATH} (MCP: list_products)."
                    ),
                ),
                "param",
                json!("line_items[0].id"),
            ),
            Self::Unavailable(id) => problem(
                409,
                "Conflict",
                "out_of_stock",
                format!(
                    "Offer {id:?} is not available right now; see {PRODUCTS_PATH} for what is."
                ),
            ),
            Self::Quantity(d) => with_member(
                problem(400, "Bad Request", "invalid", d.clone()),
                "param",
                json!("line_items[0].quantity"),
            ),
            Self::Currency(d) => with_member(
                problem(400, "Bad Request", "invalid", d.clone()),
                "param",
                json!("currency"),
            ),
            Self::Stripe(e) => stripe_problem(e),
            Self::Session(d) => problem(502, "Bad Gateway", "processing_error", d.clone()),
        }
    }

    fn message(&self) -> String {
        let r = self.reply();
        serde_json::from_slice::<Value>(&r.body)
            .ok()
            .and_then(|v| v["detail"].as_str().map(str::to_string))
            .unwrap_or_else(|| "checkout failed".into())
    }
}

/// Creates a Stripe Checkout Session for a parsed request.
async fn create<B: Backend>(
    cfg: &Config,
    b: &B,
    base: &str,
    body: &Value,
    protocol: Protocol,
    idempotency_key: Option<&str>,
) -> Result<Checkout, CreateError> {
    let wanted = checkout::parse_create(body).map_err(CreateError::Body)?;
    let cat = catalog(cfg, b).await.map_err(CreateError::Stripe)?;
    let offer = cat
        .find(&wanted.line.offer_id)
        .ok_or_else(|| CreateError::UnknownOffer(wanted.line.offer_id.clone()))?;
    if !offer.available {
        return Err(CreateError::Unavailable(offer.id.clone()));
    }
    if offer.kind == Kind::Subscription && wanted.line.quantity != 1 {
        return Err(CreateError::Quantity(
            "A plan is bought one at a time: quantity must be 1.".into(),
        ));
    }
    if let Some(c) = &wanted.currency
        && *c != offer.price.currency
    {
        return Err(CreateError::Currency(format!(
            "Offer {} is priced in {}, not {c}.",
            offer.id, offer.price.currency
        )));
    }
    let s = cfg
        .stripe
        .as_ref()
        .ok_or(CreateError::Stripe(StripeError::NotConfigured))?;
    let form = checkout::session_form(
        offer,
        wanted.line.quantity,
        wanted.email.as_deref(),
        &ReturnUrls::for_site(base),
        protocol,
        &cfg.shipping_countries,
    );
    let session: CheckoutSession = stripe::decode(
        b.send(s.create_checkout_session(&form, idempotency_key))
            .await,
    )
    .map_err(CreateError::Stripe)?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64)
        .map_err(|e| CreateError::Session(e.to_string()))
}

/// Reads a checkout live from Stripe.
async fn read<B: Backend>(cfg: &Config, b: &B, id: &str) -> Result<Checkout, Reply> {
    let not_found = || {
        problem(
            404,
            "Not Found",
            "not_found",
            format!("No checkout session {id}."),
        )
    };
    if !stripe::valid_session_id(id) {
        return Err(not_found());
    }
    let s = cfg
        .stripe
        .as_ref()
        .ok_or_else(|| stripe_problem(&StripeError::NotConfigured))?;
    let session: CheckoutSession =
        stripe::decode(b.send(s.get_checkout_session(id)).await).map_err(|e| stripe_problem(&e))?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64).map_err(|_| not_found())
}

/// Expires an open session on Stripe.
async fn cancel<B: Backend>(
    cfg: &Config,
    b: &B,
    id: &str,
    key: Option<&str>,
) -> Result<Checkout, Reply> {
    let s = cfg
        .stripe
        .as_ref()
        .ok_or_else(|| stripe_problem(&StripeError::NotConfigured))?;
    let session: CheckoutSession = stripe::decode(b.send(s.expire_checkout_session(id, key)).await)
        .map_err(|e| stripe_problem(&e))?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64)
        .map_err(|e| problem(502, "Bad Gateway", "processing_error", e.to_string()))
}

/// The binding of one request.
#[derive(Clone, Copy)]
enum Binding {
    Ucp,
    Acp(&'static str),
}

impl Binding {
    fn render(self, c: &Checkout, base: &str) -> Value {
        match self {
            Self::Ucp => c.to_ucp(base),
            Self::Acp(v) => c.to_acp(base, v),
        }
    }

    fn protocol(self) -> Protocol {
        match self {
            Self::Ucp => Protocol::Ucp,
            Self::Acp(_) => Protocol::Acp,
        }
    }

    fn version(self) -> &'static str {
        match self {
            Self::Ucp => checkout::UCP_VERSION,
            Self::Acp(v) => v,
        }
    }
}

/// Routes a commerce request; `None` when the path is not ours.
pub async fn route<B: Backend>(req: &Request, cfg: &Config, base: &str, b: &B) -> Option<Reply> {
    let path = req.path.as_str();
    if path == PRODUCTS_PATH {
        return Some(match req.method.as_str() {
            "GET" | "HEAD" => {
                let r = products(cfg, b).await;
                log_failure(b, "GET products", &r);
                r
            }
            "OPTIONS" => preflight(),
            _ => method_not_allowed(req, "GET, HEAD"),
        });
    }
    let (binding_kind, rest) = if let Some(rest) = path.strip_prefix(UCP_SESSIONS) {
        ("ucp", rest)
    } else if let Some(rest) = path.strip_prefix(ACP_SESSIONS) {
        ("acp", rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    if req.method == "OPTIONS" {
        return Some(preflight());
    }
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let action = match (segments.as_slice(), req.method.as_str()) {
        ([], "POST") => Action::Create,
        ([], _) => return Some(method_not_allowed(req, "POST")),
        ([id], "GET" | "HEAD") => Action::Get(id.to_string()),
        ([id], "PUT") if binding_kind == "ucp" => Action::Update(id.to_string()),
        ([id], "POST") if binding_kind == "acp" => Action::Update(id.to_string()),
        ([_], _) => {
            let allow = if binding_kind == "ucp" {
                "GET, PUT"
            } else {
                "GET, POST"
            };
            return Some(method_not_allowed(req, allow));
        }
        ([id, "complete"], "POST") => Action::Complete(id.to_string()),
        ([id, "cancel"], "POST") => Action::Cancel(id.to_string()),
        ([_, "complete" | "cancel"], _) => return Some(method_not_allowed(req, "POST")),
        _ => {
            return Some(problem(
                404,
                "Not Found",
                "not_found",
                format!("No commerce endpoint at {path}."),
            ));
        }
    };
    let reply = if binding_kind == "ucp" {
        keyed(req, cfg, base, b, Binding::Ucp, action).await
    } else {
        match checkout::acp_version(req.header("api-version")) {
            Ok(v) => keyed(req, cfg, base, b, Binding::Acp(v), action).await,
            Err(e) => with_member(
                problem(400, "Bad Request", e.code(), e.to_string()),
                "supported_versions",
                json!(checkout::newest_first()),
            ),
        }
    };
    let reply = if binding_kind == "acp" {
        let mut r = reply;
        if let Some(k) = req.header("idempotency-key") {
            r = r.set_header("idempotency-key", k);
        }
        if let Some(id) = req.header("request-id") {
            r = r.set_header("request-id", id);
        }
        r
    } else {
        reply
    };
    log_failure(b, &format!("{} {path}", req.method), &reply);
    Some(crate::headers::cors_any(reply).with_header("cache-control", "no-store"))
}

/// Logs answers that are our or Stripe's fault (5xx), with the problem's detail.
fn log_failure<B: Backend>(b: &B, what: &str, reply: &Reply) {
    if reply.status >= 500 {
        b.log(&format!(
            "commerce {what} -> {}: {}",
            reply.status,
            reply_detail(reply)
        ));
    }
}

enum Action {
    Create,
    Get(String),
    Update(String),
    Complete(String),
    Cancel(String),
}

fn method_not_allowed(req: &Request, allow: &str) -> Reply {
    problem(
        405,
        "Method Not Allowed",
        "method_not_allowed",
        format!(
            "{} is not supported at {}; use {allow}.",
            req.method, req.path
        ),
    )
    .with_header("allow", allow)
}

fn preflight() -> Reply {
    crate::headers::cors_any(Reply::empty(204))
        .with_header(
            "access-control-allow-methods",
            "GET, HEAD, POST, PUT, OPTIONS",
        )
        .with_header(
            "access-control-allow-headers",
            "Content-Type, Accept, API-Version, Idempotency-Key, Request-Id, UCP-Agent, \
             Authorization, Signature, Signature-Input, Signature-Agent, Timestamp",
        )
        .with_header("access-control-max-age", "86400")
}

async fn products<B: Backend>(cfg: &Config, b: &B) -> Reply {
    match catalog(cfg, b).await {
        Ok(c) => crate::headers::cors_any(json_reply(200, &c.to_json()))
            .with_header("cache-control", "no-cache"),
        Err(e) => crate::headers::cors_any(stripe_problem(&e)),
    }
}

/// Runs a checkout action under the request's `Idempotency-Key` (required for ACP POSTs,
/// optional for UCP).
async fn keyed<B: Backend>(
    req: &Request,
    cfg: &Config,
    base: &str,
    b: &B,
    binding: Binding,
    action: Action,
) -> Reply {
    // Payment credentials first: that explanation helps a client more than any header rule.
    if let Some(h) = checkout::payment_header(&req.headers) {
        return payment_problem(&format!("the {h} header"));
    }
    let is_post = req.method == "POST" || req.method == "PUT";
    let key = req.header("idempotency-key").map(str::trim);
    if let Some(k) = key
        && !idempotency::valid_key(k)
    {
        return problem(
            400,
            "Bad Request",
            "invalid",
            "Idempotency-Key must be 1 to 255 visible ASCII characters.",
        );
    }
    if is_post && key.is_none() && matches!(binding, Binding::Acp(_)) {
        return problem(
            400,
            "Bad Request",
            "idempotency_key_required",
            "Every POST needs an Idempotency-Key header (a unique string you reuse only to \
             retry the same request).",
        );
    }
    let key = key.filter(|_| is_post);
    let Some(key) = key else {
        return run(req, cfg, base, b, binding, &action, None).await;
    };
    let scope = match binding {
        Binding::Ucp => format!("ucp:{key}"),
        Binding::Acp(_) => format!("acp:{key}"),
    };
    let fp = idempotency::fingerprint(&req.method, &req.path, binding.version(), &req.body);
    match b.idem_begin(&scope, &fp).await {
        Ok(Begin::Proceed) => {}
        Ok(Begin::Replay { reply }) => {
            let mut r = Reply::new(reply.status, "application/json", reply.body.into_bytes());
            for (n, v) in &reply.headers {
                r = r.set_header(n, v);
            }
            return r.with_header("idempotent-replayed", "true");
        }
        Ok(Begin::InFlight) => {
            return problem(
                409,
                "Conflict",
                "idempotency_in_flight",
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            )
            .with_header("retry-after", "1");
        }
        Ok(Begin::Conflict) => {
            let status = if matches!(binding, Binding::Acp(_)) {
                422
            } else {
                409
            };
            return problem(
                status,
                if status == 422 {
                    "Unprocessable Content"
                } else {
                    "Conflict"
                },
                "idempotency_conflict",
                "This Idempotency-Key was already used with a different request.",
            );
        }
        Err(e) => {
            return problem(
                503,
                "Service Unavailable",
                "service_unavailable",
                format!("The idempotency store is unavailable ({e}); retry later."),
            )
            .with_header("retry-after", RETRY_AFTER_S);
        }
    }
    let reply = run(req, cfg, base, b, binding, &action, Some(key)).await;
    let stored = (reply.status < 500).then(|| StoredReply {
        status: reply.status,
        headers: reply
            .headers
            .iter()
            .filter(|(n, _)| n == "content-type" || n == "location" || n == "allow")
            .cloned()
            .collect(),
        body: String::from_utf8_lossy(&reply.body).into_owned(),
    });
    b.idem_finish(&scope, &fp, stored).await;
    reply
}

async fn run<B: Backend>(
    req: &Request,
    cfg: &Config,
    base: &str,
    b: &B,
    binding: Binding,
    action: &Action,
    key: Option<&str>,
) -> Reply {
    let body = match action {
        Action::Get(_) => json!({}),
        _ => match checkout::parse_object(&req.body) {
            Ok(v) => v,
            Err(e) => return body_problem(&e),
        },
    };
    if let Some(found) = checkout::payment_in_body(&body) {
        return payment_problem(&format!("the body member {found}"));
    }
    match action {
        Action::Create => match create(cfg, b, base, &body, binding.protocol(), key).await {
            Ok(c) => {
                let location = match binding {
                    Binding::Ucp => format!("{base}{UCP_SESSIONS}/{}", c.id),
                    Binding::Acp(_) => format!("{base}{ACP_SESSIONS}/{}", c.id),
                };
                json_reply(201, &binding.render(&c, base)).with_header("location", &location)
            }
            Err(e) => e.reply(),
        },
        Action::Get(id) => match read(cfg, b, id).await {
            Ok(c) => json_reply(200, &binding.render(&c, base)),
            Err(r) => r,
        },
        Action::Update(id) => {
            let c = match read(cfg, b, id).await {
                Ok(c) => c,
                Err(r) => return r,
            };
            match checkout::parse_lines(&body) {
                Err(e) => return body_problem(&e),
                Ok(Some(lines))
                    if lines.len() != 1
                        || lines[0].offer_id != c.offer_id
                        || lines[0].quantity != c.quantity =>
                {
                    return problem(
                        409,
                        "Conflict",
                        "line_items_fixed",
                        "The items of a checkout cannot change after it is created; cancel it \
                         and create a new one. Buyer details are entered on the hosted page at \
                         continue_url.",
                    );
                }
                Ok(_) => {}
            }
            json_reply(200, &binding.render(&c, base))
        }
        Action::Complete(id) => match read(cfg, b, id).await {
            Ok(c) if matches!(c.state, State::Canceled | State::Expired) => problem(
                409,
                "Conflict",
                "checkout_canceled",
                format!("Checkout {id} is canceled or expired; create a new one."),
            ),
            // Completion happens on the hosted page; this answers with where that stands
            // (requires_escalation and the link while the buyer has not paid).
            Ok(c) => json_reply(200, &binding.render(&c, base)),
            Err(r) => r,
        },
        Action::Cancel(id) => {
            let c = match read(cfg, b, id).await {
                Ok(c) => c,
                Err(r) => return r,
            };
            if c.state != State::Open {
                let status = if matches!(binding, Binding::Acp(_)) {
                    405
                } else {
                    409
                };
                let r = problem(
                    status,
                    if status == 405 {
                        "Method Not Allowed"
                    } else {
                        "Conflict"
                    },
                    "checkout_not_cancelable",
                    format!("Checkout {id} is already completed, canceled or expired."),
                );
                return if status == 405 {
                    r.with_header("allow", "GET")
                } else {
                    r
                };
            }
            match cancel(cfg, b, id, key).await {
                Ok(c) => json_reply(200, &binding.render(&c, base)),
                Err(r) => r,
            }
        }
    }
}

/// The commerce MCP tools: `list_products`, `create_checkout`, `get_checkout`.
pub struct CommerceTools<'a, B> {
    pub cfg: &'a Config,
    pub base: String,
    pub backend: &'a B,
}

/// The commerce tools' schemas, as JSON text: parsed at run time, they cost a few hundred bytes
/// of code instead of the many kilobytes `json!` expands to (the Worker has a size budget).
const SPECS_JSON: &str = include_str!("commerce_tools.json");

#[derive(serde::Deserialize)]
struct SpecText {
    input: Value,
    output: Value,
}

pub fn commerce_specs() -> Vec<ToolSpec> {
    let schemas: std::collections::BTreeMap<String, SpecText> =
        serde_json::from_str(SPECS_JSON).unwrap_or_default();
    let schema = |name: &str| {
        schemas
            .get(name)
            .map(|s| (s.input.clone(), s.output.clone()))
            .unwrap_or_else(|| (json!({"type": "object"}), json!({"type": "object"})))
    };
    let (list_in, list_out) = schema("list_products");
    let (create_in, create_out) = schema("create_checkout");
    let (get_in, get_out) = schema("get_checkout");
    vec![
        ToolSpec {
            name: "list_products",
            title: "List products",
            description: "Lists the plans (subscriptions, some with a free trial) and sensor \
                          hardware for sale, with live prices from the payment processor. Use \
                          an offer's id with create_checkout; offer only what is available.",
            input_schema: list_in,
            output_schema: list_out,
            read_only: true,
            open_world: true,
        },
        ToolSpec {
            name: "create_checkout",
            title: "Start a checkout",
            description: "Starts a checkout for one offer and returns its id and a continue_url. \
                          Give the person the continue_url: they pay (and enter email and, for \
                          hardware, a shipping address) on the payment processor's hosted page. \
                          Never send card numbers or payment tokens.",
            input_schema: create_in,
            output_schema: create_out,
            read_only: false,
            open_world: true,
        },
        ToolSpec {
            name: "get_checkout",
            title: "Read a checkout",
            description: "Reads a checkout by the id create_checkout returned: status \
                          (requires_escalation while the person has not paid, completed, \
                          canceled), total, and the continue_url while it is open.",
            input_schema: get_in,
            output_schema: get_out,
            read_only: true,
            open_world: true,
        },
    ]
}

fn reply_detail(r: &Reply) -> String {
    serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| v["detail"].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("failed with HTTP {}", r.status))
}

impl<B: Backend> ToolBox for CommerceTools<'_, B> {
    fn specs(&self) -> Vec<ToolSpec> {
        commerce_specs()
    }

    async fn call(&self, name: &str, args: &Value) -> Option<ToolOutcome> {
        if !matches!(name, "list_products" | "create_checkout" | "get_checkout") {
            return None;
        }
        if let Some(found) = checkout::payment_in_body(args) {
            return Some(ToolOutcome::Error(format!(
                "Payment credentials were sent ({found}). {}",
                checkout::PAYMENT_PATH
            )));
        }
        Some(match name {
            "list_products" => match catalog(self.cfg, self.backend).await {
                Ok(c) => ToolOutcome::Ok(c.to_json()),
                Err(e) => {
                    let r = stripe_problem(&e);
                    log_failure(self.backend, "tool list_products", &r);
                    ToolOutcome::Error(reply_detail(&r))
                }
            },
            "create_checkout" => {
                let Some(offer) = args.get("offer_id").and_then(Value::as_str) else {
                    return Some(ToolOutcome::Error(
                        "`offer_id` (an id from list_products) is required".into(),
                    ));
                };
                let body = json!({"line_items": [{"id": offer, "quantity": args.get("quantity")}]});
                match create(
                    self.cfg,
                    self.backend,
                    &self.base,
                    &body,
                    Protocol::Mcp,
                    None,
                )
                .await
                {
                    Ok(c) => match c.continue_url {
                        Some(url) => ToolOutcome::Ok(json!({"id": c.id, "continue_url": url})),
                        None => ToolOutcome::Error(format!(
                            "checkout {} has no payment link; create a new one",
                            c.id
                        )),
                    },
                    Err(e) => {
                        log_failure(self.backend, "tool create_checkout", &e.reply());
                        ToolOutcome::Error(e.message())
                    }
                }
            }
            _ => {
                let Some(id) = args.get("id").and_then(Value::as_str) else {
                    return Some(ToolOutcome::Error(
                        "`id` (the checkout id from create_checkout) is required".into(),
                    ));
                };
                match read(self.cfg, self.backend, id).await {
                    Ok(c) => ToolOutcome::Ok(c.to_tool()),
                    Err(r) => {
                        log_failure(self.backend, "tool get_checkout", &r);
                        ToolOutcome::Error(reply_detail(&r))
                    }
                }
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::tests::block_on;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A scripted Stripe and an in-memory idempotency store.
    pub(crate) struct Fake {
        pub calls: RefCell<Vec<HttpCall>>,
        pub fail: RefCell<Option<TransportError>>,
        pub records: RefCell<HashMap<String, idempotency::Record>>,
        pub cache: RefCell<Option<Catalog>>,
        pub logs: RefCell<Vec<String>>,
        pub now: u64,
    }

    impl Fake {
        pub(crate) fn new() -> Self {
            Self {
                calls: RefCell::default(),
                fail: RefCell::default(),
                records: RefCell::default(),
                cache: RefCell::default(),
                logs: RefCell::default(),
                now: 1_763_805_600_000,
            }
        }
    }

    const PRICES: &str = r#"{"object":"list","has_more":false,"data":[
      {"id":"price_pro","active":true,"currency":"usd","unit_amount":900,"lookup_key":"pro_monthly",
       "product":{"id":"prod_p","active":true,"name":"Pro","metadata":{"presence_offer":"plan"}},
       "metadata":{},"recurring":{"interval":"month","interval_count":1,"trial_period_days":14}},
      {"id":"price_hub","active":true,"currency":"usd","unit_amount":12900,
       "product":{"id":"prod_h","active":true,"name":"Hub","metadata":{"presence_offer":"hardware","availability":"out_of_stock"}},"metadata":{}}]}"#;

    fn session_from_form(body: &str, status: &str) -> Value {
        let mut meta = serde_json::Map::new();
        for (k, v) in form_urlencoded::parse(body.as_bytes()) {
            if let Some(k) = k
                .strip_prefix("metadata[")
                .and_then(|k| k.strip_suffix(']'))
            {
                meta.insert(k.to_string(), json!(v));
            }
        }
        json!({"id": "cs_test_1", "url": "https://checkout.stripe.com/c/pay/cs_test_1",
               "status": status, "expires_at": 1_763_892_000, "metadata": meta})
    }

    impl Backend for Fake {
        fn now_ms(&self) -> u64 {
            self.now
        }
        async fn send(&self, call: HttpCall) -> Result<HttpAnswer, TransportError> {
            self.calls.borrow_mut().push(call.clone());
            if let Some(e) = self.fail.borrow().clone() {
                return Err(e);
            }
            let ok = |v: Value| {
                Ok(HttpAnswer {
                    status: 200,
                    body: v.to_string().into_bytes(),
                })
            };
            if call.url.contains("/v1/prices") {
                return Ok(HttpAnswer {
                    status: 200,
                    body: PRICES.as_bytes().to_vec(),
                });
            }
            // The created session's form is the first POST; later reads return it.
            let created = self
                .calls
                .borrow()
                .iter()
                .find(|c| c.method == "POST")
                .cloned();
            match (call.method, created) {
                ("POST", Some(first)) if call.url.ends_with("/expire") => {
                    ok(session_from_form(first.body.as_deref().unwrap_or(""), "expired"))
                }
                (_, Some(first)) if call.url.contains("cs_test_1") || call.method == "POST" => {
                    ok(session_from_form(first.body.as_deref().unwrap_or(""), "open"))
                }
                _ => Ok(HttpAnswer {
                    status: 404,
                    body: br#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such checkout.session"}}"#.to_vec(),
                }),
            }
        }
        async fn idem_begin(&self, key: &str, fp: &str) -> Result<Begin, String> {
            let mut recs = self.records.borrow_mut();
            let (b, rec) = idempotency::begin(recs.get(key), fp, self.now);
            if let Some(r) = rec {
                recs.insert(key.to_string(), r);
            }
            Ok(b)
        }
        async fn idem_finish(&self, key: &str, fp: &str, reply: Option<StoredReply>) {
            let mut recs = self.records.borrow_mut();
            match reply.and_then(|r| idempotency::finish(recs.get(key), fp, r)) {
                Some(r) => {
                    recs.insert(key.to_string(), r);
                }
                None => {
                    recs.remove(key);
                }
            }
        }
        fn cached_catalog(&self) -> Option<Catalog> {
            self.cache.borrow().clone()
        }
        fn store_catalog(&self, c: &Catalog) {
            *self.cache.borrow_mut() = Some(c.clone());
        }
        fn log(&self, line: &str) {
            self.logs.borrow_mut().push(line.to_string());
        }
    }

    pub(crate) fn cfg() -> Config {
        Config::from_vars(None, None, None, None).with_commerce(
            Some("http://stripe.test".into()),
            Some("sk_test_1".into()),
            None,
            None,
        )
    }

    fn call(fake: &Fake, req: Request) -> (Reply, Value) {
        let r = block_on(route(&req, &cfg(), "https://s.test", fake)).expect("commerce route");
        let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        (r, v)
    }

    fn acp_post(path: &str, body: &str, key: &str) -> Request {
        Request::new("POST", path)
            .with_header("api-version", "2026-01-30")
            .with_header("idempotency-key", key)
            .with_body(body.as_bytes().to_vec())
    }

    #[test]
    fn products_come_from_stripe_and_are_cached() {
        let fake = Fake::new();
        let (r, v) = call(&fake, Request::new("GET", PRODUCTS_PATH));
        assert_eq!(r.status, 200);
        assert_eq!(v["offers"][0]["id"], "pro_monthly");
        assert_eq!(v["offers"][1]["available"], false);
        call(&fake, Request::new("GET", PRODUCTS_PATH));
        assert_eq!(
            fake.calls.borrow().len(),
            1,
            "second read served from the cache"
        );
    }

    #[test]
    fn stripe_down_is_a_503_with_retry_after() {
        let fake = Fake::new();
        *fake.fail.borrow_mut() = Some(TransportError::Timeout(stripe::TIMEOUT_MS));
        let (r, v) = call(&fake, Request::new("GET", PRODUCTS_PATH));
        assert_eq!(r.status, 503);
        assert_eq!(r.header("retry-after"), Some(RETRY_AFTER_S));
        assert_eq!(v["code"], "service_unavailable");
        let logs = fake.logs.borrow();
        assert_eq!(logs.len(), 1);
        assert!(
            logs[0].starts_with("commerce GET products -> 503"),
            "{logs:?}"
        );
        assert!(!logs[0].contains("sk_test_1"));
    }

    #[test]
    fn acp_create_is_idempotent_and_forwards_the_key() {
        let fake = Fake::new();
        let body = r#"{"items":[{"id":"pro_monthly","quantity":1}]}"#;
        let (r, v) = call(&fake, acp_post(ACP_SESSIONS, body, "k1"));
        assert_eq!(r.status, 201, "{v}");
        assert_eq!(v["status"], "requires_escalation");
        assert_eq!(
            v["continue_url"],
            "https://checkout.stripe.com/c/pay/cs_test_1"
        );
        assert_eq!(r.header("idempotency-key"), Some("k1"));
        let post = fake
            .calls
            .borrow()
            .iter()
            .find(|c| c.method == "POST")
            .cloned()
            .unwrap();
        assert_eq!(post.header("idempotency-key"), Some("k1"));
        assert!(
            post.body
                .unwrap()
                .contains("subscription_data[trial_period_days]=14")
        );
        let n = fake.calls.borrow().len();
        let (again, v2) = call(&fake, acp_post(ACP_SESSIONS, body, "k1"));
        assert_eq!(again.status, 201);
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        assert_eq!(v2, v);
        assert_eq!(
            fake.calls.borrow().len(),
            n,
            "a replay does not reach Stripe"
        );
        let (conflict, cv) = call(
            &fake,
            acp_post(ACP_SESSIONS, r#"{"items":[{"id":"x"}]}"#, "k1"),
        );
        assert_eq!(conflict.status, 422);
        assert_eq!(cv["code"], "idempotency_conflict");
    }

    #[test]
    fn acp_requires_version_and_key() {
        let fake = Fake::new();
        let (r, v) = call(
            &fake,
            Request::new("POST", ACP_SESSIONS).with_header("idempotency-key", "k"),
        );
        assert_eq!(r.status, 400);
        assert_eq!(v["code"], "missing_api_version");
        assert_eq!(v["supported_versions"][0], "2026-04-17");
        let (r, v) = call(
            &fake,
            Request::new("POST", ACP_SESSIONS).with_header("api-version", "2026-01-30"),
        );
        assert_eq!(r.status, 400);
        assert_eq!(v["code"], "idempotency_key_required");
        assert!(fake.calls.borrow().is_empty());
    }

    #[test]
    fn bad_requests_get_clear_problems() {
        let fake = Fake::new();
        let ucp =
            |body: &str| Request::new("POST", UCP_SESSIONS).with_body(body.as_bytes().to_vec());
        let (r, v) = call(&fake, ucp(r#"{"line_items":[{"item":{"id":"nope"}}]}"#));
        assert_eq!((r.status, v["code"].as_str()), (422, Some("unknown_offer")));
        let (r, v) = call(
            &fake,
            ucp(r#"{"line_items":[{"item":{"id":"price_hub"}}]}"#),
        );
        assert_eq!((r.status, v["code"].as_str()), (409, Some("out_of_stock")));
        let (r, v) = call(&fake, ucp("{not json"));
        assert_eq!((r.status, v["code"].as_str()), (400, Some("invalid_body")));
        let (r, v) = call(
            &fake,
            ucp(
                r#"{"line_items":[{"item":{"id":"pro_monthly"}}],"payment":{"instruments":[{"id":"tok"}]}}"#,
            ),
        );
        assert_eq!(
            (r.status, v["code"].as_str()),
            (400, Some("payment_not_accepted"))
        );
        assert!(v["detail"].as_str().unwrap().contains("continue_url"));
        let (r, v) = call(
            &fake,
            ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"},"quantity":2}]}"#),
        );
        assert_eq!((r.status, v["code"].as_str()), (400, Some("invalid")));
        let (r, _) = call(
            &fake,
            ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#)
                .with_header("X-PAYMENT", "abc"),
        );
        assert_eq!(r.status, 400);
        assert!(
            !fake.calls.borrow().iter().any(|c| c.method == "POST"),
            "nothing reached checkout"
        );
    }

    #[test]
    fn ucp_flow_create_get_complete_cancel() {
        let fake = Fake::new();
        let (r, v) = call(
            &fake,
            Request::new("POST", UCP_SESSIONS).with_body(
                br#"{"line_items":[{"item":{"id":"pro_monthly"},"quantity":1}]}"#.to_vec(),
            ),
        );
        assert_eq!(r.status, 201, "{v}");
        assert_eq!(v["status"], "requires_escalation");
        let path = format!("{UCP_SESSIONS}/cs_test_1");
        let (_, got) = call(&fake, Request::new("GET", &path));
        assert_eq!(got, v);
        let (r, done) = call(&fake, Request::new("POST", &format!("{path}/complete")));
        assert_eq!(r.status, 200);
        assert_eq!(done["continue_url"], v["continue_url"]);
        let (r, _) = call(
            &fake,
            Request::new("PUT", &path)
                .with_body(br#"{"line_items":[{"item":{"id":"other"}}]}"#.to_vec()),
        );
        assert_eq!(r.status, 409);
        let (r, c) = call(&fake, Request::new("POST", &format!("{path}/cancel")));
        assert_eq!(r.status, 200);
        assert_eq!(c["status"], "canceled");
        let (r, _) = call(
            &fake,
            Request::new("GET", &format!("{UCP_SESSIONS}/cs_other")),
        );
        assert_eq!(r.status, 404);
        let (r, _) = call(
            &fake,
            Request::new("GET", &format!("{UCP_SESSIONS}/..%2Fv1")),
        );
        assert_eq!(r.status, 404);
    }

    #[test]
    fn tool_schemas_parse_and_match_the_limits() {
        let specs = commerce_specs();
        assert_eq!(specs.len(), 3);
        for s in &specs {
            assert_eq!(s.input_schema["type"], "object", "{}", s.name);
            assert_eq!(s.output_schema["type"], "object", "{}", s.name);
            assert!(
                s.output_schema.get("required").is_some(),
                "{} parsed",
                s.name
            );
        }
        assert_eq!(
            specs[1].input_schema["properties"]["quantity"]["maximum"],
            checkout::MAX_QUANTITY
        );
    }

    #[test]
    fn mcp_tools_return_only_the_link_and_id() {
        let fake = Fake::new();
        let c = cfg();
        let tools = CommerceTools {
            cfg: &c,
            base: "https://s.test".into(),
            backend: &fake,
        };
        let out = block_on(tools.call("create_checkout", &json!({"offer_id": "pro_monthly"})));
        match out {
            Some(ToolOutcome::Ok(v)) => {
                assert_eq!(
                    v,
                    json!({"id": "cs_test_1", "continue_url": "https://checkout.stripe.com/c/pay/cs_test_1"})
                );
            }
            other => panic!("{other:?}"),
        }
        let got = block_on(tools.call("get_checkout", &json!({"id": "cs_test_1"})));
        assert!(matches!(got, Some(ToolOutcome::Ok(v)) if v["status"] == "requires_escalation"));
        let bad = block_on(tools.call("create_checkout", &json!({"offer_id": "nope"})));
        assert!(matches!(bad, Some(ToolOutcome::Error(m)) if m.contains("list_products")));
        let pay = block_on(tools.call(
            "create_checkout",
            &json!({"offer_id": "pro_monthly", "payment_data": {"token": "t"}}),
        ));
        assert!(matches!(pay, Some(ToolOutcome::Error(m)) if m.contains("continue_url")));
        assert!(block_on(tools.call("site_info", &json!({}))).is_none());
    }
}
