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

/// A JSON-RPC error's HTTP status and `error.code`, with the body for failure messages.
fn rpc_error(r: &Resp) -> (u16, i64) {
    let code = r.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not a JSON-RPC error: {}", String::from_utf8_lossy(&r.raw)));
    assert!(r.body.get("result").is_none(), "{}", r.body);
    (r.status, code)
}

const MODERN: &str = "2026-07-28";

fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// One 2026-07-28 request: `params` gets the `_meta` protocol fields unless it has `_meta`
/// already; `headers` are sent as given (the era's headers are the caller's to get right or
/// wrong).
async fn modern(
    base: &str,
    key: &str,
    method: &str,
    mut params: Value,
    headers: &[(&str, &str)],
) -> Resp {
    if params.get("_meta").is_none() {
        params["_meta"] = modern_meta(MODERN);
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let mut all = vec![ACCEPT];
    all.extend_from_slice(headers);
    send_with_headers(base, post_json("/mcp", Some(key), &body), &all).await
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_invalid_params_error_in_both_eras() {
    let srv = server().await;
    let a = srv.account("mcp-unknown-tool@example.com").await;
    let k = a.key.expose();

    let legacy = rpc(
        &srv.base,
        "/mcp",
        Some(k),
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    )
    .await;
    assert_eq!(rpc_error(&legacy), (200, -32602));
    assert_eq!(legacy.body["id"], 1);
    let message = legacy.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"nope\""), "{message}");
    assert!(
        message.contains("find_tools"),
        "names the real tools: {message}"
    );

    let stateless = modern(
        &srv.base,
        k,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "nope"),
        ],
    )
    .await;
    assert_eq!(rpc_error(&stateless), (200, -32602));

    // A known tool with bad arguments stays a result the model can correct.
    let bad = rpc(
        &srv.base,
        "/mcp",
        Some(k),
        "tools/call",
        json!({"name": "find_tools", "arguments": {}}),
    )
    .await;
    assert_eq!(bad.status, 200);
    assert_eq!(bad.body["result"]["isError"], true, "{}", bad.body);
}

// One table of the era's rules, row by row; splitting it would only repeat the set-up.
#[tokio::test]
async fn stateless_2026_era_rules_answer_the_specified_errors() {
    let srv = server().await;
    let a = srv.account("mcp-2026-rules@example.com").await;
    let k = a.key.expose();
    let v = ("mcp-protocol-version", MODERN);

    // server/discover starts the era: versions, server info, a complete result.
    let discover = modern(
        &srv.base,
        k,
        "server/discover",
        json!({}),
        &[v, ("mcp-method", "server/discover")],
    )
    .await;
    assert_eq!(discover.status, 200, "{}", discover.body);
    let d = &discover.body["result"];
    assert_eq!(d["resultType"], "complete", "{d}");
    assert!(
        d["supportedVersions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == MODERN),
        "{d}"
    );
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "companion-platform"
    );

    // A call in the era: resultType on the result, Mcp-Name naming the tool.
    let call = modern(
        &srv.base,
        k,
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "create a github issue"}}),
        &[v, ("mcp-method", "tools/call"), ("mcp-name", "find_tools")],
    )
    .await;
    assert_eq!(call.status, 200, "{}", call.body);
    assert_eq!(call.body["result"]["resultType"], "complete");
    assert_eq!(
        call.body["result"]["structuredContent"]["tools"][0]["name"],
        "github_create_issue"
    );

    // Methods the era removed, and unknown ones: 404 with -32601.
    for method in ["ping", "logging/setLevel", "nope/nope"] {
        let params = if method == "logging/setLevel" {
            json!({"level": "info"})
        } else {
            json!({})
        };
        let r = modern(&srv.base, k, method, params, &[v, ("mcp-method", method)]).await;
        assert_eq!(rpc_error(&r), (404, -32601), "{method}");
    }

    // Headers that disagree with the body, or are missing: 400 with -32020.
    let list = |h: &'static [(&'static str, &'static str)]| {
        let base = srv.base.clone();
        async move { modern(&base, k, "tools/list", json!({}), h).await }
    };
    let mismatch: [(&str, &[(&str, &str)]); 3] = [
        (
            "Mcp-Method names another method",
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/call"),
            ],
        ),
        ("no Mcp-Method", &[("mcp-protocol-version", MODERN)]),
        (
            "version header differs from _meta",
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/list"),
            ],
        ),
    ];
    for (why, headers) in mismatch {
        assert_eq!(rpc_error(&list(headers).await), (400, -32020), "{why}");
    }
    for (why, name) in [
        ("Mcp-Name names another tool", Some("get_tool")),
        ("no Mcp-Name", None),
    ] {
        let mut headers = vec![v, ("mcp-method", "tools/call")];
        headers.extend(name.map(|n| ("mcp-name", n)));
        let r = modern(
            &srv.base,
            k,
            "tools/call",
            json!({"name": "find_tools", "arguments": {"query": "x"}}),
            &headers,
        )
        .await;
        assert_eq!(rpc_error(&r), (400, -32020), "{why}");
    }

    // An unknown version: 400 with -32022, saying what is supported and what was asked.
    let unknown = modern(
        &srv.base,
        k,
        "tools/list",
        json!({"_meta": modern_meta("2099-01-01")}),
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(rpc_error(&unknown), (400, -32022));
    let data = &unknown.body["error"]["data"];
    assert_eq!(data["requested"], "2099-01-01", "{data}");
    assert!(
        data["supported"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == MODERN),
        "{data}"
    );

    // The era's header without the _meta protocol fields: 400 with -32602.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let no_meta = send_with_headers(
        &srv.base,
        post_json("/mcp", Some(k), &body),
        &[ACCEPT, v, ("mcp-method", "tools/list")],
    )
    .await;
    assert_eq!(rpc_error(&no_meta), (400, -32602));
    let no_caps = modern(
        &srv.base,
        k,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
        &[v, ("mcp-method", "tools/list")],
    )
    .await;
    assert_eq!(
        rpc_error(&no_caps),
        (400, -32602),
        "clientCapabilities is required"
    );
}
