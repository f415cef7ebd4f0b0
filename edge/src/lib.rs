//! Public agent API and MCP server, deployed as a Cloudflare Worker.
//!
//! Everything but the `glue` module is plain Rust that compiles and is tested on the host; the glue
//! converts between `worker` types and [`request::Request`] / [`reply::Reply`], and owns what
//! needs Worker bindings: the Durable Objects (rate limiter, idempotency store), outbound fetches
//! (Stripe, agents' key directories) and isolate caches. The modules, bottom to top (each may
//! use only those before it; `module-cycles` in CI checks there are no cycles):
//!
//! - `meta`: names, paths, content types and protocol versions every layer reads (a leaf).
//! - `reply`, `problem`, `request`, `headers`: the transport-neutral HTTP vocabulary.
//! - `config`: Worker vars and secrets as a plain [`config::Config`].
//! - `pages`, `search`: the site's Markdown pages and page search.
//! - `stripe`, `catalog`, `idempotency`, `checkout`: the commerce domain (no I/O).
//! - `public_host`, `ratelimit`, `webbotauth`: which hosts may be fetched, limiter decisions and
//!   Web Bot Auth (no I/O).
//! - `tool`, `discovery`, `site_tools`, `commerce`: tool vocabulary, discovery documents, the
//!   site's tools, the shop (over a `Backend` the glue implements).
//! - `registry`: the one tool list, handed to MCP, discovery and the site.
//! - `mcp`, `router`: the MCP server and the request router.

pub mod catalog;
pub mod checkout;
pub mod commerce;
pub mod config;
pub mod discovery;
pub mod headers;
pub mod idempotency;
pub mod mcp;
pub mod meta;
pub mod pages;
pub mod problem;
pub mod public_host;
pub mod ratelimit;
pub mod registry;
pub mod reply;
pub mod request;
pub mod router;
pub mod search;
pub mod site_tools;
pub mod stripe;
pub mod tool;
pub mod webbotauth;

#[cfg(target_arch = "wasm32")]
mod glue;

#[cfg(test)]
mod testing;
