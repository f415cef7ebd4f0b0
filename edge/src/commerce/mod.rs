//! The shop: `GET /agent/commerce/products`, the UCP and ACP checkout-session bindings and the
//! commerce MCP tools, over a [`Backend`] that owns the network, the clock, the idempotency
//! store and the catalogue cache. One model behind three bindings: a checkout is a Stripe
//! Checkout Session (see [`crate::checkout`]).
//!
//! - `backend`: what commerce needs from its host ([`Backend`]; [`Offline`] for code paths that
//!   never reach the shop).
//! - `service`: the operations both bindings call (catalogue, create, read, cancel).
//! - `routes`: the HTTP endpoints and `Idempotency-Key` handling.
//! - `tools`: the MCP tools.
//! - `failure`: commerce failures, each in its protocol's error shape (ACP `Error`, UCP
//!   protocol error or error response, problem+json for our own REST).
//!
//! No Worker types here: the glue implements [`Backend`].

mod backend;
mod failure;
mod negotiate;
mod routes;
mod service;
mod tools;

#[cfg(test)]
mod tests;

pub use backend::{Backend, Offline};
pub use routes::{refusal, route};
pub use tools::{CommerceTool, CommerceTools};
