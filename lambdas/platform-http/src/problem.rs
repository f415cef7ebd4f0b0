//! RFC 9457 problem details, the error body of every failed request.
//!
//! `type` is `about:blank` (so `title` is the status phrase) and the stable, machine-readable
//! reason is the `code` extension, as CONTRACTS.md fixes. `request_id` is always present.

use http::StatusCode;
use platform_domain::error::UNAVAILABLE_DETAIL;
pub use platform_domain::validation::FieldError;

pub const CONTENT_TYPE: &str = "application/problem+json";

/// A problem before it is given a request id and serialized.
#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    pub retry_after: Option<u64>,
    pub errors: Vec<FieldError>,
    /// Further extension members (`connect_url`, `run_id`, `upstream_status`, …).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            retry_after: None,
            errors: Vec::new(),
            extra: serde_json::Map::new(),
        }
    }

    /// Adds an extension member; the standard members and `code` cannot be overridden.
    pub fn with(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(name.to_owned(), value.into());
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
            UNAVAILABLE_DETAIL,
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
        if let Some(obj) = v.as_object_mut() {
            for (k, val) in &self.extra {
                obj.entry(k.clone()).or_insert_with(|| val.clone());
            }
        }
        v
    }
}
