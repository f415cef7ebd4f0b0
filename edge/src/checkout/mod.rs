//! One checkout model behind two protocol bindings (UCP 2026-04-08 and 2026-01-23, ACP every API
//! version)
//! and the MCP tools.
//!
//! A checkout *is* a Stripe Checkout Session: its id is the session id, its `continue_url` the
//! session's hosted `url`, and reading it re-reads the session. What the protocols need that
//! Stripe does not keep (the offer id, name, unit amount and quantity) travels in the session's
//! metadata, written at creation. Payment never passes through this API.
//!
//! - `request`: the ACP `API-Version` header and checkout bodies in every protocol's form.
//! - `payment`: finding payment credentials in a body or headers (refused).
//! - `session`: the Stripe session form and reading a session back into a [`Checkout`].
//! - `render`: a checkout as UCP, ACP (per version) and the MCP tool show it.
//!
//! Pure: no I/O; `commerce` calls Stripe.

mod payment;
mod render;
mod request;
mod session;

#[cfg(test)]
mod tests;

pub use payment::{PAYMENT_PATH, payment_header, payment_in_body};
pub use render::{ACP_ESCALATION_FROM, UCP_OUTCOMES_FROM, ucp_envelope};
pub use request::{
    BodyError, CreateRequest, Line, MAX_QUANTITY, VersionError, acp_version, newest_first,
    parse_create, parse_lines, parse_object, parse_quantity,
};
pub use session::{
    Checkout, Protocol, ReturnUrls, SessionError, State, from_session, session_form,
};
