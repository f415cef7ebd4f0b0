//! Companion integration platform: domain, DynamoDB store, REST router.
//!
//! The router ([`router::App::handle`]) is plain async Rust over buffered `http` types; the
//! Lambda adapter (in `lambdas/api`) and the local hyper server ([`local::serve`]) only convert.

pub mod accounts;
pub mod artifact_catalog;
pub mod catalog;
pub mod catalog_api;
pub mod clock;
pub mod env;
pub mod events;
pub mod keys;
pub mod local;
pub mod mcp;
pub mod openapi;
pub mod outbound;
pub mod problem;
pub mod ratelimit;
pub mod redact;
pub mod router;
pub mod runs;
pub mod sealed;
pub mod search;
pub mod static_catalog;
pub mod store;
pub mod table;
