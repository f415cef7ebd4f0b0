//! The public surface pinned: the OpenAPI document is served exactly as shipped and every
//! operation it documents is routed with its method; MCP's `initialize` and `tools/list` answers
//! equal the recorded ones (`tests/fixtures/mcp_surface.json`). A change to either is a change of
//! the public contract: make it on purpose, in the document or the fixture, with CONTRACTS.md.

mod common;

use common::{post_json, send, send_with_headers, server};
use http::Method;
use platform::http::openapi::DOCUMENT;
use platform::http::routes;
use serde_json::{Value, json};

#[tokio::test]
async fn the_openapi_document_is_served_as_shipped_and_every_operation_is_routed() {
    let srv = server().await;
    let r = send(&srv.base, common::get("/api/v1/openapi.json", None)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.raw.as_ref(), DOCUMENT.as_bytes());

    let doc: Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        // The hosted pages (`servers: [{"url": "/"}]`) live outside `/api/v1`.
        if item.get("servers").is_some() {
            continue;
        }
        let concrete = template.replace(['{', '}'], "");
        let matched = routes::route(&concrete)
            .unwrap_or_else(|| panic!("{template} is documented but not routed"));
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                assert!(
                    matched.methods.contains(&m),
                    "{method} {template} is documented but routed for {:?}",
                    matched.methods
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} operations found");
}

async fn rpc(base: &str, key: &str, version: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = send_with_headers(
        base,
        post_json("/mcp", Some(key), &body),
        &[
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", version),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.raw));
    r.body["result"].clone()
}

#[tokio::test]
async fn mcp_initialize_and_tools_list_answer_as_recorded() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/mcp_surface.json")).unwrap();
    let srv = server().await;
    let a = srv.account("surface@example.com").await;
    let key = a.key.expose();
    for version in ["2025-06-18", "2025-11-25"] {
        let init = json!({"protocolVersion": version, "capabilities": {},
                          "clientInfo": {"name": "surface-test", "version": "1"}});
        let got = rpc(&srv.base, key, version, "initialize", init).await;
        assert_eq!(
            got, fixture["initialize"][version],
            "initialize under {version} changed"
        );
        let got = rpc(&srv.base, key, version, "tools/list", json!({})).await;
        assert_eq!(
            got, fixture["tools/list"],
            "tools/list under {version} changed"
        );
    }
}
