//! The discovery documents agents and scanners read: site description, OpenAPI, llms.txt,
//! auth.md, robots.txt, sitemap, MCP server cards, AI catalog, RFC 9727 API catalog and the
//! agent-skills index. All are derived from the page list and tool registry, so they cannot
//! drift from what the Worker actually serves.

use crate::{pages, search, tools};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const SERVICE_NAME: &str = "Presence sensing";
pub const SERVER_NAME: &str = "presence-sensing-site";
/// Reverse-DNS name for the SEP-2127 server card (exactly one slash).
pub const CARD_NAME: &str = "com.presence-sensing/site";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const SUMMARY: &str = "Wi-Fi presence, motion and breathing sensing that runs on your own \
                           computer, with Away Alerts and a companion integration platform.";

/// The buying guide, served at [`SKILL_PATH`].
pub const SKILL_MD: &str = include_str!("../skills/buy-products/SKILL.md");
pub const SKILL_PATH: &str = "/agent/skills/buy-products/SKILL.md";

pub const CT_JSON: &str = "application/json";
pub const CT_MARKDOWN: &str = "text/markdown; charset=utf-8";
pub const CT_LINKSET: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";
pub const CT_MCP_CARD: &str = "application/mcp-server-card+json";
pub const CT_AI_CATALOG: &str = "application/ai-catalog+json";
pub const CT_OPENAPI: &str = "application/openapi+json";

/// `Link` header values sent on every response, so any URL leads to the discovery documents.
pub const LINKS: &[&str] = &[
    "</.well-known/api-catalog>; rel=\"api-catalog\"",
    "</openapi.json>; rel=\"service-desc\"; type=\"application/openapi+json\"",
    "</llms.txt>; rel=\"service-doc\"; type=\"text/markdown\"",
    "</agent/site.json>; rel=\"describedby\"; type=\"application/json\"",
    "</.well-known/mcp/server-card.json>; rel=\"mcp-server-card\"; type=\"application/json\"",
];

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
    (SKILL_PATH, "Buying guide for agents"),
    (
        "/.well-known/http-message-signatures-directory",
        "This site's HTTP message signature keys",
    ),
    ("/support", "Contact and removal requests"),
];

/// The `site_info` tool result and the body of `/agent/site.json`.
pub fn site_info(base: &str) -> Value {
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
            "buy_products_skill": doc(SKILL_PATH),
            "signatures_directory": doc("/.well-known/http-message-signatures-directory"),
            "support": doc("/support"),
            "products": doc(crate::commerce::PRODUCTS_PATH),
            "ucp_profile": doc("/.well-known/ucp"),
            "acp_manifest": doc("/.well-known/acp.json"),
        },
        "pages": pages::all().iter().map(|p| json!({
            "path": p.path, "title": p.title, "description": p.description, "url": doc(p.path),
        })).collect::<Vec<_>>(),
        "tools": tools::all_specs().iter().map(|t| t.name).collect::<Vec<_>>(),
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

fn problem_schema() -> Value {
    json!({
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string"},
            "request_id": {"type": "string"}
        }
    })
}

/// OpenAPI 3.1 document of the agent API.
pub fn openapi(base: &str) -> Value {
    let problem = |desc: &str| json!({"description": desc, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}});
    let too_many = json!({
        "description": "More than one request per second from this client.",
        "headers": {
            "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."},
            "RateLimit": {"schema": {"type": "string"}, "description": "draft-ietf-httpapi-ratelimit-headers"},
            "RateLimit-Policy": {"schema": {"type": "string"}}
        },
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{SERVICE_NAME} agent API"),
            "version": VERSION,
            "summary": SUMMARY,
            "description": "Anonymous API for AI agents; buying ends on Stripe's hosted checkout page. Limit: one request per second per client (HTTP 429 with Retry-After above it). Optional Web Bot Auth signatures give a signed agent its own limit.",
            "contact": {"url": format!("{base}/support")}
        },
        "servers": [{"url": base}],
        "paths": {
            "/agent/site.json": {"get": {
                "operationId": "getSiteInfo",
                "summary": "Describe the service and link every discovery document.",
                "responses": {
                    "200": {"description": "Service description.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SiteInfo"}}}},
                    "429": too_many
                }
            }},
            "/agent/search": {"get": {
                "operationId": "searchPages",
                "summary": "Find pages whose path contains the given words (titles break ties).",
                "parameters": [
                    {"name": "q", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}, "example": "away alerts"},
                    {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT, "default": search::DEFAULT_LIMIT}}
                ],
                "responses": {
                    "200": {"description": "Matching pages, best first.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SearchResults"}}}},
                    "400": problem("No words in q, or limit out of range."),
                    "429": too_many
                }
            }},
            "/agent/read": {"get": {
                "operationId": "readPage",
                "summary": "One site page as Markdown.",
                "parameters": [
                    {"name": "path", "in": "query", "required": true, "schema": {"type": "string", "pattern": "^/"}, "example": "/pricing"}
                ],
                "responses": {
                    "200": {"description": "The page.", "content": {"text/markdown": {"schema": {"type": "string"}}}},
                    "400": problem("path missing."),
                    "404": problem("No such page."),
                    "429": too_many
                }
            }},
            "/agent/commerce/products": {"get": {
                "operationId": "listProducts",
                "summary": "Plans and hardware for sale, read live from Stripe (cached at most 60 s).",
                "responses": {
                    "200": {"description": "The offers.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Products"}}}},
                    "429": too_many,
                    "503": problem("Stripe is unavailable; see Retry-After.")
                }
            }},
            "/agent/commerce/ucp/checkout-sessions": {"post": {
                "operationId": "ucpCreateCheckout",
                "summary": "UCP 2026-04-08 checkout for one offer; answers requires_escalation with continue_url (pay on Stripe's hosted page). Also GET/PUT /{id}, POST /{id}/complete, POST /{id}/cancel.",
                "externalDocs": {"url": format!("https://ucp.dev/{}/specification/checkout", crate::checkout::UCP_VERSION)},
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "maxLength": 255}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
                "responses": {
                    "201": {"description": "UCP checkout object.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Checkout"}}}},
                    "400": problem("Malformed body, or payment credentials sent (code payment_not_accepted)."),
                    "409": problem("Offer out of stock, or Idempotency-Key reused with another body."),
                    "422": problem("Unknown offer id."),
                    "429": too_many,
                    "503": problem("Stripe is unavailable; see Retry-After.")
                }
            }},
            "/agent/commerce/acp/checkout_sessions": {"post": {
                "operationId": "acpCreateCheckout",
                "summary": "ACP checkout session (API-Version 2025-09-29 to 2026-04-17). Also GET/POST /{id}, POST /{id}/complete, POST /{id}/cancel.",
                "externalDocs": {"url": "https://www.agenticcommerce.dev/"},
                "parameters": [
                    {"name": "API-Version", "in": "header", "required": true, "schema": {"enum": crate::checkout::ACP_VERSIONS}},
                    {"name": "Idempotency-Key", "in": "header", "required": true, "schema": {"type": "string", "maxLength": 255}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
                "responses": {
                    "201": {"description": "ACP checkout session.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Checkout"}}}},
                    "400": problem("Missing or unsupported API-Version, missing Idempotency-Key, malformed body, or payment credentials."),
                    "409": problem("Offer out of stock, or a request with this key is in flight."),
                    "422": problem("Unknown offer id, or Idempotency-Key reused with another body."),
                    "429": too_many,
                    "503": problem("Stripe is unavailable; see Retry-After.")
                }
            }},
            "/mcp": {"post": {
                "operationId": "mcp",
                "summary": "MCP over Streamable HTTP (JSON-RPC 2.0; protocol 2025-11-25 and 2026-07-28).",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcRequest"}}}},
                "responses": {
                    "200": {"description": "JSON-RPC response.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
                    "202": {"description": "Notification accepted."},
                    "400": {"description": "Protocol error (JSON-RPC error body).", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
                    "403": problem("Host or Origin not allowed."),
                    "405": problem("Only POST is supported."),
                    "429": too_many
                }
            }}
        },
        "components": {"schemas": {
            "Problem": problem_schema(),
            "SiteInfo": site_info_schema(),
            "SearchResults": tools::search_results_schema(),
            "Products": crate::commerce::commerce_specs()
                .into_iter()
                .find(|t| t.name == "list_products")
                .map(|t| t.output_schema)
                .unwrap_or_else(|| json!({"type": "object"})),
            "CheckoutRequest": {
                "type": "object",
                "description": "One offer, in any protocol's form: line_items or items, each {id, quantity?} or {item: {id}, quantity}.",
                "properties": {
                    "line_items": {"type": "array", "minItems": 1, "maxItems": 1},
                    "items": {"type": "array", "minItems": 1, "maxItems": 1},
                    "buyer": {"type": "object", "properties": {"email": {"type": "string"}}},
                    "currency": {"type": "string"}
                }
            },
            "Checkout": {
                "type": "object",
                "required": ["id", "status", "currency", "line_items", "totals", "links"],
                "properties": {
                    "id": {"type": "string", "pattern": "^cs_"},
                    "status": {"enum": ["requires_escalation", "not_ready_for_payment", "completed", "canceled", "expired"]},
                    "continue_url": {"type": "string", "format": "uri"},
                    "currency": {"type": "string"},
                    "line_items": {"type": "array"},
                    "totals": {"type": "array"},
                    "messages": {"type": "array"},
                    "links": {"type": "array"},
                    "expires_at": {"type": "string"},
                    "order": {"type": "object"}
                }
            },
            "JsonRpcRequest": {
                "type": "object",
                "required": ["jsonrpc", "method"],
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "id": {"type": ["string", "integer"]},
                    "method": {"type": "string"},
                    "params": {"type": "object"}
                }
            },
            "JsonRpcResponse": {
                "type": "object",
                "required": ["jsonrpc"],
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "id": {"type": ["string", "integer", "null"]},
                    "result": {"type": "object"},
                    "error": {"type": "object", "required": ["code", "message"], "properties": {
                        "code": {"type": "integer"}, "message": {"type": "string"}, "data": {}
                    }}
                }
            }
        }}
    })
}

/// `/llms.txt` (llmstxt.org layout).
pub fn llms_txt(base: &str) -> String {
    let mut s = format!(
        "# {SERVICE_NAME}\n\n> {SUMMARY}\n\nAgents use this site anonymously at up to one request \
         per second per client. The MCP server is at {base}/mcp (tools: site_info, search_pages, \
         read_page, list_products, create_checkout, get_checkout). Pages are Markdown when requested with `Accept: text/markdown`.\n\n## Pages\n\n"
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
         - [UCP profile]({base}/.well-known/ucp): checkout sessions (UCP 2026-04-08)\n\
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

/// SEP-1649 server card (`/.well-known/mcp/server-card.json`, `/.well-known/mcp.json`).
pub fn server_card(base: &str, specs: &[tools::ToolSpec]) -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
        "version": "1.0",
        "protocolVersion": crate::mcp::LEGACY_VERSION,
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

/// `/.well-known/ucp`: the UCP 2026-04-08 business profile (REST transport only; our MCP tools
/// are not UCP's, so the `mcp` transport is not advertised). Payment happens on Stripe's hosted
/// page, so there are no payment handlers.
pub fn ucp_profile(base: &str) -> Value {
    let v = crate::checkout::UCP_VERSION;
    json!({"ucp": {
        "version": v,
        "payment_handlers": {},
        "services": {"dev.ucp.shopping": [{
            "version": v,
            "transport": "rest",
            "endpoint": format!("{base}{}", crate::commerce::UCP_BASE),
            "spec": format!("https://ucp.dev/{v}/specification/overview"),
            "schema": format!("https://ucp.dev/{v}/services/shopping/rest.openapi.json"),
        }]},
        "capabilities": {"dev.ucp.shopping.checkout": [{
            "version": v,
            "spec": format!("https://ucp.dev/{v}/specification/checkout"),
            "schema": format!("https://ucp.dev/{v}/schemas/shopping/checkout.json"),
        }]},
    }})
}

/// `/.well-known/acp.json`: versions oldest first, REST only (our MCP tools are not ACP's
/// `*_checkout_session` tools), no payment configuration.
pub fn acp_manifest(base: &str) -> Value {
    let versions = crate::checkout::ACP_VERSIONS;
    json!({
        "protocol": {
            "name": "acp",
            "version": versions.last().copied().unwrap_or_default(),
            "supported_versions": versions,
        },
        "api_base_url": format!("{base}{}", crate::commerce::ACP_BASE),
        "transports": ["rest"],
        "capabilities": {"services": ["checkout"]},
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
    fn site_info_links_every_document() {
        let v = site_info("https://x.test");
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
    }

    #[test]
    fn commerce_documents_follow_the_notes() {
        let ucp = ucp_profile("https://x.test");
        assert_eq!(ucp["ucp"]["version"], "2026-04-08");
        assert_eq!(ucp["ucp"]["payment_handlers"], json!({}));
        assert_eq!(
            ucp["ucp"]["services"]["dev.ucp.shopping"][0]["endpoint"],
            "https://x.test/agent/commerce/ucp"
        );
        let acp = acp_manifest("https://x.test");
        assert_eq!(acp["protocol"]["supported_versions"][0], "2025-09-29");
        assert_eq!(acp["protocol"]["version"], "2026-04-17");
        assert_eq!(acp["capabilities"]["services"], json!(["checkout"]));
        let site = site_info("https://x.test");
        assert_eq!(site["tools"].as_array().map(Vec::len), Some(6));
    }

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
    fn robots_has_ai_rules_sitemap_and_content_signal() {
        let r = robots_txt("https://x.test");
        assert!(r.contains("User-agent: GPTBot"));
        assert!(r.contains("Content-Signal: search=yes, ai-input=yes, ai-train=no"));
        assert!(r.contains("Sitemap: https://x.test/sitemap.xml"));
    }

    #[test]
    fn llms_txt_starts_with_name_and_summary() {
        let l = llms_txt("https://x.test");
        assert!(l.starts_with("# Presence sensing\n\n> "));
        assert!(l.contains("## Optional"));
    }

    #[test]
    fn server_cards_follow_their_shapes() {
        let card = server_card("https://x.test", &tools::site_specs());
        assert_eq!(card["transport"]["endpoint"], "https://x.test/mcp");
        assert_eq!(card["authentication"]["required"], false);
        assert!(card["tools"].as_array().is_some_and(|t| !t.is_empty()));
        let c2 = server_card_sep2127("https://x.test");
        assert_eq!(CARD_NAME.matches('/').count(), 1);
        assert_eq!(c2["remotes"][0]["url"], "https://x.test/mcp");
        assert_eq!(
            ai_catalog("https://x.test")["entries"][0]["identifier"],
            "urn:air:x.test:mcp:site"
        );
    }
}
