//! The vocabulary every part of the platform shares: HTTP methods and credential schemes. They are
//! the catalog artifact's own types (`catalog_core`), re-exported so that tools from the built
//! catalog and from custom connectors carry the same values and nothing converts between copies.

pub use catalog_core::method::Method;
pub use catalog_core::model::{AuthKind, AuthScheme, OAuthFlow};
