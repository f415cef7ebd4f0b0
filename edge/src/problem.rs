//! RFC 9457 problem details, the error body of every edge endpoint.

use crate::reply::Reply;
use serde::Serialize;

pub const CONTENT_TYPE: &str = "application/problem+json";

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
}

impl Problem {
    /// A problem whose `type` is `about:blank`, as RFC 9457 recommends when the status code
    /// already says everything a client needs to act on.
    pub fn new(status: u16, title: &str, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank".to_string(),
            title: title.to_string(),
            status,
            detail: detail.into(),
        }
    }

    pub fn into_reply(self) -> Reply {
        // Serialising a struct of strings and an integer cannot fail; fall back to a fixed body
        // rather than panic if it ever did.
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| {
            br#"{"type":"about:blank","title":"Internal Server Error","status":500}"#.to_vec()
        });
        Reply::new(self.status, CONTENT_TYPE, body)
    }
}
