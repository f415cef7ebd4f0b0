//! Commerce answers as RFC 9457 problems with a stable `code` member (ACP's error codes where
//! ACP has one) and, for UCP, a `content` copy of the detail; see the README for the table.

use super::backend::Backend;
use crate::checkout::{self, BodyError};
use crate::problem::CONTENT_TYPE as PROBLEM;
use crate::reply::Reply;
use crate::request::Request;
use crate::stripe::StripeError;
use serde_json::{Value, json};

/// Seconds a client should wait after Stripe failed.
pub(super) const RETRY_AFTER_S: &str = "10";

/// A problem+json reply with a stable `code` (and the UCP-style `content`).
pub(super) fn problem(status: u16, title: &str, code: &str, detail: impl Into<String>) -> Reply {
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

pub(super) fn with_member(reply: Reply, name: &str, value: Value) -> Reply {
    let mut reply = reply;
    if let Ok(Value::Object(mut o)) = serde_json::from_slice::<Value>(&reply.body) {
        o.insert(name.into(), value);
        reply.body = serde_json::to_vec(&o).unwrap_or_default();
    }
    reply
}

pub(super) fn json_reply(status: u16, v: &Value) -> Reply {
    Reply::new(
        status,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

pub(super) fn stripe_problem(e: &StripeError) -> Reply {
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

pub(super) fn body_problem(e: &BodyError) -> Reply {
    let r = problem(400, "Bad Request", e.code(), e.to_string());
    match e.param() {
        Some(p) => with_member(r, "param", json!(p)),
        None => r,
    }
}

pub(super) fn payment_problem(found: &str) -> Reply {
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

/// Logs answers that are our or Stripe's fault (5xx), with the problem's detail.
pub(super) fn log_failure<B: Backend>(b: &B, what: &str, reply: &Reply) {
    if reply.status >= 500 {
        b.log(&format!(
            "commerce {what} -> {}: {}",
            reply.status,
            reply_detail(reply)
        ));
    }
}

pub(super) fn method_not_allowed(req: &Request, allow: &str) -> Reply {
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

pub(super) fn reply_detail(r: &Reply) -> String {
    serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| v["detail"].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("failed with HTTP {}", r.status))
}
