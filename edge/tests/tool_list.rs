//! The tool list is one list: MCP (`tools/list` in both eras, `tools/call site_info`), the
//! discovery documents (both server-card paths, `/agent/site.json`, `/llms.txt`, the OpenAPI
//! offer schema) and the site all show the same tools, in the same order, with the same specs.
//! Driven through the router, as the Worker runs it.

use edge::commerce::Offline;
use edge::config::Config;
use edge::reply::Reply;
use edge::request::Request;
use edge::router::handle;
use serde_json::{Value, json};

/// The public tool list. Changing it is an API change: update the e2e suites, the skill and the
/// pages that name tools together with it.
const TOOLS: [&str; 6] = [
    "site_info",
    "search_pages",
    "read_page",
    "list_products",
    "create_checkout",
    "get_checkout",
];

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn send(req: Request) -> Reply {
    let cfg = Config::from_vars(None, Some("localhost".into()), None, None);
    block_on(handle(&req, &cfg, "rid", &Offline))
}

fn json_of(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    serde_json::from_slice(&r.body).expect("a JSON body")
}

fn get(path: &str) -> Reply {
    send(Request::new("GET", path))
}

fn mcp(body: Value, headers: &[(&str, &str)]) -> Value {
    let mut req = Request::new("POST", "/mcp")
        .with_header("host", "localhost")
        .with_header("content-type", "application/json")
        .with_body(serde_json::to_vec(&body).expect("json"));
    for (n, v) in headers {
        req = req.with_header(n, v);
    }
    json_of(&send(req))["result"].clone()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|t| {
            t.as_str()
                .or_else(|| t["name"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn mcp_discovery_and_site_show_one_tool_list() {
    let legacy = mcp(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        &[],
    );
    let tools = legacy["tools"].clone();
    assert_eq!(names(&tools), TOOLS);

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let modern = mcp(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
    );
    assert_eq!(modern["tools"], tools, "both eras list the same tools");

    for card_path in ["/.well-known/mcp/server-card.json", "/.well-known/mcp.json"] {
        let card = json_of(&get(card_path));
        let card_tools = card["tools"].as_array().expect("card tools");
        assert_eq!(names(&card["tools"]), TOOLS, "{card_path}");
        for (c, t) in card_tools.iter().zip(tools.as_array().expect("tools")) {
            for field in ["name", "title", "description", "inputSchema"] {
                assert_eq!(c[field], t[field], "{card_path} {field} of {}", t["name"]);
            }
        }
    }

    let site = json_of(&get("/agent/site.json"));
    assert_eq!(names(&site["tools"]), TOOLS, "/agent/site.json");

    let info = mcp(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "site_info", "arguments": {}}}),
        &[],
    );
    assert_eq!(
        info["structuredContent"], site,
        "the site_info tool is site.json"
    );

    let llms = String::from_utf8(get("/llms.txt").body).expect("utf-8");
    assert!(
        llms.contains(&format!("(tools: {})", TOOLS.join(", "))),
        "{llms}"
    );

    let openapi = json_of(&get("/openapi.json"));
    let list_products = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "list_products"))
        .expect("list_products");
    assert_eq!(
        openapi["components"]["schemas"]["Products"], list_products["outputSchema"],
        "the OpenAPI offer list is the list_products result"
    );
}

#[test]
fn every_listed_tool_can_be_called() {
    for name in TOOLS {
        let result = mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": name, "arguments": {}}}),
            &[],
        );
        // An answer (a result or a tool error), never "Unknown tool" (a protocol error).
        assert!(result.get("isError").is_some(), "{name}: {result}");
    }
}
