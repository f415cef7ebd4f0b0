//! The documents that describe the site as a whole: `/agent/site.json` (also the `site_info`
//! tool's result), `/llms.txt`, `/auth.md`, `/robots.txt` and `/sitemap.xml`.

use crate::meta::{
    AGENT_CARD_PATH, KEY_DIRECTORY_PATH, PRODUCTS_PATH, SERVICE_NAME, SKILL_PATH, SUMMARY,
    UCP_PREVIOUS_PROFILE, VERSION,
};
use crate::pages;
use crate::tool::ToolSpec;
use serde_json::{Value, json};

/// Well-known discovery documents by path: (path, title). Drives site.json and llms.txt.
const DOCUMENTS: &[(&str, &str)] = &[
    ("/openapi.json", "OpenAPI 3.1 description of the agent API"),
    ("/llms.txt", "Site summary for language models"),
    (
        "/auth.md",
        "How agents authenticate (anonymous; optional Web Bot Auth)",
    ),
    ("/robots.txt", "Crawler rules and content signals"),
    ("/sitemap.xml", "Every page"),
    ("/.well-known/api-catalog", "RFC 9727 API catalog"),
    (
        "/.well-known/mcp/server-card.json",
        "MCP server card (SEP-1649)",
    ),
    ("/mcp/server-card", "MCP server card (SEP-2127)"),
    ("/.well-known/ai-catalog.json", "AI catalog"),
    ("/.well-known/agent-skills/index.json", "Agent skills index"),
    (
        AGENT_CARD_PATH,
        "A2A agent card (its skills; served over MCP)",
    ),
    (SKILL_PATH, "Buying guide for agents"),
    (
        KEY_DIRECTORY_PATH,
        "This site's HTTP message signature keys",
    ),
    ("/support", "Contact and removal requests"),
];

/// The `site_info` tool result and the body of `/agent/site.json`; `tools` is the tool registry
/// (its names are listed).
pub fn site_info(base: &str, tools: &[ToolSpec]) -> Value {
    let doc = |p: &str| format!("{base}{p}");
    json!({
        "name": SERVICE_NAME,
        "description": SUMMARY,
        "url": doc("/"),
        "version": VERSION,
        "authentication": "none; anonymous access, optional Web Bot Auth (RFC 9421) signatures",
        "rate_limit": {"requests": 1, "window_s": 1, "scope": "per client"},
        "links": {
            "mcp": doc("/mcp"),
            "search": doc("/agent/search?q={words}"),
            "read": doc("/agent/read?path={path}"),
            "openapi": doc("/openapi.json"),
            "llms_txt": doc("/llms.txt"),
            "auth": doc("/auth.md"),
            "robots": doc("/robots.txt"),
            "sitemap": doc("/sitemap.xml"),
            "api_catalog": doc("/.well-known/api-catalog"),
            "mcp_server_card": doc("/.well-known/mcp/server-card.json"),
            "mcp_server_card_sep2127": doc("/mcp/server-card"),
            "ai_catalog": doc("/.well-known/ai-catalog.json"),
            "agent_skills": doc("/.well-known/agent-skills/index.json"),
            "a2a_agent_card": doc(AGENT_CARD_PATH),
            "buy_products_skill": doc(SKILL_PATH),
            "signatures_directory": doc(KEY_DIRECTORY_PATH),
            "support": doc("/support"),
            "products": doc(PRODUCTS_PATH),
            "ucp_profile": doc("/.well-known/ucp"),
            "ucp_profile_2026_01_23": doc(UCP_PREVIOUS_PROFILE),
            "acp_manifest": doc("/.well-known/acp.json"),
        },
        "pages": pages::all().iter().map(|p| json!({
            "path": p.path, "title": p.title, "description": p.description, "url": doc(p.path),
        })).collect::<Vec<_>>(),
        "tools": tools.iter().map(|t| t.name).collect::<Vec<_>>(),
    })
}

/// JSON Schema of [`site_info`], shared by the tool's output schema and OpenAPI.
pub fn site_info_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "description", "url", "version", "authentication", "rate_limit", "links", "pages", "tools"],
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "url": {"type": "string"},
            "version": {"type": "string"},
            "authentication": {"type": "string"},
            "rate_limit": {
                "type": "object",
                "required": ["requests", "window_s", "scope"],
                "properties": {
                    "requests": {"type": "integer"},
                    "window_s": {"type": "integer"},
                    "scope": {"type": "string"}
                }
            },
            "links": {"type": "object", "additionalProperties": {"type": "string"}},
            "pages": {"type": "array", "items": {
                "type": "object",
                "required": ["path", "title", "description", "url"],
                "properties": {
                    "path": {"type": "string"}, "title": {"type": "string"},
                    "description": {"type": "string"}, "url": {"type": "string"}
                }
            }},
            "tools": {"type": "array", "items": {"type": "string"}}
        }
    })
}

/// `/llms.txt` (llmstxt.org layout); `tools` is the tool registry (its names are listed).
pub fn llms_txt(base: &str, tools: &[ToolSpec]) -> String {
    let names = tools.iter().map(|t| t.name).collect::<Vec<_>>().join(", ");
    let mut s = format!(
        "# {SERVICE_NAME}\n\n> {SUMMARY}\n\nAgents use this site anonymously at up to one request \
         per second per client. The MCP server is at {base}/mcp (tools: {names}). Pages are \
         Markdown when requested with `Accept: text/markdown`.\n\n## Pages\n\n"
    );
    for p in pages::all() {
        s.push_str(&format!(
            "- [{}]({base}{}): {}\n",
            p.title, p.path, p.description
        ));
    }
    s.push_str("\n## Agent API\n\n");
    s.push_str(&format!(
        "- [Search pages]({base}/agent/search?q=pricing): words matched against page paths\n\
         - [Read a page]({base}/agent/read?path=/pricing): one page as Markdown\n\
         - [MCP server]({base}/mcp): Streamable HTTP, protocol 2025-11-25 and 2026-07-28\n\
         - [Products]({base}/agent/commerce/products): plans and hardware with live prices\n\
         - [UCP profile]({base}/.well-known/ucp): checkout sessions (UCP 2026-04-08; 2026-01-23 at /.well-known/ucp/2026-01-23)\n\
         - [ACP manifest]({base}/.well-known/acp.json): checkout sessions (ACP)\n"
    ));
    s.push_str("\n## Optional\n\n");
    for (path, title) in DOCUMENTS {
        s.push_str(&format!("- [{title}]({base}{path})\n"));
    }
    s
}

/// `/auth.md`: how agents authenticate (they don't have to).
pub fn auth_md(base: &str) -> String {
    format!(
        "# Authentication\n\n\
         Access to this site is **anonymous**. No credential is required or issued for `/agent/*`, \
         `/mcp`, `/openapi.json`, `/llms.txt` or any page. There is no registration, no \
         provisioning endpoint, no OAuth authorization server and no agent account.\n\n\
         ## Rate limit\n\n\
         One request per second per client. A client is your IP address, or your verified agent \
         identity when you sign requests (below). Above the limit the answer is HTTP 429 with \
         `Retry-After` (seconds), `RateLimit` and `RateLimit-Policy` headers and an RFC 9457 \
         problem body.\n\n\
         ## Optional: Web Bot Auth\n\n\
         Signed requests (RFC 9421, `draft-ietf-webbotauth-httpsig-protocol`) are accepted and \
         give your agent its own rate-limit bucket. Send `Signature-Agent`, `Signature-Input` and \
         `Signature`; sign with Ed25519, `tag=\"web-bot-auth\"`, `created` and `expires`, \
         `keyid` = the JWK thumbprint, covering `@authority` (and `signature-agent` when sent). \
         Your key directory must be served over HTTPS at \
         `/.well-known/http-message-signatures-directory`, or inline as a \
         `data:application/http-message-signatures-directory;base64,...` URL. An invalid \
         signature is never an error: the request is served as anonymous.\n\n\
         This site's own keys: {base}/.well-known/http-message-signatures-directory\n\n\
         ## Identify yourself\n\n\
         Send a descriptive `User-Agent` with a contact URL.\n\n\
         ## Buying\n\n\
         Buying needs no account or key. Checkouts return a `continue_url` where the buyer pays \
         on the payment processor's hosted page; payment instruments, delegated tokens, HTTP 402 \
         payment credentials, x402 and AP2 mandates are not accepted. ACP `Authorization` and the \
         UCP `UCP-Agent` header are optional. See {base}{SKILL_PATH}.\n"
    )
}

/// `/robots.txt`: AI crawlers welcome for search and answers, not for training.
pub fn robots_txt(base: &str) -> String {
    let mut s = String::from(
        "# Agents: see /llms.txt and /agent/site.json. One request per second, please.\n\n",
    );
    for bot in [
        "GPTBot",
        "OAI-SearchBot",
        "ChatGPT-User",
        "ClaudeBot",
        "Claude-User",
        "Claude-SearchBot",
        "PerplexityBot",
        "Perplexity-User",
        "Google-Extended",
        "Applebot-Extended",
        "CCBot",
    ] {
        s.push_str(&format!("User-agent: {bot}\n"));
    }
    s.push_str(
        "Content-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n\n\
         User-agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n\n",
    );
    s.push_str(&format!("Sitemap: {base}/sitemap.xml\n"));
    s
}

/// `/sitemap.xml`.
pub fn sitemap_xml(base: &str) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for p in pages::all() {
        s.push_str(&format!("  <url><loc>{base}{}</loc></url>\n", p.path));
    }
    s.push_str("</urlset>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["site_info", "read_page"]
            .into_iter()
            .map(|name| ToolSpec {
                name,
                title: "t",
                description: "d",
                input_schema: json!({"type": "object"}),
                output_schema: json!({"type": "object"}),
                read_only: true,
                open_world: false,
            })
            .collect()
    }

    #[test]
    fn site_info_links_every_document_and_lists_the_tools_given() {
        let v = site_info("https://x.test", &tools());
        for (path, _) in DOCUMENTS {
            let url = format!("https://x.test{path}");
            assert!(
                v["links"]
                    .as_object()
                    .is_some_and(|l| l.values().any(|u| *u == url)),
                "{path} missing from site.json links"
            );
        }
        assert_eq!(
            v["pages"].as_array().map(Vec::len),
            Some(pages::all().len())
        );
        assert_eq!(v["tools"], json!(["site_info", "read_page"]));
    }

    #[test]
    fn robots_has_ai_rules_sitemap_and_content_signal() {
        let r = robots_txt("https://x.test");
        assert!(r.contains("User-agent: GPTBot"));
        assert!(r.contains("Content-Signal: search=yes, ai-input=yes, ai-train=no"));
        assert!(r.contains("Sitemap: https://x.test/sitemap.xml"));
    }

    #[test]
    fn llms_txt_starts_with_name_and_summary_and_names_the_tools() {
        let l = llms_txt("https://x.test", &tools());
        assert!(l.starts_with("# Presence sensing\n\n> "));
        assert!(l.contains("https://x.test/mcp (tools: site_info, read_page). Pages are Markdown"));
        assert!(l.contains("## Optional"));
    }
}
