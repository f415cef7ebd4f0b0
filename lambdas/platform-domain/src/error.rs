//! The one error every repository port returns. The DynamoDB implementation maps its SDK errors
//! onto it; services decide what a conflict or a missing item means for their use case.

/// What a caller is told when the store fails (REST's `store_unavailable` problem, MCP's error
/// result): never the SDK's message, which goes to the log.
pub const UNAVAILABLE_DETAIL: &str = "The platform's storage did not answer; retry shortly.";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: the thing exists already, or changed meanwhile.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("not found: {0}")]
    NotFound(&'static str),
    #[error("DynamoDB request failed: {0}")]
    Unavailable(String),
    #[error("a stored item is malformed: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// `Ok(())` for a lost condition, the error otherwise: for writes whose loss means someone
    /// else already did the same (a claim taken, a message enqueued twice, a trigger gone).
    pub fn ignore_conflict(res: Result<(), StoreError>) -> Result<(), StoreError> {
        match res {
            Err(StoreError::Conflict(_)) => Ok(()),
            other => other,
        }
    }
}
