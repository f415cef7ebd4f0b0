//! The commerce HTTP endpoints: `GET /agent/commerce/products` and the UCP and ACP checkout
//! session bindings, with `Idempotency-Key` handling.

use super::backend::Backend;
use super::failure::{Failure, Ucp, json_path};
use super::service::{cancel, catalog, create, read};
use crate::checkout::{self, Checkout, Protocol, State};
use crate::config::Config;
use crate::headers::cors_any;
use crate::idempotency::{self, Begin, StoredReply};
use crate::meta::{ACP_SESSIONS, CT_JSON, PRODUCTS_PATH, UCP_SESSIONS, UCP_VERSION};
use crate::reply::Reply;
use crate::request::Request;
use serde_json::{Value, json};

/// The binding of one request, with its negotiated protocol version.
#[derive(Clone, Copy)]
enum Binding {
    Ucp(&'static str),
    Acp(&'static str),
}

impl Binding {
    fn render(self, c: &Checkout, base: &str) -> Value {
        match self {
            Self::Ucp(v) => c.to_ucp(base, v),
            Self::Acp(v) => c.to_acp(base, v),
        }
    }

    fn protocol(self) -> Protocol {
        match self {
            Self::Ucp(_) => Protocol::Ucp,
            Self::Acp(_) => Protocol::Acp,
        }
    }

    /// A failure in this binding's shape.
    fn fail(self, f: &Failure, base: &str) -> Reply {
        match self {
            Self::Ucp(v) => f.ucp(base, v),
            Self::Acp(_) => f.acp(),
        }
    }

    fn version(self) -> &'static str {
        match self {
            Self::Ucp(v) | Self::Acp(v) => v,
        }
    }
}

/// Routes a commerce request; `None` when the path is not ours.
pub async fn route<B: Backend>(req: &Request, cfg: &Config, base: &str, b: &B) -> Option<Reply> {
    let path = req.path.as_str();
    if path == PRODUCTS_PATH {
        return Some(match req.method.as_str() {
            "GET" | "HEAD" => products(cfg, b).await,
            "OPTIONS" => preflight(),
            _ => Failure::method_not_allowed(&req.method, path, "GET, HEAD").problem(),
        });
    }
    let (ucp, rest) = if let Some(rest) = path.strip_prefix(UCP_SESSIONS) {
        (true, rest)
    } else if let Some(rest) = path.strip_prefix(ACP_SESSIONS) {
        (false, rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    if req.method == "OPTIONS" {
        return Some(preflight());
    }
    // UCP negotiates first, so every later failure (an unknown endpoint too) answers in the
    // version agreed; a failed negotiation answers in the current version's shape. ACP's
    // `API-Version` is read once the endpoint is known; a refused one answers in the newest
    // version's shape.
    let acted = if ucp {
        match super::negotiate::check(req, &cfg.ucp_dev_profiles, b).await {
            Ok(v) => action(req, ucp, rest)
                .map(|a| (a, Binding::Ucp(v)))
                .map_err(|f| (f, Binding::Ucp(v))),
            Err(f) => Err((f, Binding::Ucp(UCP_VERSION))),
        }
    } else {
        action(req, ucp, rest)
            .and_then(|a| {
                let v = checkout::acp_version(req.header("api-version"));
                Ok((a, Binding::Acp(v.map_err(|e| Failure::version(&e))?)))
            })
            .map_err(|f| (f, Binding::Acp("")))
    };
    let reply = match acted {
        Ok((action, binding)) => keyed(req, cfg, base, b, binding, action).await,
        Err((f, binding)) => {
            f.log(b, &format!("{} {path}", req.method));
            binding.fail(&f, base)
        }
    };
    let mut reply = reply;
    if !ucp {
        for name in ["idempotency-key", "request-id"] {
            if let Some(v) = req.header(name) {
                reply = reply.set_header(name, v);
            }
        }
    }
    Some(cors_any(reply).with_header("cache-control", "no-store"))
}

/// A refusal made before routing (the rate limiter's 429, a body over the size limit) in the
/// error shape of the commerce binding `path` belongs to; `None` for any other path.
pub fn refusal(path: &str, status: u16, code: &'static str, detail: &str) -> Option<Reply> {
    // No version has been negotiated before routing: UCP answers in its current version.
    let binding = if path.starts_with(UCP_SESSIONS) {
        Binding::Ucp(UCP_VERSION)
    } else if path.starts_with(ACP_SESSIONS) {
        Binding::Acp("")
    } else {
        return None;
    };
    Some(binding.fail(&Failure::new(status, code, detail, Ucp::Protocol), ""))
}

/// What a request to a checkout-sessions path (`rest` after the binding's base) asks for, or
/// the 404/405 failure when it asks for nothing we do.
fn action(req: &Request, ucp: bool, rest: &str) -> Result<Action, Failure> {
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let not_allowed = |allow| Failure::method_not_allowed(&req.method, &req.path, allow);
    Ok(match (segments.as_slice(), req.method.as_str()) {
        ([], "POST") => Action::Create,
        ([], _) => return Err(not_allowed("POST")),
        ([id], "GET" | "HEAD") => Action::Get(id.to_string()),
        ([id], "PUT") if ucp => Action::Update(id.to_string()),
        ([id], "POST") if !ucp => Action::Update(id.to_string()),
        ([_], _) => return Err(not_allowed(if ucp { "GET, PUT" } else { "GET, POST" })),
        ([id, "complete"], "POST") => Action::Complete(id.to_string()),
        ([id, "cancel"], "POST") => Action::Cancel(id.to_string()),
        ([_, "complete" | "cancel"], _) => return Err(not_allowed("POST")),
        _ => {
            return Err(Failure::new(
                404,
                "not_found",
                format!("No commerce endpoint at {}.", req.path),
                Ucp::Protocol,
            ));
        }
    })
}

enum Action {
    Create,
    Get(String),
    Update(String),
    Complete(String),
    Cancel(String),
}

fn preflight() -> Reply {
    cors_any(Reply::empty(204))
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
        Ok(c) => cors_any(json_reply(200, &c.to_json())).with_header("cache-control", "no-cache"),
        Err(e) => {
            let f = Failure::stripe(&e);
            f.log(b, "GET products");
            cors_any(f.problem())
        }
    }
}

fn json_reply(status: u16, v: &Value) -> Reply {
    Reply::new(status, CT_JSON, serde_json::to_vec(v).unwrap_or_default())
}

/// Runs a checkout action under the request's `Idempotency-Key` (required for ACP POSTs,
/// optional for UCP), and renders its answer in the binding's shape.
async fn keyed<B: Backend>(
    req: &Request,
    cfg: &Config,
    base: &str,
    b: &B,
    binding: Binding,
    action: Action,
) -> Reply {
    let ucp = matches!(binding, Binding::Ucp(_));
    let fail = |f: Failure| {
        f.log(b, &format!("{} {}", req.method, req.path));
        binding.fail(&f, base)
    };
    // Payment credentials first: that explanation helps a client more than any header rule.
    if let Some(h) = checkout::payment_header(&req.headers) {
        return fail(payment_refused(&format!("the {h} header"), None));
    }
    let key = match idempotency_key(req, binding) {
        Ok(Some(key)) => key,
        Ok(None) => {
            return run(req, cfg, base, b, binding, &action, None)
                .await
                .unwrap_or_else(fail);
        }
        Err(f) => return fail(f),
    };
    // Keys are scoped to the endpoint; a repeat is the same request when its protocol version
    // and JSON body are the same (key order and other headers do not count), so a stored answer
    // is never replayed in another version's shape.
    let scope = format!("{}:{}:{key}", if ucp { "ucp" } else { "acp" }, req.path);
    let body = serde_json::from_slice::<Value>(&req.body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok())
        .unwrap_or_else(|| req.body.clone());
    let fp = idempotency::fingerprint(&req.method, &req.path, binding.version(), &body);
    if let Some(early) = unless_proceed(b.idem_begin(&scope, &fp).await, binding) {
        return early.unwrap_or_else(fail);
    }
    let reply = run(req, cfg, base, b, binding, &action, Some(key))
        .await
        .unwrap_or_else(fail);
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

/// Payment credentials are refused: the hosted page is the only way to pay.
fn payment_refused(found: &str, param: Option<String>) -> Failure {
    let f = Failure::input(
        400,
        "payment_not_accepted",
        format!(
            "Payment credentials were sent ({found}). {}",
            checkout::PAYMENT_PATH
        ),
    );
    match param {
        Some(p) => f.param(p),
        None => f,
    }
}

/// The request's `Idempotency-Key` when it is a POST or PUT that has one; a failure when the
/// key is malformed, or missing where the binding requires it (ACP).
fn idempotency_key(req: &Request, binding: Binding) -> Result<Option<&str>, Failure> {
    let is_post = req.method == "POST" || req.method == "PUT";
    let key = req.header("idempotency-key").map(str::trim);
    if let Some(k) = key
        && !idempotency::valid_key(k)
    {
        return Err(Failure::new(
            400,
            "invalid",
            "Idempotency-Key must be 1 to 255 visible ASCII characters.",
            Ucp::Protocol,
        ));
    }
    if is_post && key.is_none() && matches!(binding, Binding::Acp(_)) {
        return Err(Failure::new(
            400,
            "idempotency_key_required",
            "Every POST needs an Idempotency-Key header (a unique string you reuse only to \
             retry the same request).",
            Ucp::Protocol,
        ));
    }
    Ok(key.filter(|_| is_post))
}

/// The answer to give instead of running the request, unless the idempotency store says to
/// proceed: the stored answer of a repeat, or a failure.
fn unless_proceed(
    begin: Result<Begin, String>,
    binding: Binding,
) -> Option<Result<Reply, Failure>> {
    Some(match begin {
        Ok(Begin::Proceed) => return None,
        Ok(Begin::Replay { reply }) => {
            let mut r = Reply::new(reply.status, CT_JSON, reply.body.into_bytes());
            for (n, v) in &reply.headers {
                r = r.set_header(n, v);
            }
            Ok(r.with_header("idempotent-replayed", "true"))
        }
        Ok(Begin::InFlight) => Err(Failure::new(
            409,
            "idempotency_in_flight",
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            Ucp::Protocol,
        )
        .retry_after("1")),
        // ACP answers a reused key 422, UCP 409.
        Ok(Begin::Conflict) => Err(Failure::idempotency_conflict(match binding {
            Binding::Acp(_) => 422,
            Binding::Ucp(_) => 409,
        })),
        Err(e) => Err(Failure::unavailable(format!(
            "The idempotency store is unavailable ({e}); retry later."
        ))),
    })
}

async fn run<B: Backend>(
    req: &Request,
    cfg: &Config,
    base: &str,
    b: &B,
    binding: Binding,
    action: &Action,
    key: Option<&str>,
) -> Result<Reply, Failure> {
    let body = match action {
        Action::Get(_) => json!({}),
        _ => checkout::parse_object(&req.body).map_err(|e| Failure::body(&e))?,
    };
    if let Some(found) = checkout::payment_in_body(&body) {
        let path = json_path(&found);
        return Err(payment_refused(
            &format!("the body member {path}"),
            Some(path),
        ));
    }
    let checkout = match action {
        Action::Create => {
            let c = create(cfg, b, base, &body, binding.protocol(), key)
                .await
                .map_err(|e| match (e.failure(), binding) {
                    // Stripe's own idempotency conflict is UCP's 409 too.
                    (f, Binding::Ucp(_)) if f.code == "idempotency_conflict" => {
                        Failure::idempotency_conflict(409)
                    }
                    (f, _) => f,
                })?;
            let location = match binding {
                Binding::Ucp(_) => format!("{base}{UCP_SESSIONS}/{}", c.id),
                Binding::Acp(_) => format!("{base}{ACP_SESSIONS}/{}", c.id),
            };
            return Ok(
                json_reply(201, &binding.render(&c, base)).with_header("location", &location)
            );
        }
        Action::Get(id) => read(cfg, b, id).await?,
        Action::Update(id) => update(cfg, b, id, &body).await?,
        Action::Complete(id) => {
            let c = read(cfg, b, id).await?;
            if matches!(c.state, State::Canceled | State::Expired) {
                return Err(Failure::new(
                    409,
                    "checkout_canceled",
                    format!("Checkout {id} is canceled or expired; create a new one."),
                    Ucp::Outcome("unrecoverable"),
                ));
            }
            // Completion happens on the hosted page; this answers with where that stands
            // (requires_escalation and the link while the buyer has not paid).
            c
        }
        Action::Cancel(id) => cancel_open(cfg, b, id, key).await?,
    };
    Ok(json_reply(200, &binding.render(&checkout, base)))
}

/// An update may restate the checkout's items but not change them (buyer details are entered on
/// the hosted page).
async fn update<B: Backend>(
    cfg: &Config,
    b: &B,
    id: &str,
    body: &Value,
) -> Result<Checkout, Failure> {
    let c = read(cfg, b, id).await?;
    match checkout::parse_lines(body) {
        Err(e) => Err(Failure::body(&e)),
        Ok(Some(lines))
            if lines.len() != 1
                || lines[0].offer_id != c.offer_id
                || lines[0].quantity != c.quantity =>
        {
            Err(Failure::input(
                409,
                "line_items_fixed",
                "The items of a checkout cannot change after it is created; cancel it and \
                 create a new one. Buyer details are entered on the hosted page at \
                 continue_url.",
            )
            .param("$.line_items"))
        }
        Ok(_) => Ok(c),
    }
}

/// Cancels an open checkout; a final one cannot be (405 with `Allow: GET` where the answer is
/// an HTTP error: ACP, UCP 2026-01-23).
async fn cancel_open<B: Backend>(
    cfg: &Config,
    b: &B,
    id: &str,
    key: Option<&str>,
) -> Result<Checkout, Failure> {
    let c = read(cfg, b, id).await?;
    if c.state != State::Open {
        return Err(Failure::new(
            405,
            "checkout_not_cancelable",
            format!("Checkout {id} is already completed, canceled or expired."),
            Ucp::Outcome("unrecoverable"),
        )
        .allow("GET"));
    }
    cancel(cfg, b, id, key).await
}
