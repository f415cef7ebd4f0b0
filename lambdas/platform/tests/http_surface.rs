//! The REST surface over loopback HTTP: catalog, apps, tools, health, and every kind of bad
//! request answered with a documented problem.

mod common;

use common::{Call, assert_common_headers, assert_documented, get, post_json, send, server};
use http::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn public_catalog_pages_with_cursors_and_filters_by_category() {
    let srv = server().await;
    let mut ids = Vec::new();
    let mut path = "/api/v1/catalog?limit=4".to_owned();
    loop {
        let r = send(&srv.base, get(&path, None)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_documented(&r, "get", "/catalog");
        for a in r.body["apps"].as_array().unwrap() {
            ids.push(a["id"].as_str().unwrap().to_owned());
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/api/v1/catalog?limit=4&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        ids,
        [
            "github",
            "gmail",
            "google_sheets",
            "slack",
            "stripe",
            "zoom"
        ]
    );

    let comms = send(
        &srv.base,
        get("/api/v1/catalog?category=communication", None),
    )
    .await;
    let ids: Vec<&str> = comms.body["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["gmail", "slack", "zoom"]);
    assert_eq!(comms.body["apps"][1]["tool_count"], 2);

    for bad in [
        "/api/v1/catalog?cursor=garbage",
        "/api/v1/catalog?limit=0",
        "/api/v1/catalog?limit=abc",
        "/api/v1/catalog?colour=red",
        "/api/v1/catalog?limit=1&limit=2",
    ] {
        let r = send(&srv.base, get(bad, None)).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_documented(&r, "get", "/catalog");
    }
}

// Longer than 80 lines on purpose: many cases against one running server, each with its checks,
// kept in one list so every case is seen next to the others.
#[tokio::test]
async fn apps_tools_and_health_answer_with_documented_shapes() {
    let srv = server().await;
    let a = srv.account("shapes@example.com").await;
    let k = a.key.expose();

    let apps = send(
        &srv.base,
        get("/api/v1/apps?search=google%20sheets", Some(k)),
    )
    .await;
    assert_eq!(apps.status, 200, "{}", apps.body);
    assert_documented(&apps, "get", "/apps");
    assert_eq!(apps.body["apps"].as_array().unwrap().len(), 1);
    assert_eq!(apps.body["apps"][0]["id"], "google_sheets");
    assert_eq!(apps.body["apps"][0]["connection_status"], "not_connected");

    let all = send(&srv.base, get("/api/v1/apps", Some(k))).await;
    assert_eq!(all.body["apps"].as_array().unwrap().len(), 6);

    let found = send(
        &srv.base,
        post_json(
            "/api/v1/tools/find",
            Some(k),
            &json!({"query": "send a message to a slack channel"}),
        ),
    )
    .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_documented(&found, "post", "/tools/find");
    assert_eq!(found.body["tools"][0]["name"], "slack_send_message");
    assert_eq!(found.body["tools"][0]["app"], "slack");
    let terms = found.body["tools"][0]["matched_terms"].as_array().unwrap();
    assert!(
        terms.contains(&json!("slack")) && terms.contains(&json!("message")),
        "{terms:?}"
    );

    let in_gmail = send(
        &srv.base,
        post_json(
            "/api/v1/tools/find",
            Some(k),
            &json!({"query": "send a message", "app": "gmail", "limit": 1}),
        ),
    )
    .await;
    let tools = in_gmail.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "gmail_send_message");

    let nothing = send(
        &srv.base,
        post_json(
            "/api/v1/tools/find",
            Some(k),
            &json!({"query": "quantum teleportation"}),
        ),
    )
    .await;
    assert_documented(&nothing, "post", "/tools/find");
    assert_eq!(nothing.body["tools"], json!([]));
    assert!(nothing.body["hint"].is_string());

    let no_app = send(
        &srv.base,
        post_json(
            "/api/v1/tools/find",
            Some(k),
            &json!({"query": "x", "app": "nope"}),
        ),
    )
    .await;
    assert_eq!(no_app.status, 404);
    assert_eq!(no_app.code(), "app_not_found");

    let tool = send(
        &srv.base,
        get("/api/v1/tools/stripe_create_refund", Some(k)),
    )
    .await;
    assert_eq!(tool.status, 200);
    assert_documented(&tool, "get", "/tools/{name}");
    assert_eq!(
        tool.body["input_schema"]["required"],
        json!(["payment_intent"])
    );

    let missing = send(&srv.base, get("/api/v1/tools/stripe_teleport", Some(k))).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.code(), "tool_not_found");
    assert_documented(&missing, "get", "/tools/{name}");

    let health = send(&srv.base, get("/api/v1/health", None)).await;
    assert_eq!(health.status, 200);
    assert_documented(&health, "get", "/health");

    let doc = send(&srv.base, get("/api/v1/openapi.json", None)).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
}

fn raw(
    path: &str,
    key: &str,
    content_type: Option<&'static str>,
    body: &[u8],
) -> (String, String, Option<&'static str>, Vec<u8>) {
    (path.to_owned(), key.to_owned(), content_type, body.to_vec())
}

// Longer than 80 lines on purpose: many cases against one running server, each with its checks,
// kept in one list so every case is seen next to the others.
#[tokio::test]
async fn bad_bodies_get_problems_and_the_server_keeps_serving() {
    let srv = server().await;
    let a = srv.account("bodies@example.com").await;
    let k = a.key.expose();
    let find = "/api/v1/tools/find";
    let big = vec![b'a'; 64 * 1024 + 1];
    let cases = [
        (
            "malformed",
            raw(find, k, Some("application/json"), b"{\"query\": "),
            400,
            "malformed_json",
        ),
        (
            "not json",
            raw(find, k, Some("application/json"), b"query=slack"),
            400,
            "malformed_json",
        ),
        (
            "unknown field",
            raw(
                find,
                k,
                Some("application/json"),
                br#"{"query":"x","colour":"red"}"#,
            ),
            422,
            "invalid_request",
        ),
        (
            "wrong type",
            raw(
                find,
                k,
                Some("application/json"),
                br#"{"query":"x","limit":"ten"}"#,
            ),
            422,
            "invalid_request",
        ),
        (
            "missing field",
            raw(find, k, Some("application/json"), br#"{"app":"slack"}"#),
            422,
            "invalid_request",
        ),
        (
            "limit too high",
            raw(
                find,
                k,
                Some("application/json"),
                br#"{"query":"x","limit":51}"#,
            ),
            422,
            "invalid_request",
        ),
        (
            "array",
            raw(find, k, Some("application/json"), b"[]"),
            422,
            "invalid_request",
        ),
        (
            "no content type",
            raw(find, k, None, br#"{"query":"x"}"#),
            415,
            "unsupported_media_type",
        ),
        (
            "form",
            raw(
                find,
                k,
                Some("application/x-www-form-urlencoded"),
                b"query=x",
            ),
            415,
            "unsupported_media_type",
        ),
        (
            "oversized",
            raw(find, k, Some("application/json"), &big),
            413,
            "body_too_large",
        ),
    ];
    for (label, (path, key, ct, body), status, code) in cases {
        let r = send(
            &srv.base,
            Call {
                method: Method::POST,
                path: &path,
                key: Some(&key),
                content_type: ct,
                body,
            },
        )
        .await;
        assert_eq!(r.status, status, "{label}: {}", r.body);
        assert_eq!(r.code(), code, "{label}");
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        assert_documented(&r, "post", "/tools/find");
        if status == 422 {
            assert!(!r.body["errors"].as_array().unwrap().is_empty(), "{label}");
        }
    }
    let r = send(
        &srv.base,
        post_json(find, Some(k), &json!({"query": "x", "limit": "ten"})),
    )
    .await;
    assert_eq!(r.body["errors"][0]["pointer"], "/limit");

    // A chunked body without Content-Length is cut off at the limit, not buffered whole.
    let resp = chunked_post(&srv.base, find, k, 1024 * 1024).await;
    assert!(
        resp.starts_with("HTTP/1.1 413"),
        "{}",
        &resp[..resp.len().min(200)]
    );

    // Still serving.
    let ok = send(
        &srv.base,
        post_json(find, Some(k), &json!({"query": "create a github issue"})),
    )
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["tools"][0]["name"], "github_create_issue");
}

async fn chunked_post(base: &str, path: &str, key: &str, total: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 16 * 1024];
    let mut sent = 0;
    while sent < total {
        // The server may answer and close before everything is sent; that is the point.
        if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .is_err()
            || s.write_all(&chunk).await.is_err()
            || s.write_all(b"\r\n").await.is_err()
        {
            break;
        }
        sent += chunk.len();
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_mcp_get_problems() {
    let srv = server().await;
    let a = srv.account("routes@example.com").await;
    let k = a.key.expose();

    let r = send(&srv.base, get("/api/v1/nope", Some(k))).await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    assert_common_headers(&r);

    let r = send(&srv.base, post_json("/api/v1/runs", Some(k), &json!({}))).await;
    assert_eq!((r.status, r.code()), (405, "method_not_allowed"));
    assert_eq!(r.header("allow"), Some("GET"));
    assert_documented(&r, "get", "/runs");

    let r = send(&srv.base, get("/api/v1/tools/find", Some(k))).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));

    let r = send(&srv.base, get("/api/v1/runs?cursor=x", Some(k))).await;
    assert_eq!((r.status, r.code()), (400, "unknown_parameter"));

    // The MCP endpoints answer with documented problems before reaching the MCP server.
    let doc = common::openapi();
    let problem = platform::http::openapi::component_validator(&doc, "Problem").unwrap();
    let r = send(
        &srv.base,
        post_json(&format!("/mcp/k/{k}/x"), None, &json!({})),
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    assert!(
        platform::http::openapi::violations(&problem, &r.body).is_empty(),
        "{}",
        r.body
    );
    assert_eq!(r.body["instance"], "/mcp/k/[redacted]/x");
    assert!(
        !String::from_utf8_lossy(&r.raw).contains(k),
        "the key is echoed"
    );
    let _: Value = r.body;
}

/// Deterministic xorshift, so a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

// Longer than 80 lines on purpose: many cases against one running server, each with its checks,
// kept in one list so every case is seen next to the others.
#[tokio::test]
async fn hostile_requests_get_problems_never_server_errors() {
    let srv = server().await;
    let a = srv.account("hostile@example.com").await;
    let key = a.key.expose().to_owned();
    let doc = common::openapi();
    let problem = platform::http::openapi::component_validator(&doc, "Problem").unwrap();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let valid = br#"{"query":"send a message","app":"slack","limit":3}"#;
    let deep = "[".repeat(10_000);
    let paths = [
        "/api/v1/tools/find",
        "/api/v1/runs",
        "/api/v1/catalog",
        "/api/v1/apps",
        "/api/v1/tools/",
        "/api/v1/tools/%00",
        "/api/v1/tools/a%2Fb",
        "/api/v1//runs",
        "/api/v1/../v1/runs",
        "/api/v1/catalog?cursor=%FF%FE",
        "/api/v1/apps?search=%E2%9C%93&limit=-1",
        "/api/v1/catalog?limit=99999999999999999999",
        "/mcp/k/",
        "/api/v2/runs",
        "/",
    ];
    let methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
    let auths = [
        "",
        "Bearer ",
        "Bearer cpk_",
        "Basic Zm9vOmJhcg==",
        "Bearer caf\u{e9}",
        "bearer KEY",
    ];
    let types = [
        "application/json",
        "text/plain",
        "application/json; charset=utf-8",
        "",
    ];
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..300 {
        if i % 100 == 99 {
            // Anonymous requests share one address budget; start a new window now and then.
            srv.clock.advance(60_000);
        }
        // Biased towards the one endpoint with a body and a valid key, so the body checks run.
        let path = if rng.below(3) == 0 {
            "/api/v1/tools/find"
        } else {
            rng.pick(&paths)
        };
        let mut body = match rng.below(4) {
            0 => Vec::new(),
            1 => deep.clone().into_bytes(),
            _ => valid.to_vec(),
        };
        for _ in 0..rng.below(4) {
            if !body.is_empty() {
                let at = rng.below(body.len());
                body[at] = (rng.next() & 0xff) as u8;
            }
        }
        let auth = if rng.below(2) == 0 {
            "bearer KEY"
        } else {
            rng.pick(&auths)
        };
        let auth = auth.replace("KEY", &key);
        let ct = rng.pick(&types);
        let method = if rng.below(2) == 0 {
            "POST"
        } else {
            rng.pick(&methods)
        };
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let call = Call {
            method: method.clone(),
            path,
            key: None,
            content_type: (!ct.is_empty()).then_some(ct),
            body,
        };
        let r = send_with_auth(&srv.base, call, &auth).await;
        seen.insert(r.status);
        assert!(
            r.status < 500,
            "case {i}: {method} {path} auth={auth:?} -> {} {}",
            r.status,
            r.body
        );
        if r.status != 200 {
            let errs = platform::http::openapi::violations(&problem, &r.body);
            assert!(
                errs.is_empty(),
                "case {i}: {method} {path} auth={auth:?} -> {} {errs:?} {}",
                r.status,
                r.body
            );
        }
    }
    // The mix reached the router's different answers, not one early rejection.
    for status in [200, 400, 401, 404, 405, 415, 422] {
        assert!(seen.contains(&status), "no {status} among {seen:?}");
    }
    let ok = send(&srv.base, get("/api/v1/runs", Some(&key))).await;
    assert_eq!(ok.status, 200, "still serving: {}", ok.body);
}

async fn send_with_auth(base: &str, call: Call<'_>, auth: &str) -> common::Resp {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n",
        call.method, call.path
    );
    if !auth.is_empty() {
        head.push_str(&format!("Authorization: {auth}\r\n"));
    }
    if let Some(ct) = call.content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", call.body.len()));
    s.write_all(head.as_bytes()).await.unwrap();
    let _ = s.write_all(&call.body).await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut headers = http::HeaderMap::new();
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':')
            && let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.trim().as_bytes()),
                http::HeaderValue::from_str(v.trim()),
            )
        {
            headers.insert(k, v);
        }
    }
    common::Resp {
        status,
        headers,
        raw: bytes::Bytes::from(body.to_owned()),
        body: serde_json::from_str(body).unwrap_or(Value::Null),
    }
}
