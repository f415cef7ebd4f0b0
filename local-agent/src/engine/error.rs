//! Typed refusals and failures of the engine API, each mapped to one HTTP status and the JSON
//! body `{"error": "<code>", "detail": "<sentence>"}`.

use http::StatusCode;

use super::records::ErrorBody;

/// Why a request got no record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The request came from (or through) a web page, or named a non-local host.
    #[error("{0}")]
    Forbidden(String),
    #[error(
        "no such endpoint: {0}; the engine serves /health, /frame, /anomaly, /fall and /baseline"
    )]
    NotFound(String),
    #[error("method {0} is not allowed; the engine answers GET only")]
    MethodNotAllowed(String),
    #[error("the engine's endpoints take no request body")]
    BodyNotAllowed,
    #[error("the response could not be produced: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::BodyNotAllowed => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code in the `error` field.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::BodyNotAllowed => "payload_too_large",
            ApiError::Internal(_) => "internal",
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.code(),
            detail: self.to_string(),
        }
    }
}
