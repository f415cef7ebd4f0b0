//! The companion integration platform, assembled: start-up wiring for the two functions
//! ([`bootstrap`]), the environment they read ([`env`], the contract `infra/` is checked against),
//! and the layers it is built from, re-exported under short names.
//!
//! The layers, each depending only on those above it in this list:
//!
//! | crate | re-exported as | owns |
//! |---|---|---|
//! | `catalog-core` | [`search`] | the catalog artifact, BM25F tool search, OpenAPI → tools (shared with the catalog builder; hot: built at opt-level 3) |
//! | `platform-domain` | [`domain`] | types, rules, typed errors, repository ports; no HTTP, no AWS |
//! | `platform-store` | [`store`] | the ports on DynamoDB, the table layout, sealed secrets; the only AWS code |
//! | `platform-exec` | [`exec`] | outbound HTTP (SSRF guard), credentials, tool runs, triggers, custom connectors |
//! | `platform-http` | [`http`] | REST routes and handlers, problem+json, MCP, connect pages, local server |
//!
//! `platform-store` and `platform-exec` both build on the domain alone and never on each other:
//! services reach storage only through the domain's ports, which this crate's bootstrap fills
//! with the DynamoDB store. The integration tests in `tests/` run the assembled platform against
//! DynamoDB Local over real loopback HTTP.

pub mod bootstrap;
pub mod env;

pub use catalog_core as search;
pub use platform_domain as domain;
pub use platform_exec as exec;
pub use platform_http as http;
pub use platform_store as store;
