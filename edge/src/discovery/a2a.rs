//! The A2A agent card (`/.well-known/agent-card.json`, A2A 1.0, ProtoJSON field names).
//!
//! This site runs no A2A task endpoint: the card names its skills honestly and points at the
//! interface that serves them, MCP at `/mcp` (A2A's `protocolBinding` is an open string). The
//! card is a template kept as text, since the site's base URL and version are all that change.

use crate::meta::VERSION;

const TEMPLATE: &str = include_str!("agent-card.json");

/// The agent card for a site served at `base`.
pub fn agent_card(base: &str) -> String {
    TEMPLATE
        .replace("{base}", base)
        .replace("{version}", VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_card_names_every_tool_and_only_real_ones() {
        let card: Value = serde_json::from_str(&agent_card("https://x.test")).unwrap_or_default();
        assert_eq!(card["supportedInterfaces"][0]["url"], "https://x.test/mcp");
        assert_eq!(card["version"], VERSION);
        let ids: Vec<&str> = card["skills"]
            .as_array()
            .map(|s| s.iter().filter_map(|k| k["id"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(ids, ["search", "read", "offers", "checkout"]);
        let text = agent_card("");
        for tool in [
            "site_info",
            "search_pages",
            "read_page",
            "list_products",
            "create_checkout",
            "get_checkout",
        ] {
            assert!(text.contains(tool), "{tool} is not described");
        }
        assert!(!text.contains('{') || !text.contains("{base}"));
    }
}
