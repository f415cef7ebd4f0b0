//! What the site is called, where its documents live and which protocol versions it speaks: the
//! constants the router, the discovery documents, MCP, commerce and Web Bot Auth all read.
//!
//! A leaf: it imports nothing from the crate, so any module may read it without creating an
//! import cycle. Only facts several modules share belong here; a constant one module owns stays
//! in that module.

// ---- Identity ------------------------------------------------------------------------------

pub const SERVICE_NAME: &str = "Presence sensing";
/// The MCP `serverInfo.name`.
pub const SERVER_NAME: &str = "presence-sensing-site";
/// Reverse-DNS name for the SEP-2127 server card (exactly one slash).
pub const CARD_NAME: &str = "com.presence-sensing/site";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const SUMMARY: &str = "Wi-Fi presence, motion and breathing sensing that runs on your own \
                           computer, with Away Alerts and a companion integration platform.";

// ---- Content types -------------------------------------------------------------------------

pub const CT_JSON: &str = "application/json";
pub const CT_MARKDOWN: &str = "text/markdown; charset=utf-8";
pub const CT_LINKSET: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";
pub const CT_MCP_CARD: &str = "application/mcp-server-card+json";
pub const CT_AI_CATALOG: &str = "application/ai-catalog+json";
pub const CT_OPENAPI: &str = "application/openapi+json";

// ---- Paths ---------------------------------------------------------------------------------

/// The buying guide for agents.
pub const SKILL_PATH: &str = "/agent/skills/buy-products/SKILL.md";
/// The site's own Web Bot Auth key directory (and where an agent's directory is looked up).
pub const KEY_DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The A2A agent card.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The offer list.
pub const PRODUCTS_PATH: &str = "/agent/commerce/products";
/// The UCP REST binding's base (its checkout sessions live under it).
pub const UCP_BASE: &str = "/agent/commerce/ucp";
/// The ACP REST binding's base.
pub const ACP_BASE: &str = "/agent/commerce/acp";
pub const UCP_SESSIONS: &str = "/agent/commerce/ucp/checkout-sessions";
pub const ACP_SESSIONS: &str = "/agent/commerce/acp/checkout_sessions";

/// `Link` header values sent on every response, so any URL leads to the discovery documents.
pub const LINKS: &[&str] = &[
    "</.well-known/api-catalog>; rel=\"api-catalog\"",
    "</openapi.json>; rel=\"service-desc\"; type=\"application/openapi+json\"",
    "</llms.txt>; rel=\"service-doc\"; type=\"text/markdown\"",
    "</agent/site.json>; rel=\"describedby\"; type=\"application/json\"",
    "</.well-known/mcp/server-card.json>; rel=\"mcp-server-card\"; type=\"application/json\"",
];

// ---- Protocol versions ---------------------------------------------------------------------

/// The MCP handshake-era revision we speak (and echo when a client asks for an older one we
/// know).
pub const MCP_LEGACY_VERSION: &str = "2025-11-25";
/// The stateless MCP revision.
pub const MCP_MODERN_VERSION: &str = "2026-07-28";
/// The UCP version of the checkout binding and of `/.well-known/ucp` (the newest we speak).
pub const UCP_VERSION: &str = "2026-04-08";
/// The previous UCP version, still answered in its own shapes when a platform's profile
/// declares it; its profile is a leaf document at [`UCP_PREVIOUS_PROFILE`].
pub const UCP_PREVIOUS: &str = "2026-01-23";
/// Where the [`UCP_PREVIOUS`] profile lives (the current profile's `supported_versions` points
/// here, as the UCP 2026-04-08 overview's example does).
pub const UCP_PREVIOUS_PROFILE: &str = "/.well-known/ucp/2026-01-23";
/// ACP API versions we answer, oldest first (as `/.well-known/acp.json` lists them).
pub const ACP_VERSIONS: &[&str] = &[
    "2025-09-29",
    "2025-12-12",
    "2026-01-16",
    "2026-01-30",
    "2026-04-17",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commerce_paths_nest_under_their_bases() {
        assert!(UCP_SESSIONS.starts_with(UCP_BASE));
        assert!(ACP_SESSIONS.starts_with(ACP_BASE));
        assert_eq!(CARD_NAME.matches('/').count(), 1);
    }
}
