//! The discovery documents agents and scanners read: site description, OpenAPI, llms.txt,
//! auth.md, robots.txt, sitemap, MCP server cards, AI catalog, RFC 9727 API catalog, the
//! agent-skills index, the A2A agent card and the commerce protocols' profiles. All are derived from the page list,
//! the shared constants in [`crate::meta`] and the tool registry the router hands in, so they
//! cannot drift from what the Worker actually serves.
//!
//! Pure functions of the base URL (and the tool list): no I/O, no request state.

mod a2a;
mod cards;
mod commerce;
mod openapi;
mod site;

pub use a2a::agent_card;
pub use cards::{
    SKILL_MD, ai_catalog, api_catalog, server_card, server_card_sep2127, skills_index,
};
pub use commerce::{acp_manifest, ucp_profile};
pub use openapi::openapi;
pub use site::{auth_md, llms_txt, robots_txt, site_info, site_info_schema, sitemap_xml};
