//! The commerce HTTP endpoints: `GET /agent/commerce/products` and the UCP and ACP checkout
//! session bindings, with `Idempotency-Key` handling.

use super::backend::Backend;
use super::problems::{
    RETRY_AFTER_S, body_problem, json_reply, log_failure, method_not_allowed, payment_problem,
    problem, stripe_problem, with_member,
};
use super::service::{cancel, catalog, create, read};
use crate::checkout::{self, Checkout, Protocol, State};
use crate::config::Config;
use crate::headers::cors_any;
use crate::idempotency::{self, Begin, StoredReply};
use crate::meta::{ACP_SESSIONS, PRODUCTS_PATH, UCP_SESSIONS, UCP_VERSION};
use crate::reply::Reply;
use crate::request::Request;
use serde_json::{Value, json};

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
            Self::Ucp => UCP_VERSION,
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
    let action = match action(req, binding_kind, rest) {
        Ok(a) => a,
        Err(reply) => return Some(reply),
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
    Some(cors_any(reply).with_header("cache-control", "no-store"))
}

/// What a request to a checkout-sessions path (`rest` after the binding's base) asks for, or
/// the 404/405 answer when it asks for nothing we do.
fn action(req: &Request, binding_kind: &str, rest: &str) -> Result<Action, Reply> {
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    Ok(match (segments.as_slice(), req.method.as_str()) {
        ([], "POST") => Action::Create,
        ([], _) => return Err(method_not_allowed(req, "POST")),
        ([id], "GET" | "HEAD") => Action::Get(id.to_string()),
        ([id], "PUT") if binding_kind == "ucp" => Action::Update(id.to_string()),
        ([id], "POST") if binding_kind == "acp" => Action::Update(id.to_string()),
        ([_], _) => {
            let allow = if binding_kind == "ucp" {
                "GET, PUT"
            } else {
                "GET, POST"
            };
            return Err(method_not_allowed(req, allow));
        }
        ([id, "complete"], "POST") => Action::Complete(id.to_string()),
        ([id, "cancel"], "POST") => Action::Cancel(id.to_string()),
        ([_, "complete" | "cancel"], _) => return Err(method_not_allowed(req, "POST")),
        _ => {
            return Err(problem(
                404,
                "Not Found",
                "not_found",
                format!("No commerce endpoint at {}.", req.path),
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
        Err(e) => cors_any(stripe_problem(&e)),
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
    let key = match idempotency_key(req, binding) {
        Ok(Some(key)) => key,
        Ok(None) => return run(req, cfg, base, b, binding, &action, None).await,
        Err(reply) => return reply,
    };
    let scope = match binding {
        Binding::Ucp => format!("ucp:{key}"),
        Binding::Acp(_) => format!("acp:{key}"),
    };
    let fp = idempotency::fingerprint(&req.method, &req.path, binding.version(), &req.body);
    if let Some(early) = unless_proceed(b.idem_begin(&scope, &fp).await, binding) {
        return early;
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

/// The request's `Idempotency-Key` when it is a POST or PUT that has one; a problem when the key
/// is malformed, or missing where the binding requires it (ACP).
fn idempotency_key(req: &Request, binding: Binding) -> Result<Option<&str>, Reply> {
    let is_post = req.method == "POST" || req.method == "PUT";
    let key = req.header("idempotency-key").map(str::trim);
    if let Some(k) = key
        && !idempotency::valid_key(k)
    {
        return Err(problem(
            400,
            "Bad Request",
            "invalid",
            "Idempotency-Key must be 1 to 255 visible ASCII characters.",
        ));
    }
    if is_post && key.is_none() && matches!(binding, Binding::Acp(_)) {
        return Err(problem(
            400,
            "Bad Request",
            "idempotency_key_required",
            "Every POST needs an Idempotency-Key header (a unique string you reuse only to \
             retry the same request).",
        ));
    }
    Ok(key.filter(|_| is_post))
}

/// The answer to give instead of running the request, unless the idempotency store says to
/// proceed: the stored answer of a repeat, or a problem.
fn unless_proceed(begin: Result<Begin, String>, binding: Binding) -> Option<Reply> {
    match begin {
        Ok(Begin::Proceed) => None,
        Ok(Begin::Replay { reply }) => {
            let mut r = Reply::new(reply.status, "application/json", reply.body.into_bytes());
            for (n, v) in &reply.headers {
                r = r.set_header(n, v);
            }
            Some(r.with_header("idempotent-replayed", "true"))
        }
        Ok(Begin::InFlight) => Some(
            problem(
                409,
                "Conflict",
                "idempotency_in_flight",
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            )
            .with_header("retry-after", "1"),
        ),
        Ok(Begin::Conflict) => {
            let status = if matches!(binding, Binding::Acp(_)) {
                422
            } else {
                409
            };
            Some(problem(
                status,
                if status == 422 {
                    "Unprocessable Content"
                } else {
                    "Conflict"
                },
                "idempotency_conflict",
                "This Idempotency-Key was already used with a different request.",
            ))
        }
        Err(e) => Some(
            problem(
                503,
                "Service Unavailable",
                "service_unavailable",
                format!("The idempotency store is unavailable ({e}); retry later."),
            )
            .with_header("retry-after", RETRY_AFTER_S),
        ),
    }
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
    let checkout = match action {
        Action::Create => match create(cfg, b, base, &body, binding.protocol(), key).await {
            Ok(c) => {
                let location = match binding {
                    Binding::Ucp => format!("{base}{UCP_SESSIONS}/{}", c.id),
                    Binding::Acp(_) => format!("{base}{ACP_SESSIONS}/{}", c.id),
                };
                return json_reply(201, &binding.render(&c, base))
                    .with_header("location", &location);
            }
            Err(e) => return e.reply(),
        },
        Action::Get(id) => read(cfg, b, id).await,
        Action::Update(id) => update(cfg, b, id, &body).await,
        Action::Complete(id) => match read(cfg, b, id).await {
            Ok(c) if matches!(c.state, State::Canceled | State::Expired) => Err(problem(
                409,
                "Conflict",
                "checkout_canceled",
                format!("Checkout {id} is canceled or expired; create a new one."),
            )),
            // Completion happens on the hosted page; this answers with where that stands
            // (requires_escalation and the link while the buyer has not paid).
            other => other,
        },
        Action::Cancel(id) => cancel_open(cfg, b, binding, id, key).await,
    };
    match checkout {
        Ok(c) => json_reply(200, &binding.render(&c, base)),
        Err(r) => r,
    }
}

/// An update may restate the checkout's items but not change them (buyer details are entered on
/// the hosted page).
async fn update<B: Backend>(
    cfg: &Config,
    b: &B,
    id: &str,
    body: &Value,
) -> Result<Checkout, Reply> {
    let c = read(cfg, b, id).await?;
    match checkout::parse_lines(body) {
        Err(e) => Err(body_problem(&e)),
        Ok(Some(lines))
            if lines.len() != 1
                || lines[0].offer_id != c.offer_id
                || lines[0].quantity != c.quantity =>
        {
            Err(problem(
                409,
                "Conflict",
                "line_items_fixed",
                "The items of a checkout cannot change after it is created; cancel it \
                 and create a new one. Buyer details are entered on the hosted page at \
                 continue_url.",
            ))
        }
        Ok(_) => Ok(c),
    }
}

/// Cancels an open checkout; a final one cannot be (405 for ACP, 409 for UCP).
async fn cancel_open<B: Backend>(
    cfg: &Config,
    b: &B,
    binding: Binding,
    id: &str,
    key: Option<&str>,
) -> Result<Checkout, Reply> {
    let c = read(cfg, b, id).await?;
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
        return Err(if status == 405 {
            r.with_header("allow", "GET")
        } else {
            r
        });
    }
    cancel(cfg, b, id, key).await
}
