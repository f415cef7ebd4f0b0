//! Custom connectors against real peers on loopback: the reference MCP server
//! (`@modelcontextprotocol/server-everything`, Streamable HTTP) and a small REST API served here
//! with hyper from an OpenAPI document (both in `custom_common`). DynamoDB Local holds the
//! connectors.

mod common;
mod custom_common;

use common::{assert_documented, post_json};
use custom_common::{everything, pets_api, pets_document, platform, tool_names};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn an_mcp_server_becomes_tools_that_are_found_shown_run_and_private() {
    let peer = everything().await;
    let p = platform("127.0.0.1").await;
    let a = p.account("cc-mcp-a@example.com").await;
    let b = p.account("cc-mcp-b@example.com").await;
    let (ka, kb) = (a.key.expose().to_owned(), b.key.expose().to_owned());

    let r = p
        .post(
            "/api/v1/custom-connectors",
            &ka,
            json!({"kind": "mcp", "url": peer.url, "name": "everything",
                   "headers": {"X-Team": "blue-team-secret"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_documented(&r, "post", "/custom-connectors");
    let id = r.body["id"].as_str().unwrap().to_owned();
    let names = tool_names(&r.body);
    assert!(
        names.contains(&"custom.everything.echo".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"custom.everything.get_sum".to_owned()),
        "{names:?}"
    );
    assert_eq!(r.body["tool_count"], names.len());
    assert_eq!(r.body["headers"], json!(["x-team"]));
    assert!(!r.raw.windows(16).any(|w| w == b"blue-team-secret"));

    // The header is sealed at rest: its value appears nowhere in the table.
    let items = p
        .store
        .client()
        .scan()
        .table_name(p.store.table())
        .send()
        .await
        .unwrap();
    let dump = format!("{:?}", items.items());
    assert!(dump.contains("headers_sealed"), "{dump}");
    assert!(!dump.contains("blue-team-secret"));

    // Found by plain words, within the connector, and shown with the server's input schema.
    let found = p.find(&ka, "echo back a message").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("custom.everything.echo"),
        "{found:?}"
    );
    let found = p.find(&ka, "add two numbers and return the sum").await;
    assert!(
        found
            .iter()
            .take(3)
            .any(|t| t == "custom.everything.get_sum"),
        "{found:?}"
    );
    let r = p
        .post(
            "/api/v1/tools/find",
            &ka,
            json!({"query": "sum of numbers", "app": "custom.everything"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["app"] == "custom.everything")
    );
    assert_eq!(r.body["tools"][0]["name"], "custom.everything.get_sum");
    assert_eq!(r.body["tools"][0]["connection_status"], "connected");

    let r = p.get("/api/v1/tools/custom.everything.echo", &ka).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/tools/{name}");
    assert_eq!(r.body["app"], "custom.everything");
    assert_eq!(
        r.body["input_schema"]["properties"]["message"]["type"],
        "string"
    );

    // Runs call tools/call on the server.
    let r = p
        .run(
            &ka,
            "custom.everything.echo",
            json!({"message": "hello there"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["data"], "Echo: hello there");
    assert_eq!(r.body["status"], "succeeded");
    assert_eq!(r.body["http_status"], Value::Null);
    let echo_run = r.body["run_id"].as_str().unwrap().to_owned();
    let r = p
        .run(&ka, "custom.everything.get_sum", json!({"a": 2, "b": 40}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["data"].as_str().unwrap().contains("42"),
        "{}",
        r.body
    );
    let r = p
        .run(&ka, "custom.everything.get_sum", json!({"a": "two"}))
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.code(), "invalid_arguments");
    assert_documented(&r, "post", "/tools/{name}/run");

    let r = p.get("/api/v1/runs", &ka).await;
    let runs = r.body["runs"].as_array().unwrap();
    let run = runs
        .iter()
        .find(|x| x["id"] == echo_run.as_str())
        .expect("echo run recorded");
    assert_eq!(run["tool"], "custom.everything.echo");
    assert_eq!(run["app"], "custom.everything");
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["arguments"], json!({"message": "[redacted]"}));

    // Another account sees none of it.
    assert!(
        !p.find(&kb, "echo back a message")
            .await
            .iter()
            .any(|t| t.starts_with("custom."))
    );
    let r = p.get("/api/v1/tools/custom.everything.echo", &kb).await;
    assert_eq!((r.status, r.code()), (404, "tool_not_found"));
    let r = p
        .run(&kb, "custom.everything.echo", json!({"message": "x"}))
        .await;
    assert_eq!((r.status, r.code()), (404, "tool_not_found"));
    let r = p.get(&format!("/api/v1/custom-connectors/{id}"), &kb).await;
    assert_eq!((r.status, r.code()), (404, "connector_not_found"));
    let r = p.get("/api/v1/custom-connectors", &kb).await;
    assert_eq!(r.body["custom_connectors"], json!([]));
    let r = p
        .post(
            "/api/v1/tools/find",
            &kb,
            json!({"query": "echo", "app": "custom.everything"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "app_not_found"));

    // Names are unique per account (the other account may use it).
    let again = json!({"kind": "mcp", "url": peer.url, "name": "everything"});
    let r = p
        .post("/api/v1/custom-connectors", &ka, again.clone())
        .await;
    assert_eq!((r.status, r.code()), (409, "connector_name_taken"));
    let r = p.post("/api/v1/custom-connectors", &kb, again).await;
    assert_eq!(r.status, 201, "{}", r.body);

    // List, get, refresh.
    let r = p.get("/api/v1/custom-connectors", &ka).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/custom-connectors");
    assert_eq!(r.body["custom_connectors"][0]["id"], id.as_str());
    p.clock.advance(5_000);
    let r = p
        .post(
            &format!("/api/v1/custom-connectors/{id}/refresh"),
            &ka,
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "post", "/custom-connectors/{id}/refresh");
    assert_eq!(tool_names(&r.body), names);
    assert_ne!(r.body["refreshed_at"], r.body["created_at"]);
    // The refreshed connector still sends its header: a run works after it.
    let r = p
        .run(&ka, "custom.everything.echo", json!({"message": "again"}))
        .await;
    assert_eq!(r.body["data"], "Echo: again");

    // Delete removes the tools at once.
    let r = p
        .delete(&format!("/api/v1/custom-connectors/{id}"), &ka)
        .await;
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.raw));
    let r = p.get("/api/v1/tools/custom.everything.echo", &ka).await;
    assert_eq!((r.status, r.code()), (404, "tool_not_found"));
    assert!(
        !p.find(&ka, "echo back a message")
            .await
            .iter()
            .any(|t| t.starts_with("custom."))
    );
    let r = p
        .delete(&format!("/api/v1/custom-connectors/{id}"), &ka)
        .await;
    assert_eq!((r.status, r.code()), (404, "connector_not_found"));
    let r = p.get(&format!("/api/v1/custom-connectors/{id}"), &ka).await;
    assert_eq!((r.status, r.code()), (404, "connector_not_found"));
    // The name is free again.
    let r = p
        .post(
            "/api/v1/custom-connectors",
            &ka,
            json!({"kind": "mcp", "url": peer.url, "name": "everything"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn mcp_clients_of_the_platform_find_and_run_custom_tools() {
    let peer = everything().await;
    let p = platform("127.0.0.1").await;
    let a = p.account("cc-mcp-surface@example.com").await;
    let key = a.key.expose().to_owned();
    let r = p
        .post(
            "/api/v1/custom-connectors",
            &key,
            json!({"kind": "mcp", "url": peer.url}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Named after the server ("mcp-servers/everything") when no name is given.
    assert_eq!(r.body["name"], "mcp_servers_everything");

    let call = |name: &str, args: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": name, "arguments": args}});
        let (base, key) = (p.base.clone(), key.clone());
        async move {
            let r = common::send_with_headers(
                &base,
                post_json("/mcp", Some(&key), &body),
                &[
                    ("accept", "application/json, text/event-stream"),
                    ("mcp-protocol-version", "2025-06-18"),
                ],
            )
            .await;
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.raw));
            r.body["result"].clone()
        }
    };
    let found = call("find_tools", json!({"query": "echo back a message"})).await;
    assert_eq!(
        found["structuredContent"]["tools"][0]["name"], "custom.mcp_servers_everything.echo",
        "{found}"
    );
    let tool = call(
        "get_tool",
        json!({"name": "custom.mcp_servers_everything.echo"}),
    )
    .await;
    assert_eq!(
        tool["structuredContent"]["input_schema"]["required"],
        json!(["message"])
    );
    let ran = call(
        "run_tool",
        json!({"tool": "custom.mcp_servers_everything.echo", "arguments": {"message": "hi"}}),
    )
    .await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["structuredContent"]["data"], "Echo: hi");
    let bad = call(
        "run_tool",
        json!({"tool": "custom.mcp_servers_everything.echo", "arguments": {}}),
    )
    .await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert_eq!(bad["structuredContent"]["code"], "invalid_arguments");
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn a_rest_api_from_openapi_runs_with_path_query_header_and_body() {
    let api = pets_api().await;
    let p = platform("127.0.0.1").await;
    let a = p.account("cc-rest@example.com").await;
    let key = a.key.expose().to_owned();
    let doc = pets_document(&format!("{}/v1", api.base));
    let r = p
        .post(
            "/api/v1/custom-connectors",
            &key,
            json!({"kind": "rest", "name": "pets", "openapi": doc,
                   "headers": {"X-Api-Key": "secret-key"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_documented(&r, "post", "/custom-connectors");
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(
        tool_names(&r.body),
        [
            "custom.pets.create_pet",
            "custom.pets.list_pets",
            "custom.pets.show_pet_by_id"
        ]
    );
    assert_eq!(r.body["base_url"], format!("{}/v1", api.base));

    let found = p.find(&key, "add a new pet to the store").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("custom.pets.create_pet"),
        "{found:?}"
    );
    let found = p.find(&key, "list pets with a tag").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("custom.pets.list_pets"),
        "{found:?}"
    );
    let r = p
        .get("/api/v1/tools/custom.pets.show_pet_by_id", &key)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Grouped by location like catalog tools; the API key parameter is not asked for.
    assert_eq!(
        r.body["input_schema"]["properties"]["path"]["required"],
        json!(["petId"])
    );

    // Path (encoded), query, body, and the connector's header on every call.
    let r = p
        .run(
            &key,
            "custom.pets.show_pet_by_id",
            json!({"path": {"petId": "rex 1/2"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["http_status"], 200);
    assert_eq!(r.body["data"], json!({"id": "rex 1/2", "name": "Rex"}));
    let r = p
        .run(
            &key,
            "custom.pets.list_pets",
            json!({"query": {"limit": 2, "tag": "dog"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["query"], "limit=2&tag=dog");
    let r = p
        .run(
            &key,
            "custom.pets.create_pet",
            json!({"body": {"name": "Tom", "species": "cat"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["http_status"], 201);
    assert_eq!(r.body["data"], json!({"id": "p2", "name": "Tom"}));
    {
        let seen = api.seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0].uri, "/v1/pets/rex%201%2F2");
        assert_eq!(seen[1].uri, "/v1/pets?limit=2&tag=dog");
        assert_eq!(
            (seen[2].method.as_str(), seen[2].uri.as_str()),
            ("POST", "/v1/pets")
        );
        assert_eq!(
            serde_json::from_str::<Value>(&seen[2].body).unwrap(),
            json!({"name": "Tom", "species": "cat"})
        );
        assert!(
            seen.iter()
                .all(|s| s.api_key.as_deref() == Some("secret-key"))
        );
    }

    // Wrong arguments never reach the API; an upstream error is a recorded, failed run.
    let r = p
        .run(
            &key,
            "custom.pets.create_pet",
            json!({"body": {"species": "cat"}}),
        )
        .await;
    assert_eq!((r.status, r.code()), (422, "invalid_arguments"));
    assert_eq!(api.seen.lock().unwrap().len(), 3);
    let r = p
        .run(
            &key,
            "custom.pets.show_pet_by_id",
            json!({"path": {"petId": "missing"}}),
        )
        .await;
    assert_eq!((r.status, r.code()), (502, "upstream_error"), "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["upstream_status"], 404);
    let failed = r.body["run_id"].as_str().unwrap().to_owned();
    let runs = p.get("/api/v1/runs", &key).await;
    let run = runs.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == failed.as_str())
        .cloned()
        .expect("the failed run is recorded");
    assert_eq!(run["status"], "failed");
    assert!(run["error"].as_str().unwrap().contains("404"), "{run}");

    // Nothing to fetch again for an inline document.
    let r = p
        .post(
            &format!("/api/v1/custom-connectors/{id}/refresh"),
            &key,
            json!({}),
        )
        .await;
    assert_eq!((r.status, r.code()), (422, "not_refreshable"));

    // From a URL: the relative server URL resolves against it, and a refresh re-derives.
    let r = p
        .post(
            "/api/v1/custom-connectors",
            &key,
            json!({"kind": "rest", "url": format!("{}/openapi.json", api.base),
                   "headers": {"X-Api-Key": "secret-key"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["name"], "pet_store");
    assert_eq!(r.body["base_url"], format!("{}/v1", api.base));
    let url_id = r.body["id"].as_str().unwrap().to_owned();
    let r = p
        .run(
            &key,
            "custom.pet_store.show_pet_by_id",
            json!({"path": {"petId": "a"}}),
        )
        .await;
    assert_eq!(r.body["data"]["id"], "a", "{}", r.body);
    let r = p
        .post(
            &format!("/api/v1/custom-connectors/{url_id}/refresh"),
            &key,
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tool_count"], 3);
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn bad_documents_destinations_and_limits_are_clear_problems() {
    let p = platform("127.0.0.1").await;
    let a = p.account("cc-bad@example.com").await;
    let key = a.key.expose().to_owned();
    let create = |body: Value| p.post("/api/v1/custom-connectors", &key, body);

    for (doc, why) in [
        (json!({"swagger": "2.0", "paths": {}}), "Swagger 2.0"),
        (json!({"openapi": "3.0.0", "info": {"title": "x"}}), "paths"),
        (
            json!({"openapi": "3.0.0", "paths": {"/x": {"parameters": []}}}),
            "no operations",
        ),
        (
            json!({"openapi": "2.5", "paths": {"/x": {"get": {}}}}),
            "only OpenAPI 3",
        ),
    ] {
        let r = create(json!({"kind": "rest", "openapi": doc, "base_url": "http://127.0.0.1:9/"}))
            .await;
        assert_eq!((r.status, r.code()), (422, "invalid_openapi"), "{}", r.body);
        assert!(
            r.body["detail"].as_str().unwrap().contains(why),
            "{}",
            r.body
        );
        assert_documented(&r, "post", "/custom-connectors");
    }
    // No server URL and none given.
    let no_server = json!({"openapi": "3.0.0", "paths": {"/x": {"get": {"operationId": "x"}}}});
    let r = create(json!({"kind": "rest", "openapi": no_server})).await;
    assert_eq!((r.status, r.code()), (422, "invalid_openapi"), "{}", r.body);
    // Shape errors come from the request schema.
    for body in [
        json!({"kind": "soap", "url": "https://example.com"}),
        json!({"kind": "rest", "openapi": "not an object"}),
        json!({"kind": "mcp", "url": "https://example.com/mcp", "name": "Bad Name"}),
        json!({"kind": "mcp", "url": "https://example.com/mcp", "headers": {"x": 1}}),
    ] {
        let r = create(body).await;
        assert_eq!((r.status, r.code()), (422, "invalid_request"), "{}", r.body);
    }
    let r = create(json!({"kind": "mcp", "url": "http://127.0.0.1:9/mcp",
                          "headers": {"Mcp-Session-Id": "x"}}))
    .await;
    assert_eq!((r.status, r.code()), (422, "invalid_request"), "{}", r.body);

    // Documents past 2 MiB.
    let mut big = pets_document("http://127.0.0.1:9/v1");
    big["info"]["description"] = Value::String("x".repeat(2 * 1024 * 1024 + 10));
    let r = create(json!({"kind": "rest", "openapi": big})).await;
    assert_eq!(
        (r.status, r.code()),
        (413, "document_too_large"),
        "{}",
        r.body
    );

    // Nothing listens (the port was free a moment ago): unreachable, not a server error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let r = create(json!({"kind": "mcp", "url": format!("http://{closed}/mcp")})).await;
    assert_eq!(
        (r.status, r.code()),
        (422, "connector_unreachable"),
        "{}",
        r.body
    );
    let r = create(json!({"kind": "rest", "url": format!("http://{closed}/openapi.json")})).await;
    assert_eq!(
        (r.status, r.code()),
        (422, "connector_unreachable"),
        "{}",
        r.body
    );

    // At most 20 connectors per account.
    let doc = pets_document("http://127.0.0.1:9/v1");
    for i in 0..20 {
        let r = create(json!({"kind": "rest", "name": format!("api_{i}"), "openapi": doc})).await;
        assert_eq!(r.status, 201, "{i}: {}", r.body);
    }
    let r = create(json!({"kind": "rest", "name": "api_20", "openapi": doc})).await;
    assert_eq!((r.status, r.code()), (422, "connector_limit"), "{}", r.body);
    let r = p.get("/api/v1/custom-connectors?limit=15", &key).await;
    assert_eq!(r.body["custom_connectors"].as_array().unwrap().len(), 15);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = p
        .get(&format!("/api/v1/custom-connectors?cursor={cursor}"), &key)
        .await;
    assert_eq!(r.body["custom_connectors"].as_array().unwrap().len(), 5);
    assert_eq!(r.body["next_cursor"], Value::Null);
}

#[tokio::test]
async fn private_destinations_are_refused_without_an_allow_list() {
    let api = pets_api().await;
    let p = platform("").await;
    let a = p.account("cc-ssrf@example.com").await;
    let key = a.key.expose().to_owned();
    let create = |body: Value| p.post("/api/v1/custom-connectors", &key, body);
    for body in [
        json!({"kind": "mcp", "url": "http://127.0.0.1:9/mcp"}),
        json!({"kind": "mcp", "url": "https://169.254.169.254/latest/meta-data/"}),
        json!({"kind": "rest", "url": format!("{}/openapi.json", api.base)}),
        json!({"kind": "rest", "url": "https://10.1.2.3/openapi.json"}),
        json!({"kind": "rest", "openapi": pets_document("https://192.168.0.10/v1")}),
        json!({"kind": "rest", "openapi": pets_document("https://api.example.com/v1"),
               "base_url": "https://[::1]/v1"}),
    ] {
        let r = create(body.clone()).await;
        assert_eq!(
            (r.status, r.code()),
            (422, "destination_refused"),
            "{body}: {}",
            r.body
        );
        assert_documented(&r, "post", "/custom-connectors");
    }
    assert!(api.seen.lock().unwrap().is_empty());
    let r = p.get("/api/v1/custom-connectors", &key).await;
    assert_eq!(r.body["custom_connectors"], json!([]));
}
