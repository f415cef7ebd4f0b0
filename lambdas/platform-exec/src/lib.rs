//! The platform's outbound side: everything it sends to a third party on an account's behalf,
//! and the services built on it.
//!
//! - [`outbound`]: the one HTTP client, with the SSRF guard (URL, name resolution, every redirect)
//!   and the size and time caps. Nothing else of the platform opens a connection out.
//! - [`request`]: a tool's arguments mapped onto its operation, credentials injected per its
//!   security schemes.
//! - [`oauth`]: token endpoint calls (code exchange, refresh, userinfo).
//! - [`connections`]: connect links, the hosted connect flow, credentials with single-flight
//!   refresh. [`executor`]: runs a catalog tool and records it. [`integrations`] bundles both.
//! - [`custom`]: custom connectors' servers (MCP client, OpenAPI fetch, REST runs).
//! - [`triggers`]: the triggers service, webhook ingress, the jobs round's polling and delivery.
//!
//! It builds on `platform-domain` alone: storage and secrets come in as the domain's ports
//! (`Arc<dyn …Store>`, `Arc<dyn SecretBox>`), so this crate never names DynamoDB or AWS, and it
//! answers with typed errors that `platform-http` turns into problems and MCP results.

pub mod connections;
pub mod custom;
pub mod executor;
pub mod integrations;
pub mod oauth;
pub mod outbound;
pub mod request;
pub mod triggers;

pub use integrations::Integrations;
