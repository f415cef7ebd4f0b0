//! The platform's HTTP surface: the REST API (`/api/v1`), the remote MCP server (`/mcp`), the
//! hosted connect pages and the webhook ingress, as one async function from a buffered request to
//! a buffered response ([`App::handle`]). The Lambda adapter (`lambdas/api`) and the local hyper
//! server ([`local::serve`]) only convert.
//!
//! What lives here: the route table ([`routes`]), the extractors ([`extract`]), authentication
//! and rate limiting ([`guard`]), one handler per use case ([`handlers`]), problem+json
//! ([`problem`]) made from the services' typed errors ([`errors`]), the OpenAPI document and the
//! request schemas taken from it ([`openapi`]), the MCP server ([`mcp`]) and the connect pages'
//! HTML ([`pages`]). What does not: rules (the domain's), storage (reached only through the
//! domain's ports), outbound calls (`platform-exec`). REST and MCP call the same services.
//!
//! Modules, leaves first: [`problem`], [`redact`], [`openapi`], [`reply`], [`extract`],
//! [`routes`], [`errors`], [`pages`], [`services`], [`guard`], then `handlers` and [`mcp`], then
//! [`app`] and [`local`].

pub mod app;
pub mod errors;
pub mod extract;
pub mod guard;
mod handlers;
pub mod local;
pub mod mcp;
pub mod openapi;
pub mod pages;
pub mod problem;
pub mod redact;
pub mod reply;
pub mod routes;
pub mod services;

pub use app::{App, StartError};
pub use extract::MAX_BODY;
pub use guard::ClientAddr;
pub use services::Services;
