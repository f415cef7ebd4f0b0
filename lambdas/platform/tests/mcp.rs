//! The remote MCP server over loopback HTTP: both key forms, the tools, and refusals.

mod common;

use common::{Resp, post_json, send_with_headers, server};
use platform::domain::accounts;
use platform::domain::clock::Clock;
use serde_json::{Value, json};

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

async fn rpc(base: &str, path: &str, key: Option<&str>, method: &str, params: Value) -> Resp {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    send_with_headers(
        base,
        post_json(path, key, &body),
        &[ACCEPT, ("mcp-protocol-version", "2025-06-18")],
    )
    .await
}

fn initialize() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {},
           "clientInfo": {"name": "test", "version": "1.0"}})
}

async fn call_tool(base: &str, path: &str, key: Option<&str>, name: &str, args: Value) -> Value {
    let r = rpc(
        base,
        path,
        key,
        "tools/call",
        json!({"name": name, "arguments": args}),
    )
    .await;
    assert_eq!(r.status, 200, "{name}: {}", String::from_utf8_lossy(&r.raw));
    r.body["result"].clone()
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn both_key_forms_reach_the_tools() {
    let srv = server().await;
    let a = srv.account("mcp@example.com").await;
    let k = a.key.expose();
    let url_key = format!("/mcp/k/{k}");

    let init = rpc(&srv.base, "/mcp", Some(k), "initialize", initialize()).await;
    assert_eq!(init.status, 200, "{}", String::from_utf8_lossy(&init.raw));
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(
        init.body["result"]["serverInfo"]["name"],
        "companion-platform"
    );
    assert!(init.header("mcp-session-id").is_none(), "stateless");
    assert_eq!(
        common::ratelimit(&init).0,
        119,
        "MCP calls count against the key"
    );
    assert!(init.header("x-request-id").is_some());

    let note = send_with_headers(
        &srv.base,
        post_json(
            "/mcp",
            Some(k),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        &[ACCEPT, ("mcp-protocol-version", "2025-06-18")],
    )
    .await;
    assert_eq!(note.status, 202, "{}", String::from_utf8_lossy(&note.raw));
    assert!(note.raw.is_empty());

    let list = rpc(&srv.base, &url_key, None, "tools/list", json!({})).await;
    assert_eq!(list.status, 200, "{}", String::from_utf8_lossy(&list.raw));
    let names: Vec<&str> = list.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "search_apps",
            "connect_app",
            "list_connections",
            "find_tools",
            "get_tool",
            "run_tool"
        ]
    );
    let schema = |name: &str| {
        list.body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["inputSchema"]
            .clone()
    };
    assert_eq!(schema("connect_app")["required"], json!(["app"]));
    assert_eq!(schema("run_tool")["required"], json!(["tool", "arguments"]));
    assert_eq!(
        schema("run_tool")["properties"]["connection_id"]["type"],
        "string"
    );
    assert_eq!(common::ratelimit(&list).0, 117);

    let found = call_tool(
        &srv.base,
        &url_key,
        None,
        "find_tools",
        json!({"query": "create a github issue"}),
    )
    .await;
    assert_eq!(found["isError"], false, "{found}");
    assert_eq!(
        found["structuredContent"]["tools"][0]["name"],
        "github_create_issue"
    );
    assert_eq!(
        found["structuredContent"]["tools"][0]["connection_status"],
        "not_connected"
    );

    let apps = call_tool(
        &srv.base,
        "/mcp",
        Some(k),
        "search_apps",
        json!({"query": "slack"}),
    )
    .await;
    assert_eq!(
        apps["structuredContent"]["apps"][0]["id"], "slack",
        "{apps}"
    );

    let tool = call_tool(
        &srv.base,
        "/mcp",
        Some(k),
        "get_tool",
        json!({"name": "stripe_create_refund"}),
    )
    .await;
    assert_eq!(
        tool["structuredContent"]["input_schema"]["required"],
        json!(["payment_intent"])
    );

    let conns = call_tool(&srv.base, "/mcp", Some(k), "list_connections", json!({})).await;
    assert_eq!(conns["structuredContent"], json!({"connections": []}));

    // Bad input and unknown names are tool results the model can act on.
    let missing = call_tool(
        &srv.base,
        "/mcp",
        Some(k),
        "get_tool",
        json!({"name": "nope"}),
    )
    .await;
    assert_eq!(missing["isError"], true, "{missing}");
    let invalid = call_tool(
        &srv.base,
        "/mcp",
        Some(k),
        "find_tools",
        json!({"limit": 3}),
    )
    .await;
    assert_eq!(invalid["isError"], true, "{invalid}");
    assert!(
        !invalid["structuredContent"]["errors"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["structuredContent"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error text: {result}"))
        .to_owned()
}

#[tokio::test]
async fn without_integrations_connect_app_and_run_tool_validate_then_say_they_are_not_configured() {
    let srv = server().await;
    let a = srv.account("mcp-later@example.com").await;
    let url_key = format!("/mcp/k/{}", a.key.expose());
    let call = |name: &'static str, args: Value| {
        let (base, path) = (srv.base.clone(), url_key.clone());
        async move { call_tool(&base, &path, None, name, args).await }
    };

    // This server runs without a credentials key or public URL (App::new only).
    let connect = error_text(&call("connect_app", json!({"app": "slack"})).await);
    assert!(connect.contains("not configured"), "{connect}");
    let bad = call("connect_app", json!({})).await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(
        !bad["structuredContent"]["errors"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let run = error_text(
        &call(
            "run_tool",
            json!({"tool": "github_create_issue", "arguments": {"title": "x"}, "connection_id": "c1"}),
        )
        .await,
    );
    assert!(run.contains("not configured"), "{run}");
    let unknown_tool =
        error_text(&call("run_tool", json!({"tool": "nope", "arguments": {}})).await);
    assert!(unknown_tool.contains("No tool \"nope\""), "{unknown_tool}");
    let no_args = call("run_tool", json!({"tool": "github_create_issue"})).await;
    assert_eq!(no_args["isError"], true, "{no_args}");
    assert!(
        !no_args["structuredContent"]["errors"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The refusals are not connections: nothing was connected.
    let conns = call("list_connections", json!({})).await;
    assert_eq!(conns["structuredContent"], json!({"connections": []}));
}

#[tokio::test]
async fn missing_revoked_and_browser_requests_are_refused() {
    let srv = server().await;
    let a = srv.account("mcp-refuse@example.com").await;
    let k = a.key.expose().to_owned();

    let none = rpc(&srv.base, "/mcp", None, "tools/list", json!({})).await;
    assert_eq!((none.status, none.code()), (401, "unauthorized"));
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    let junk = rpc(&srv.base, "/mcp/k/cpk_junk", None, "tools/list", json!({})).await;
    assert_eq!(junk.status, 401);
    let extra = rpc(
        &srv.base,
        &format!("/mcp/k/{k}/more"),
        None,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(extra.status, 404);
    assert!(
        !String::from_utf8_lossy(&extra.raw).contains(&k),
        "key echoed"
    );

    let browser = send_with_headers(
        &srv.base,
        post_json(
            "/mcp",
            Some(&k),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ),
        &[ACCEPT, ("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(
        browser.status,
        403,
        "{}",
        String::from_utf8_lossy(&browser.raw)
    );

    accounts::revoke_key(&srv.store, &a.account_id, srv.clock.now_ms())
        .await
        .unwrap();
    for (path, key) in [
        ("/mcp".to_owned(), Some(k.as_str())),
        (format!("/mcp/k/{k}"), None),
    ] {
        let r = rpc(&srv.base, &path, key, "tools/list", json!({})).await;
        assert_eq!(r.status, 401, "{path}");
        assert!(!String::from_utf8_lossy(&r.raw).contains(&k), "key echoed");
        assert!(!r.body["instance"].as_str().unwrap().contains(&k));
    }
}

#[tokio::test]
async fn stateless_2026_revision_lists_tools_as_private_to_the_key() {
    let srv = server().await;
    let a = srv.account("mcp-2026@example.com").await;
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/list",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1.0"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    });
    let r = send_with_headers(
        &srv.base,
        post_json("/mcp", Some(a.key.expose()), &body),
        &[
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.raw));
    assert_eq!(r.body["result"]["cacheScope"], "private", "{}", r.body);
    assert_eq!(r.body["result"]["tools"].as_array().unwrap().len(), 6);
}
