//! Commerce failures, each reported in the shape of the protocol that asked (the README's
//! failure table lists every one):
//!
//! - ACP: the flat `Error` object `{type, code, message, param?, supported_versions?}` with the
//!   HTTP status, `type` one of `invalid_request`, `processing_error`, `service_unavailable`.
//! - UCP 2026-04-08: a *protocol* error is the HTTP status with `{code, content}`; a *business
//!   outcome* (no such checkout, an offer that cannot be bought, bad input) is HTTP 200 with the
//!   error response `{ucp: {version, status: "error"}, messages: [{type: "error", code,
//!   content, severity, path?}], continue_url}`.
//! - UCP 2026-01-23 (no error response, no `unrecoverable` severity): every failure is its HTTP
//!   status with `{ucp, status: "requires_escalation", messages: [...]}` (its REST binding,
//!   "Error Responses"); `unrecoverable` reads `recoverable` (the agent can start a new checkout
//!   through the API, which is what 2026-01-23's `recoverable` means).
//! - Our own REST (`/agent/commerce/products`): RFC 9457 problem+json with `code`.

use super::backend::Backend;
use crate::checkout::{BodyError, UCP_OUTCOMES_FROM, VersionError, newest_first, ucp_envelope};
use crate::meta::CT_JSON;
use crate::problem::CONTENT_TYPE as PROBLEM;
use crate::reply::Reply;
use crate::stripe::StripeError;
use serde_json::{Value, json};

/// Seconds a client should wait after Stripe failed.
pub(super) const RETRY_AFTER_S: &str = "10";

/// How UCP reports a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ucp {
    /// An HTTP error status with `{code, content}` (401, 403, 409, 429, 503; 400/405/404 for a
    /// request this binding cannot serve).
    Protocol,
    /// HTTP 200 with the error response and this message `severity`.
    Outcome(&'static str),
}

/// One failure: what every protocol's answer is made from.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: u16,
    pub code: &'static str,
    pub detail: String,
    /// RFC 9535 JSONPath of the request member at fault.
    pub param: Option<String>,
    pub(super) ucp: Ucp,
    retry_after: Option<&'static str>,
    allow: Option<&'static str>,
    versions: bool,
    /// UCP: a protocol error that offers the web fallback (negotiation failures).
    continue_url: bool,
}

impl Failure {
    pub(super) fn new(
        status: u16,
        code: &'static str,
        detail: impl Into<String>,
        ucp: Ucp,
    ) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            param: None,
            ucp,
            retry_after: None,
            allow: None,
            versions: false,
            continue_url: false,
        }
    }

    /// Bad input a client can correct (UCP: a recoverable business outcome).
    pub(super) fn input(status: u16, code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(status, code, detail, Ucp::Outcome("recoverable"))
    }

    pub(super) fn param(mut self, path: impl Into<String>) -> Self {
        self.param = Some(path.into());
        self
    }

    pub(super) fn retry_after(mut self, secs: &'static str) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Adds `continue_url` (the pricing page) to a UCP protocol error.
    pub(super) fn continue_at_pricing(mut self) -> Self {
        self.continue_url = true;
        self
    }

    pub(super) fn allow(mut self, methods: &'static str) -> Self {
        self.allow = Some(methods);
        self
    }

    pub(super) fn not_found(id: &str) -> Self {
        Self::new(
            404,
            "not_found",
            format!("No checkout session {id}."),
            Ucp::Outcome("unrecoverable"),
        )
    }

    pub(super) fn unavailable(detail: String) -> Self {
        Self::new(503, "service_unavailable", detail, Ucp::Protocol).retry_after(RETRY_AFTER_S)
    }

    pub(super) fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> Self {
        Self::new(
            405,
            "method_not_allowed",
            format!("{method} is not supported at {path}; use {allow}."),
            Ucp::Protocol,
        )
        .allow(allow)
    }

    /// A refused ACP `API-Version`, listing the versions we speak (newest first).
    pub(super) fn version(e: &VersionError) -> Self {
        let mut f = Self::new(400, e.code(), e.to_string(), Ucp::Protocol);
        f.versions = true;
        f
    }

    pub(super) fn body(e: &BodyError) -> Self {
        let f = match e {
            // Not JSON at all: the request cannot be served, in any protocol.
            BodyError::NotJson(_) | BodyError::NotObject => {
                Self::new(400, e.code(), e.to_string(), Ucp::Protocol)
            }
            _ => Self::input(400, e.code(), e.to_string()),
        };
        match e.param() {
            Some(p) => f.param(p),
            None => f,
        }
    }

    pub(super) fn stripe(e: &StripeError) -> Self {
        if e.is_unavailable() {
            let detail = match e {
                StripeError::NotConfigured => {
                    "The shop is not configured yet; try again later.".into()
                }
                e if e.is_auth() => "The shop's payment set-up is not working; nothing was \
                                     charged. Try again later."
                    .into(),
                _ => format!(
                    "The payment processor is unavailable ({e}); nothing was charged. Retry \
                     after {RETRY_AFTER_S} seconds."
                ),
            };
            return Self::unavailable(detail);
        }
        if e.is_missing() {
            return Self::new(
                404,
                "not_found",
                "No such checkout session.",
                Ucp::Outcome("unrecoverable"),
            );
        }
        if let StripeError::Api { kind, .. } = e
            && kind == "idempotency_error"
        {
            return Self::idempotency_conflict(422);
        }
        Self::new(
            502,
            "processing_error",
            format!("The payment processor refused the request: {e}"),
            Ucp::Protocol,
        )
    }

    pub(super) fn idempotency_conflict(status: u16) -> Self {
        Self::new(
            status,
            "idempotency_conflict",
            "This Idempotency-Key was already used with a different request.",
            Ucp::Protocol,
        )
    }

    /// The ACP `Error` object.
    pub(super) fn acp(&self) -> Reply {
        let kind = match self.status {
            503 | 429 => "service_unavailable",
            s if s >= 500 => "processing_error",
            _ => "invalid_request",
        };
        let mut v = json!({"type": kind, "code": self.code, "message": self.detail});
        if let Some(p) = &self.param {
            v["param"] = json!(p);
        }
        if self.versions {
            v["supported_versions"] = json!(newest_first());
        }
        self.reply(self.status, CT_JSON, &v)
    }

    /// The UCP answer for the negotiated `version`: a protocol error or a business outcome
    /// (see the module docs).
    pub(super) fn ucp(&self, base: &str, version: &str) -> Reply {
        let outcome = match self.ucp {
            Ucp::Outcome(severity) => Some(severity),
            Ucp::Protocol => None,
        };
        let message = |severity: &str| {
            let mut m = json!({"type": "error", "code": self.code, "content": self.detail,
                "severity": severity});
            if let Some(p) = &self.param {
                m["path"] = json!(p);
            }
            m
        };
        if version < UCP_OUTCOMES_FROM {
            let severity = outcome.filter(|s| *s != "unrecoverable");
            let v = json!({
                "ucp": ucp_envelope(version),
                "status": "requires_escalation",
                "messages": [message(severity.unwrap_or("recoverable"))],
            });
            return self.reply(self.status, CT_JSON, &v);
        }
        match outcome {
            None => {
                let mut v = json!({"code": self.code, "content": self.detail});
                if self.continue_url {
                    v["continue_url"] = json!(format!("{base}/pricing"));
                }
                self.reply(self.status, CT_JSON, &v)
            }
            Some(severity) => {
                let v = json!({
                    "ucp": {"version": version, "status": "error"},
                    "messages": [message(severity)],
                    "continue_url": format!("{base}/pricing"),
                });
                self.reply(200, CT_JSON, &v)
            }
        }
    }

    /// RFC 9457 problem+json, for our own REST.
    pub(super) fn problem(&self) -> Reply {
        let v = json!({"type": "about:blank", "title": title(self.status), "status": self.status,
            "detail": self.detail, "code": self.code});
        self.reply(self.status, PROBLEM, &v)
    }

    fn reply(&self, status: u16, content_type: &str, v: &Value) -> Reply {
        let mut r = Reply::new(
            status,
            content_type,
            serde_json::to_vec(v).unwrap_or_default(),
        );
        if let Some(s) = self.retry_after {
            r = r.with_header("retry-after", s);
        }
        // Only a 405 names the methods allowed (a UCP outcome of the same failure is a 200).
        if let Some(a) = self.allow.filter(|_| status == 405) {
            r = r.with_header("allow", a);
        }
        r
    }

    /// Logs failures that are our or Stripe's fault (5xx).
    pub(super) fn log<B: Backend>(&self, b: &B, what: &str) {
        if self.status >= 500 {
            b.log(&format!(
                "commerce {what} -> {}: {}",
                self.status, self.detail
            ));
        }
    }
}

fn title(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        422 => "Unprocessable Content",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    }
}

/// An RFC 6901 JSON pointer (`/payment/instruments/0`) as an RFC 9535 JSONPath
/// (`$.payment.instruments[0]`).
pub(super) fn json_path(pointer: &str) -> String {
    let mut out = String::from("$");
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            out.push('.');
            out.push_str(seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &Reply) -> Value {
        serde_json::from_slice(&r.body).unwrap_or_default()
    }

    #[test]
    fn one_failure_in_three_shapes() {
        let f =
            Failure::input(400, "invalid", "quantity must be 1").param("$.line_items[0].quantity");
        let acp = f.acp();
        assert_eq!(acp.status, 400);
        assert_eq!(
            body(&acp),
            json!({"type": "invalid_request", "code": "invalid", "message": "quantity must be 1",
                "param": "$.line_items[0].quantity"})
        );
        let ucp = f.ucp("https://x.test", "2026-04-08");
        assert_eq!(ucp.status, 200);
        let u = body(&ucp);
        assert_eq!(u["ucp"]["status"], "error");
        assert_eq!(u["messages"][0]["severity"], "recoverable");
        assert_eq!(u["messages"][0]["path"], "$.line_items[0].quantity");
        let p = f.problem();
        assert_eq!(p.header("content-type"), Some(PROBLEM));
        assert_eq!(body(&p)["code"], "invalid");
    }

    #[test]
    fn protocol_errors_keep_their_status_in_ucp() {
        let f = Failure::unavailable("down".into());
        let u = f.ucp("", "2026-04-08");
        assert_eq!(u.status, 503);
        assert_eq!(
            body(&u),
            json!({"code": "service_unavailable", "content": "down"})
        );
        assert_eq!(u.header("retry-after"), Some(RETRY_AFTER_S));
        assert_eq!(body(&f.acp())["type"], "service_unavailable");
        let v = Failure::version(&VersionError::Missing).acp();
        assert_eq!(body(&v)["supported_versions"][0], "2026-04-17");
    }

    #[test]
    fn ucp_2026_01_23_reports_every_failure_as_an_http_error() {
        let outcome = Failure::not_found("cs_x");
        let u = outcome.ucp("https://x.test", "2026-01-23");
        assert_eq!(u.status, 404);
        let v = body(&u);
        assert_eq!(v["status"], "requires_escalation");
        assert_eq!(v["ucp"]["version"], "2026-01-23");
        assert_eq!(
            v["messages"][0],
            json!({"type": "error", "code": "not_found", "content": "No checkout session cs_x.",
                "severity": "recoverable"})
        );
        // The same failure under 2026-04-08 is a business outcome.
        let now = outcome.ucp("https://x.test", "2026-04-08");
        assert_eq!(
            (now.status, body(&now)["messages"][0]["severity"].as_str()),
            (200, Some("unrecoverable"))
        );
        let p = Failure::unavailable("down".into()).ucp("", "2026-01-23");
        assert_eq!(
            (p.status, p.header("retry-after")),
            (503, Some(RETRY_AFTER_S))
        );
        assert_eq!(body(&p)["messages"][0]["code"], "service_unavailable");
        let moved = Failure::method_not_allowed("GET", "/x", "POST");
        assert_eq!(moved.ucp("", "2026-01-23").header("allow"), Some("POST"));
        let conflict = Failure::input(409, "line_items_fixed", "fixed").allow("GET");
        assert_eq!(
            conflict.ucp("", "2026-01-23").header("allow"),
            None,
            "only a 405 has Allow"
        );
    }

    #[test]
    fn pointers_become_json_paths() {
        assert_eq!(
            json_path("/payment/instruments/0"),
            "$.payment.instruments[0]"
        );
        assert_eq!(json_path(""), "$");
    }
}
