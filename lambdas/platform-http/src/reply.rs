//! A handler's successful answer, before the router adds the headers every response carries.

use bytes::Bytes;
use http::StatusCode;
use http::header::{HeaderMap, HeaderValue};
use serde_json::Value;

pub struct Reply {
    pub status: StatusCode,
    pub content_type: HeaderValue,
    /// Headers of a response produced elsewhere (the MCP service, the hosted pages).
    pub extra: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// 200 with a JSON body.
    pub fn json(v: &Value) -> Self {
        Self {
            status: StatusCode::OK,
            content_type: HeaderValue::from_static("application/json"),
            extra: HeaderMap::new(),
            body: Bytes::from(v.to_string()),
        }
    }

    /// 201 with a JSON body.
    pub fn created(v: &Value) -> Self {
        Self {
            status: StatusCode::CREATED,
            ..Self::json(v)
        }
    }

    /// 204.
    pub fn no_content() -> Self {
        Self {
            status: StatusCode::NO_CONTENT,
            content_type: HeaderValue::from_static("application/json"),
            extra: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }
}
