//! Cards and catalogs that point agents at the MCP server and the skills: the SEP-1649 and
//! SEP-2127 MCP server cards, the AI catalog, the RFC 9727 API catalog and the agent-skills
//! index (with the buying guide it lists).

use crate::meta::{
    AGENT_CARD_PATH, CARD_NAME, CT_JSON, CT_MCP_CARD, CT_OPENAPI, MCP_LEGACY_VERSION, SERVER_NAME,
    SERVICE_NAME, SKILL_PATH, SUMMARY, VERSION,
};
use crate::tool::ToolSpec;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The buying guide, served at [`SKILL_PATH`].
pub const SKILL_MD: &str = include_str!("../../skills/buy-products/SKILL.md");

/// SEP-1649 server card (`/.well-known/mcp/server-card.json`, `/.well-known/mcp.json`).
pub fn server_card(base: &str, specs: &[ToolSpec]) -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
        "version": "1.0",
        "protocolVersion": MCP_LEGACY_VERSION,
        "serverInfo": {"name": SERVER_NAME, "title": SERVICE_NAME, "version": VERSION},
        "description": SUMMARY,
        "transport": {"type": "streamable-http", "endpoint": format!("{base}/mcp")},
        "capabilities": {"tools": {"listChanged": false}},
        "authentication": {"required": false, "schemes": []},
        "tools": specs.iter().map(|t| json!({
            "name": t.name, "title": t.title, "description": t.description,
            "inputSchema": t.input_schema,
        })).collect::<Vec<_>>(),
    })
}

/// SEP-2127 server card (`/mcp/server-card`).
pub fn server_card_sep2127(base: &str) -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
        "name": CARD_NAME,
        "title": SERVICE_NAME,
        "version": VERSION,
        "description": SUMMARY,
        "websiteUrl": format!("{base}/"),
        "remotes": [{"type": "streamable-http", "url": format!("{base}/mcp")}],
    })
}

/// `/.well-known/ai-catalog.json`.
pub fn ai_catalog(base: &str) -> Value {
    let host = base.split_once("://").map_or(base, |(_, h)| h);
    json!({
        "specVersion": "1.0",
        "entries": [{
            "identifier": format!("urn:air:{host}:mcp:site"),
            "type": CT_MCP_CARD,
            "url": format!("{base}/mcp/server-card"),
            "name": SERVICE_NAME,
            "description": SUMMARY,
        }],
    })
}

/// `/.well-known/api-catalog` (RFC 9727 linkset).
pub fn api_catalog(base: &str) -> Value {
    json!({"linkset": [
        {
            "anchor": format!("{base}/agent"),
            "service-desc": [{"href": format!("{base}/openapi.json"), "type": CT_OPENAPI}],
            "service-doc": [{"href": format!("{base}/llms.txt"), "type": "text/markdown"}],
            "service-meta": [{"href": format!("{base}/agent/site.json"), "type": CT_JSON}],
        },
        {
            "anchor": format!("{base}/mcp"),
            "service-desc": [{"href": format!("{base}/.well-known/mcp/server-card.json"), "type": CT_JSON}],
            "service-doc": [{"href": format!("{base}/auth.md"), "type": "text/markdown"}],
            "service-meta": [{"href": format!("{base}{AGENT_CARD_PATH}"), "type": CT_JSON}],
        }
    ]})
}

/// `/.well-known/agent-skills/index.json` with the SKILL.md digest.
pub fn skills_index() -> Value {
    let digest: String = Sha256::digest(SKILL_MD.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let description = SKILL_MD
        .lines()
        .find_map(|l| l.strip_prefix("description: "))
        .unwrap_or("Buy a presence-sensing plan or hardware.");
    json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": [{
            "name": "buy-products",
            "type": "skill-md",
            "description": description,
            "url": SKILL_PATH,
            "digest": format!("sha256:{digest}"),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_front_matter_is_valid_and_digest_matches() {
        let name = SKILL_MD.lines().find_map(|l| l.strip_prefix("name: "));
        assert_eq!(name, Some("buy-products"));
        let idx = skills_index();
        let d = idx["skills"][0]["description"].as_str().unwrap_or("");
        assert!(!d.is_empty() && d.len() <= 1024);
        let digest = idx["skills"][0]["digest"].as_str().unwrap_or("");
        assert_eq!(digest.len(), "sha256:".len() + 64);
    }

    #[test]
    fn server_cards_follow_their_shapes() {
        let spec = ToolSpec {
            name: "site_info",
            title: "Site information",
            description: "d",
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            read_only: true,
            open_world: false,
        };
        let card = server_card("https://x.test", &[spec]);
        assert_eq!(card["transport"]["endpoint"], "https://x.test/mcp");
        assert_eq!(card["authentication"]["required"], false);
        assert_eq!(card["tools"][0]["name"], "site_info");
        let c2 = server_card_sep2127("https://x.test");
        assert_eq!(CARD_NAME.matches('/').count(), 1);
        assert_eq!(c2["remotes"][0]["url"], "https://x.test/mcp");
        assert_eq!(
            ai_catalog("https://x.test")["entries"][0]["identifier"],
            "urn:air:x.test:mcp:site"
        );
    }
}
