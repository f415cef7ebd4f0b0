//! The SDK's errors mapped onto the domain's [`StoreError`]: a lost condition is a conflict, a
//! cancelled transaction says which item lost, anything else is the store being unavailable
//! (with the SDK's message, for the log).

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use platform_domain::StoreError;

pub(crate) fn unavailable<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(&e).to_string())
}

/// Maps a failed single-item write: a lost condition is a conflict.
pub(crate) fn write_error<E, R>(e: SdkError<E, R>, conflict: &'static str) -> StoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match e.as_service_error().and_then(|s| s.code()) {
        Some("ConditionalCheckFailedException") => StoreError::Conflict(conflict),
        _ => unavailable(e),
    }
}

/// Why a transaction did not commit.
#[derive(Debug)]
pub(crate) enum Cancelled {
    /// The condition of the transaction's item at this position failed.
    Condition(usize),
    /// Another transaction touched the same items.
    Conflict,
    Store(StoreError),
}

/// A request builder's own validation failure (a missing required member).
pub(crate) fn build_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}
