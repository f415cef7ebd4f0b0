//! Request routing for the public site: pages with content negotiation, the agent API, the
//! discovery documents and the MCP endpoint. Rate limiting and signature checks happen before
//! this, in the glue, because they need Worker bindings.

use crate::commerce::{self, Backend};
use crate::config::Config;
use crate::discovery;
use crate::headers::{self, DOCUMENT_MAX_AGE, PAGE_MAX_AGE, document};
use crate::mcp;
use crate::meta::{
    AGENT_CARD_PATH, CT_AI_CATALOG, CT_JSON, CT_LINKSET, CT_MARKDOWN, CT_MCP_CARD, CT_OPENAPI,
    KEY_DIRECTORY_PATH, SKILL_PATH, UCP_PREVIOUS, UCP_PREVIOUS_PROFILE, UCP_VERSION,
};
use crate::pages;
use crate::problem::Problem;
use crate::registry::Registry;
use crate::reply::Reply;
use crate::request::Request;
use crate::search;
use crate::webbotauth;
use serde_json::Value;

/// Routes one request (already admitted by the rate limiter) and adds the common headers.
pub async fn handle<B: Backend>(
    req: &Request,
    cfg: &Config,
    request_id: &str,
    backend: &B,
) -> Reply {
    let reply = route(req, cfg, request_id, backend).await;
    headers::finish(reply, req, request_id)
}

/// A refusal the glue makes before routing (the rate limiter's 429, a body over the size
/// limit) in the error shape of the protocol the path speaks: ACP's `Error`, UCP's protocol
/// error, a JSON-RPC error on `/mcp`; problem+json everywhere else. The refusal's own headers
/// (`Retry-After`, `RateLimit`, ...) are kept.
pub fn refusal(req: &Request, reply: Reply) -> Reply {
    let detail = serde_json::from_slice::<Value>(&reply.body)
        .ok()
        .and_then(|v| v["detail"].as_str().map(str::to_string))
        .unwrap_or_default();
    let code = match reply.status {
        429 => "rate_limited",
        413 => "request_too_large",
        _ => "invalid_request",
    };
    let shaped = if req.path == "/mcp" {
        let retry = reply.header("retry-after").and_then(|s| s.parse().ok());
        mcp::refusal(&req.body, reply.status, &detail, retry)
    } else if let Some(r) = commerce::refusal(&req.path, reply.status, code, &detail) {
        r
    } else {
        return reply;
    };
    reply
        .headers
        .iter()
        .filter(|(n, _)| n != "content-type")
        .fold(shaped, |r, (n, v)| r.with_header(n, v))
}

fn json_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

fn method_not_allowed(req: &Request, allow: &str) -> Reply {
    Problem::new(
        405,
        "Method Not Allowed",
        format!(
            "{} is not supported at {}; use {allow}.",
            req.method, req.path
        ),
    )
    .into_reply()
    .with_header("allow", allow)
}

fn not_found(path: &str) -> Reply {
    Problem::new(
        404,
        "Not Found",
        format!("No page at {path}. Search with /agent/search?q=<words> or see /agent/site.json."),
    )
    .into_reply()
}

async fn route<B: Backend>(req: &Request, cfg: &Config, request_id: &str, backend: &B) -> Reply {
    let base = cfg.base_url(req).to_string();
    let path = req.path.as_str();

    let registry = Registry::get();

    if path == "/mcp" {
        let tools = registry.serve(&base, cfg, backend);
        return match req.method.as_str() {
            "OPTIONS" => mcp_preflight(req, cfg),
            _ => mcp_cors(req, cfg, mcp::handle(req, cfg, &tools).await),
        };
    }
    if let Some(reply) = commerce::route(req, cfg, &base, backend).await {
        return reply;
    }
    if req.method == "OPTIONS" {
        return headers::preflight_any();
    }
    if req.method != "GET" && req.method != "HEAD" {
        return method_not_allowed(req, "GET, HEAD");
    }

    let doc = |ct: &str, body: Vec<u8>| document(req, ct, body, DOCUMENT_MAX_AGE);
    match path {
        "/agent/search" => agent_search(req, &base),
        "/agent/read" => agent_read(req),
        "/agent/site.json" => doc(
            CT_JSON,
            json_bytes(&discovery::site_info(&base, registry.specs())),
        ),
        "/openapi.json" => doc(
            CT_OPENAPI,
            json_bytes(&discovery::openapi(&base, registry.specs())),
        ),
        "/llms.txt" => doc(
            CT_MARKDOWN,
            discovery::llms_txt(&base, registry.specs()).into_bytes(),
        ),
        "/auth.md" => doc(CT_MARKDOWN, discovery::auth_md(&base).into_bytes()),
        "/robots.txt" => doc(
            "text/plain; charset=utf-8",
            discovery::robots_txt(&base).into_bytes(),
        ),
        "/sitemap.xml" => doc(
            "application/xml; charset=utf-8",
            discovery::sitemap_xml(&base).into_bytes(),
        ),
        "/.well-known/mcp/server-card.json" | "/.well-known/mcp.json" => doc(
            CT_JSON,
            json_bytes(&discovery::server_card(&base, registry.specs())),
        ),
        AGENT_CARD_PATH => doc(CT_JSON, discovery::agent_card(&base).into_bytes()),
        "/.well-known/ucp" => doc(
            CT_JSON,
            json_bytes(&discovery::ucp_profile(&base, UCP_VERSION)),
        ),
        UCP_PREVIOUS_PROFILE => doc(
            CT_JSON,
            json_bytes(&discovery::ucp_profile(&base, UCP_PREVIOUS)),
        ),
        "/.well-known/acp.json" => doc(CT_JSON, json_bytes(&discovery::acp_manifest(&base))),
        "/mcp/server-card" => doc(
            CT_MCP_CARD,
            json_bytes(&discovery::server_card_sep2127(&base)),
        ),
        "/.well-known/ai-catalog.json" => {
            doc(CT_AI_CATALOG, json_bytes(&discovery::ai_catalog(&base)))
        }
        "/.well-known/api-catalog" => doc(CT_LINKSET, json_bytes(&discovery::api_catalog(&base))),
        "/.well-known/agent-skills/index.json" => {
            doc(CT_JSON, json_bytes(&discovery::skills_index()))
        }
        SKILL_PATH => doc(CT_MARKDOWN, discovery::SKILL_MD.as_bytes().to_vec()),
        KEY_DIRECTORY_PATH => key_directory(req, cfg, request_id),
        _ => page(req, path),
    }
}

/// A site page: Markdown for clients that ask for it, HTML otherwise.
fn page(req: &Request, path: &str) -> Reply {
    let Some(page) = pages::find(path) else {
        return not_found(path);
    };
    let reply = if req.wants_markdown() {
        document(
            req,
            CT_MARKDOWN,
            page.markdown.as_bytes().to_vec(),
            PAGE_MAX_AGE,
        )
    } else {
        document(
            req,
            "text/html; charset=utf-8",
            pages::to_html(page).into_bytes(),
            PAGE_MAX_AGE,
        )
    };
    reply.with_header("vary", "Accept").with_header(
        "link",
        &format!("<{}>; rel=\"alternate\"; type=\"text/markdown\"", page.path),
    )
}

fn agent_search(req: &Request, base: &str) -> Reply {
    let q = req.query_param("q").unwrap_or_default();
    let limit_raw = req.query_param("limit");
    let result =
        search::parse_limit(limit_raw.as_deref()).and_then(|limit| search::search(&q, limit, base));
    match result {
        Ok(results) => match serde_json::to_value(&results) {
            Ok(v) => document(req, CT_JSON, json_bytes(&v), PAGE_MAX_AGE),
            Err(e) => Problem::new(500, "Internal Server Error", e.to_string()).into_reply(),
        },
        Err(e) => headers::cors_any(Problem::new(400, "Bad Request", e.to_string()).into_reply()),
    }
}

fn agent_read(req: &Request) -> Reply {
    let Some(path) = req.query_param("path").filter(|p| !p.is_empty()) else {
        return headers::cors_any(
            Problem::new(
                400,
                "Bad Request",
                "path is required, e.g. /agent/read?path=/pricing",
            )
            .into_reply(),
        );
    };
    match pages::find(&path) {
        Some(page) => document(
            req,
            CT_MARKDOWN,
            page.markdown.as_bytes().to_vec(),
            PAGE_MAX_AGE,
        ),
        None => headers::cors_any(not_found(&path)),
    }
}

/// The site's own key directory, signed so a client can check it came from this host.
fn key_directory(req: &Request, cfg: &Config, request_id: &str) -> Reply {
    let Some(key) = cfg.signing_key.as_ref() else {
        return not_found(&req.path);
    };
    let body = webbotauth::directory_body(key);
    let reply = document(
        req,
        webbotauth::DIRECTORY_CONTENT_TYPE,
        body.clone().into_bytes(),
        DOCUMENT_MAX_AGE,
    );
    match webbotauth::sign_directory(
        key,
        &req.authority,
        body.as_bytes(),
        request_id,
        req.received_at_s,
    ) {
        Ok(sig) => reply
            .with_header("content-digest", &sig.content_digest)
            .with_header("signature-input", &sig.signature_input)
            .with_header("signature", &sig.signature),
        Err(_) => reply,
    }
}

const MCP_ALLOW_HEADERS: &str = "Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, \
                                 Mcp-Name, Last-Event-ID, Signature, Signature-Input, Signature-Agent";

/// The allowed `Origin` of a browser calling `/mcp`, if any. Only allow-listed origins get CORS
/// headers: the MCP endpoint is not a public read-only document.
fn allowed_origin<'a>(req: &'a Request, cfg: &Config) -> Option<&'a str> {
    let origin = req.header("origin")?;
    let host = origin.split_once("://").map(|(_, h)| h)?;
    cfg.host_allowed(host).then_some(origin)
}

fn mcp_cors(req: &Request, cfg: &Config, reply: Reply) -> Reply {
    match allowed_origin(req, cfg) {
        Some(origin) => reply
            .with_header("access-control-allow-origin", origin)
            .with_header("vary", "Origin")
            .with_header(
                "access-control-expose-headers",
                "MCP-Protocol-Version, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id",
            ),
        None => reply,
    }
}

fn mcp_preflight(req: &Request, cfg: &Config) -> Reply {
    mcp_cors(req, cfg, Reply::empty(204))
        .with_header("access-control-allow-methods", "POST, OPTIONS")
        .with_header("access-control-allow-headers", MCP_ALLOW_HEADERS)
        .with_header("access-control-max-age", "86400")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::block_on;

    fn cfg() -> Config {
        Config::from_vars(None, Some("localhost".into()), None, None)
    }

    fn get(target: &str) -> Reply {
        block_on(handle(
            &Request::new("GET", target),
            &cfg(),
            "rid",
            &crate::commerce::Offline,
        ))
    }

    fn json(r: &Reply) -> Value {
        serde_json::from_slice(&r.body).expect("json body")
    }

    #[test]
    fn pages_negotiate_markdown_and_html() {
        let md = block_on(handle(
            &Request::new("GET", "/pricing").with_header("accept", "text/markdown"),
            &cfg(),
            "rid",
            &crate::commerce::Offline,
        ));
        assert_eq!(md.status, 200);
        assert_eq!(md.header("content-type"), Some(CT_MARKDOWN));
        assert_eq!(md.header("vary"), Some("Accept"));
        assert!(String::from_utf8_lossy(&md.body).starts_with("# Pricing"));
        let html = get("/pricing");
        assert_eq!(
            html.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert!(String::from_utf8_lossy(&html.body).contains("<h1>Pricing</h1>"));
        assert!(
            html.headers
                .iter()
                .any(|(n, v)| n == "link" && v.contains("api-catalog"))
        );
        assert!(
            html.headers
                .iter()
                .any(|(n, v)| n == "link" && v.contains("rel=\"alternate\""))
        );
    }

    #[test]
    fn unknown_path_is_a_problem() {
        let r = get("/nope");
        assert_eq!(r.status, 404);
        assert_eq!(r.header("content-type"), Some(crate::problem::CONTENT_TYPE));
        let v = json(&r);
        assert_eq!(v["status"], 404);
        assert_eq!(v["title"], "Not Found");
    }

    #[test]
    fn wrong_method_names_the_allowed_ones() {
        let r = block_on(handle(
            &Request::new("POST", "/"),
            &cfg(),
            "rid",
            &crate::commerce::Offline,
        ));
        assert_eq!(r.status, 405);
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        let r = block_on(handle(
            &Request::new("DELETE", "/mcp"),
            &cfg(),
            "rid",
            &crate::commerce::Offline,
        ));
        assert_eq!(r.status, 405);
    }

    #[test]
    fn search_and_read() {
        let r = get("/agent/search?q=away+alerts&limit=2");
        assert_eq!(r.status, 200);
        let v = json(&r);
        assert_eq!(v["query"], "away alerts");
        assert_eq!(v["results"][0]["path"], "/docs/away-alerts-setup");
        assert_eq!(
            v["results"][0]["url"],
            "http://localhost/docs/away-alerts-setup"
        );
        assert_eq!(get("/agent/search?q=").status, 400);
        assert_eq!(get("/agent/search?q=x&limit=99").status, 400);
        let r = get("/agent/read?path=/pricing");
        assert_eq!(r.header("content-type"), Some(CT_MARKDOWN));
        assert_eq!(get("/agent/read?path=/nope").status, 404);
        assert_eq!(get("/agent/read").status, 400);
    }

    #[test]
    fn discovery_documents_have_their_types_and_cors() {
        for (path, ct) in [
            ("/.well-known/api-catalog", CT_LINKSET),
            ("/mcp/server-card", CT_MCP_CARD),
            ("/.well-known/ai-catalog.json", CT_AI_CATALOG),
            ("/.well-known/mcp.json", CT_JSON),
            ("/llms.txt", CT_MARKDOWN),
            (SKILL_PATH, CT_MARKDOWN),
            ("/.well-known/ucp", CT_JSON),
            ("/.well-known/ucp/2026-01-23", CT_JSON),
            ("/.well-known/acp.json", CT_JSON),
        ] {
            let r = get(path);
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.header("content-type"), Some(ct), "{path}");
            assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{path}");
            assert!(r.header("etag").is_some(), "{path}");
        }
    }

    #[test]
    fn commerce_routes_are_wired_before_the_read_only_rules() {
        // No Stripe key configured: the shop answers 503, not the site's 405 or 404.
        let r = get(crate::meta::PRODUCTS_PATH);
        assert_eq!(r.status, 503);
        assert_eq!(r.header("retry-after"), Some("10"));
        assert_eq!(json(&r)["code"], "service_unavailable");
        let post = |path: &str| {
            block_on(handle(
                &Request::new("POST", path)
                    .with_body(br#"{"line_items":[{"id":"pro_monthly"}]}"#.to_vec()),
                &cfg(),
                "rid",
                &crate::commerce::Offline,
            ))
        };
        assert_eq!(post("/agent/commerce/ucp/checkout-sessions").status, 503);
        assert_eq!(
            json(&post("/agent/commerce/acp/checkout_sessions"))["code"],
            "missing_api_version"
        );
        let pre = block_on(handle(
            &Request::new("OPTIONS", "/agent/commerce/acp/checkout_sessions"),
            &cfg(),
            "rid",
            &crate::commerce::Offline,
        ));
        assert_eq!(pre.status, 204);
        assert!(
            pre.header("access-control-allow-headers")
                .is_some_and(|h| h.contains("Idempotency-Key") && h.contains("API-Version"))
        );
        assert_eq!(get("/agent/commerce/nope").status, 404);
    }

    #[test]
    fn key_directory_is_404_without_a_key_and_signed_with_one() {
        assert_eq!(get(KEY_DIRECTORY_PATH).status, 404);
        let mut c = cfg();
        c.signing_key = Some([1u8; 32]);
        let r = block_on(handle(
            &Request::new("GET", KEY_DIRECTORY_PATH),
            &c,
            "rid",
            &crate::commerce::Offline,
        ));
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some(webbotauth::DIRECTORY_CONTENT_TYPE)
        );
        assert!(r.header("signature").is_some());
        assert!(
            r.header("content-digest")
                .is_some_and(|d| d.starts_with("sha-256=:"))
        );
    }

    #[test]
    fn mcp_cors_only_for_allowed_origins() {
        let pre = |origin: &str| {
            block_on(handle(
                &Request::new("OPTIONS", "/mcp").with_header("origin", origin),
                &cfg(),
                "rid",
                &crate::commerce::Offline,
            ))
        };
        assert_eq!(
            pre("http://localhost:3000").header("access-control-allow-origin"),
            Some("http://localhost:3000")
        );
        assert_eq!(
            pre("https://evil.example").header("access-control-allow-origin"),
            None
        );
    }
}
