//! What handlers take from a request: its query parameters (only those the route knows, each
//! once), a page size, and a JSON body checked against the OpenAPI document's request schema.
//! Every refusal is the problem REST documents for it.

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Request, StatusCode};
use serde_json::Value;

use crate::openapi::violations;
use crate::problem::Problem;

/// Largest accepted request body. Tool searches are a sentence; nothing needs more (custom
/// connectors, which take whole OpenAPI documents, have their own limit).
pub const MAX_BODY: usize = 64 * 1024;
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 100;

/// The body length a request declares (`Content-Length`), 0 when it declares none.
pub fn declared_length(headers: &HeaderMap) -> u64 {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// A request's query parameters, checked against what its route accepts.
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parses the query string, refusing parameters the route does not know and repeated ones.
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Self, Problem> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
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
            if out.iter().any(|(seen, _)| seen == k.as_ref()) {
                return Err(Problem::bad_request(
                    "invalid_parameter",
                    format!("Query parameter {k:?} is given more than once."),
                ));
            }
            out.push((k.into_owned(), v.into_owned()));
        }
        Ok(Self(out))
    }

    /// The query of `req`, checked.
    pub fn of(req: &Request<Bytes>, allowed: &[&str]) -> Result<Self, Problem> {
        Self::parse(req.uri().query(), allowed)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `limit`: 1 to 100, 50 when absent.
    pub fn page_limit(&self) -> Result<usize, Problem> {
        match self.get("limit") {
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
}

/// The body as JSON that passes `validator`: `application/json`, parseable, and matching the
/// request schema (each violation in the problem's `errors`).
pub fn json_body(
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
    let errors = violations(validator, &v);
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

/// The body of `req` as checked JSON (see [`json_body`]).
pub fn json(req: &Request<Bytes>, validator: &jsonschema::Validator) -> Result<Value, Problem> {
    json_body(req.headers(), req.body(), validator)
}
