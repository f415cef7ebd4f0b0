//! RFC 9457 problem details, the error body of every failed request.
//!
//! `type` is `about:blank` (so `title` is the status phrase) and the stable, machine-readable
//! reason is the `code` extension, as CONTRACTS.md fixes. `request_id` is always present.

use http::StatusCode;
use serde::Serialize;

pub const CONTENT_TYPE: &str = "application/problem+json";

/// One invalid member of a request, pointed to by a JSON Pointer (RFC 6901).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldError {
    pub pointer: String,
    pub detail: String,
}

/// A problem before it is given a request id and serialized.
#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    pub retry_after: Option<u64>,
    pub errors: Vec<FieldError>,
    /// Further members (`run_id`, `upstream_status`, ...), added to the body as they are.
    pub extensions: Vec<(&'static str, serde_json::Value)>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            retry_after: None,
            errors: Vec::new(),
            extensions: Vec::new(),
        }
    }

    pub fn with_extension(mut self, name: &'static str, value: serde_json::Value) -> Self {
        self.extensions.push((name, value));
        self
    }

    pub fn with_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.errors = errors;
        self
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }

    pub fn not_found(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, detail)
    }

    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, detail)
    }

    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "The platform's storage did not answer; retry shortly.",
        )
    }

    /// The JSON body. `instance` must already be redacted.
    pub fn body(&self, instance: &str, request_id: &str) -> serde_json::Value {
        let mut v = serde_json::json!({
            "type": "about:blank",
            "title": self.status.canonical_reason().unwrap_or("Error"),
            "status": self.status.as_u16(),
            "detail": self.detail,
            "instance": instance,
            "code": self.code,
            "request_id": request_id,
        });
        if let Some(s) = self.retry_after {
            v["retry_after"] = s.into();
        }
        if !self.errors.is_empty() {
            v["errors"] = serde_json::to_value(&self.errors).unwrap_or_default();
        }
        for (name, value) in &self.extensions {
            v[*name] = value.clone();
        }
        v
    }
}
