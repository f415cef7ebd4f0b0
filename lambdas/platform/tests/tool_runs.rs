//! Running tools end to end: Stripe tools derived from Stripe's real OpenAPI document against
//! the Stripe fake (edge/e2e/stripe-fake, which validates requests against that document and
//! checks the secret key), key and basic credentials against the echoing peer, connection
//! required (REST and MCP), upstream errors, and the SSRF guard.

mod common;
mod conn_common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Resp, assert_documented, post_json, send_with_headers};
use conn_common::{ConnServer, Setup, browse, conn_server, html, post_form, spawn_peer};
use platform::exec::outbound::AllowRule;
use serde_json::{Value, json};

struct StripeFake {
    url: String,
    child: Child,
}

impl Drop for StripeFake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_stripe_fake() -> StripeFake {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("node")
        .arg("edge/e2e/stripe-fake/server.mjs")
        .arg("0")
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node must be installed to run the Stripe fake");
    let stdout = child.stdout.take().expect("fake stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the Stripe fake started within 30 s");
    let url = line
        .trim()
        .strip_prefix("stripe-fake listening on ")
        .unwrap_or_else(|| panic!("unexpected fake output {line:?}"))
        .to_owned();
    StripeFake { url, child }
}

async fn mcp_call(srv: &ConnServer, key: &str, name: &str, args: Value) -> Value {
    srv.clock.advance(1);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": args}});
    let r = send_with_headers(
        &srv.base,
        post_json("/mcp", Some(key), &body),
        &[
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-06-18"),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.raw));
    r.body["result"].clone()
}

/// Connects a key or password app through its hosted form; returns the connection id.
async fn connect_form(srv: &ConnServer, key: &str, app: &str, form: &[(&str, &str)]) -> String {
    let link = srv.link(key, app, json!({"label": "test"})).await;
    assert_eq!(link.status, 201, "{}", link.body);
    let url = link.body["url"].as_str().unwrap().to_owned();
    let page = browse(&url).await;
    assert_eq!(page.status, 200, "{}", html(&page));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    let done = post_form(&url, form).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    assert!(html(&done).contains("is connected"), "{}", html(&done));
    srv.connections(key).await.body["connections"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|c| c["app"] == app)
        .and_then(|c| c["id"].as_str())
        .expect("connection listed")
        .to_owned()
}

fn code(r: &Resp) -> (u16, &str) {
    (r.status, r.code())
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn stripe_tools_run_against_the_stripe_fake_with_the_connected_key() {
    let fake = spawn_stripe_fake();
    let srv = conn_server(Setup {
        overrides: vec![("stripe".into(), fake.url.clone())],
        ..Setup::default()
    })
    .await;
    let a = srv.account("stripe-runs@example.com").await;
    let k = a.key.expose();

    // No connection: 409 with a fresh link, over REST and as a normal MCP result.
    let r = srv
        .run(
            k,
            "stripe.list_prices",
            json!({"arguments": {"query": {"limit": 2}}}),
        )
        .await;
    assert_eq!(code(&r), (409, "connection_required"), "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["app"], "stripe");
    let connect_url = r.body["connect_url"].as_str().unwrap().to_owned();
    assert!(connect_url.starts_with(&format!("{}/connect/cl_", srv.base)));
    assert!(r.body["run_id"].as_str().unwrap().starts_with("run_"));
    let m = mcp_call(
        &srv,
        k,
        "run_tool",
        json!({"tool": "stripe.list_prices", "arguments": {}}),
    )
    .await;
    assert_eq!(m["isError"], false, "{m}");
    let sc = &m["structuredContent"];
    assert_eq!(sc["status"], "connection_required");
    assert_eq!(sc["app"], "stripe");
    assert!(sc["connect_url"].as_str().unwrap().contains("/connect/cl_"));
    assert!(
        sc["expires_at"].is_string() && sc["hint"].is_string(),
        "{sc}"
    );
    assert!(
        fake_requests(&fake).await.is_empty(),
        "nothing reached Stripe without a key"
    );

    // The offered link shows an API-key form; the key is stored sealed.
    let page = browse(&connect_url).await;
    assert_eq!(page.status, 200);
    let form = html(&page);
    assert!(form.contains("name=\"api_key\""), "{form}");
    assert!(form.contains("Connect Stripe"), "{form}");
    let empty = post_form(&connect_url, &[("api_key", " ")]).await;
    assert_eq!(empty.status, 422, "{}", html(&empty));
    assert!(html(&empty).contains("Enter the API key"));
    let done = post_form(&connect_url, &[("api_key", "sk_test_h1fixture")]).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    let reused = post_form(&connect_url, &[("api_key", "sk_test_other")]).await;
    assert_eq!(reused.status, 404, "the form works once");

    // Arguments are checked against the schema derived from Stripe's document.
    let bad = srv
        .run(
            k,
            "stripe.list_prices",
            json!({"arguments": {"query": {"limit": "ten"}}}),
        )
        .await;
    assert_eq!(code(&bad), (422, "invalid_arguments"), "{}", bad.body);
    assert_documented(&bad, "post", "/tools/{name}/run");
    let pointers: Vec<&str> = bad.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, ["/query/limit"]);
    let missing = srv
        .run(
            k,
            "stripe.create_checkout_session",
            json!({"arguments": {"body": {"mode": "payment"}}}),
        )
        .await;
    assert_eq!(code(&missing), (422, "invalid_arguments"));
    assert!(
        missing.body.to_string().contains("success_url"),
        "{}",
        missing.body
    );

    // A list call: the key goes as a bearer token, the fake accepts it.
    let list = srv
        .run(
            k,
            "stripe.list_prices",
            json!({"arguments": {"query": {"limit": 2, "active": true}}}),
        )
        .await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_documented(&list, "post", "/tools/{name}/run");
    assert_eq!(list.body["status"], "succeeded");
    assert_eq!(list.body["http_status"], 200);
    assert_eq!(list.body["data"]["object"], "list");
    assert_eq!(list.body["data"]["data"].as_array().unwrap().len(), 2);
    assert_eq!(list.body["data"]["has_more"], true);

    // A form-encoded create with nested parameters, validated by the fake against the document.
    let created = srv
        .run(
            k,
            "stripe.create_checkout_session",
            json!({"arguments": {"body": {
                "mode": "payment",
                "success_url": "https://example.com/paid",
                "line_items": [{"price": "price_node", "quantity": 2}],
                "metadata": {"order": "h1-42"}}}}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let session = created.body["data"]["id"].as_str().unwrap().to_owned();
    assert!(session.starts_with("cs_test_"));
    assert_eq!(created.body["data"]["amount_total"], 9800);
    assert_eq!(created.body["data"]["metadata"]["order"], "h1-42");
    let got = srv
        .run(
            k,
            "stripe.get_checkout_session",
            json!({"arguments": {"path": {"session": session}}}),
        )
        .await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["data"]["id"], session.as_str());

    let seen = fake_requests(&fake).await;
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0]["query"], "active=true&limit=2");
    assert_eq!(seen[1]["content_type"], "application/x-www-form-urlencoded");

    // Stripe's own errors come back as upstream_error with its status and body.
    let missing_session = srv
        .run(
            k,
            "stripe.get_checkout_session",
            json!({"arguments": {"path": {"session": "cs_test_nope"}}}),
        )
        .await;
    assert_eq!(
        code(&missing_session),
        (502, "upstream_error"),
        "{}",
        missing_session.body
    );
    assert_documented(&missing_session, "post", "/tools/{name}/run");
    assert_eq!(missing_session.body["upstream_status"], 404);
    assert_eq!(
        missing_session.body["upstream_body"]["error"]["code"],
        "resource_missing"
    );

    // Every attempt is in /runs, arguments redacted.
    let runs = srv.runs(k).await;
    let statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        [
            "failed",
            "succeeded",
            "succeeded",
            "succeeded",
            "failed",
            "failed",
            "connection_required",
            "connection_required"
        ]
    );
    let text = serde_json::to_string(&runs).unwrap();
    assert!(
        !text.contains("example.com/paid") && !text.contains("h1-42"),
        "{text}"
    );
    assert!(!text.contains("sk_test_h1fixture"));
    assert_eq!(
        runs[1]["arguments"],
        json!({"path": {"session": "[redacted]"}})
    );
    assert_eq!(runs[4]["error"], "invalid_arguments");
}

async fn fake_requests(fake: &StripeFake) -> Vec<Value> {
    let r = common::send(&fake.url, common::get("/__control/requests", None)).await;
    r.body.as_array().cloned().unwrap_or_default()
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn header_keys_basic_auth_and_upstream_rate_limits() {
    let peer = spawn_peer();
    let api = format!("{}/api", peer.url);
    let srv = conn_server(Setup {
        overrides: vec![
            ("keyed".into(), api.clone()),
            ("basicapp".into(), api.clone()),
            ("open".into(), api.clone()),
        ],
        ..Setup::default()
    })
    .await;
    let a = srv.account("keys@example.com").await;
    let k = a.key.expose();

    connect_form(&srv, k, "keyed", &[("api_key", "key-123")]).await;
    let r = srv
        .run(
            k,
            "keyed.echo",
            json!({"arguments": {"query": {"q": "a b&c"}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["x_api_key"], "key-123");
    assert_eq!(r.body["data"]["authorization"], Value::Null);
    assert_eq!(r.body["data"]["query"], "q=a+b%26c");

    // Basic: the form asks for both fields.
    let link = srv.link(k, "basicapp", json!({})).await;
    assert_eq!(link.body["auth"], "basic");
    let url = link.body["url"].as_str().unwrap().to_owned();
    let form = html(&browse(&url).await);
    assert!(form.contains("name=\"username\"") && form.contains("name=\"password\""));
    let half = post_form(&url, &[("username", "ann")]).await;
    assert_eq!(half.status, 422);
    let done = post_form(&url, &[("username", "ann"), ("password", "p:w d")]).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    let r = srv.run(k, "basicapp.echo", json!({"arguments": {}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["authorization"], "Basic YW5uOnA6dyBk");
    let listed = srv.connections(k).await.body["connections"].clone();
    assert_eq!(listed[1]["identity"], "ann");

    // A public app needs no connection; a 429 upstream is relayed with its Retry-After.
    let limited = srv
        .run(
            k,
            "open.fetch",
            json!({"arguments": {"path": {"doc": "ratelimited"}}}),
        )
        .await;
    assert_eq!(
        code(&limited),
        (502, "upstream_rate_limited"),
        "{}",
        limited.body
    );
    assert_eq!(limited.body["retry_after"], 7);
    assert_eq!(limited.header("retry-after"), Some("7"));
    assert_documented(&limited, "post", "/tools/{name}/run");
    let ok = srv
        .run(
            k,
            "open.fetch",
            json!({"arguments": {"path": {"doc": "plain"}}}),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["connection_id"], Value::Null);

    // Unknown tools and connections of another app.
    let nope = srv.run(k, "keyed.nope", json!({"arguments": {}})).await;
    assert_eq!(code(&nope), (404, "tool_not_found"));
    let keyed_conn = listed[0]["id"].as_str().unwrap();
    let wrong = srv
        .run(
            k,
            "basicapp.echo",
            json!({"arguments": {}, "connection_id": keyed_conn}),
        )
        .await;
    assert_eq!(code(&wrong), (422, "connection_app_mismatch"));
}

async fn refused(srv: &ConnServer, key: &str, args: Value) -> Resp {
    let r = srv.run(key, "open.fetch", json!({"arguments": args})).await;
    assert_eq!(code(&r), (422, "destination_refused"), "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    r
}

#[tokio::test]
async fn private_destinations_are_refused_and_recorded_as_failed_runs() {
    let peer = spawn_peer();
    let port = peer.url.rsplit(':').next().unwrap().to_owned();

    // Nothing private is allowed here: loopback by IP and by name, and the metadata address.
    for base in [
        format!("http://127.0.0.1:{port}/api"),
        format!("https://localhost:{port}/api"),
        "http://169.254.169.254/latest".to_owned(),
    ] {
        let srv = conn_server(Setup {
            overrides: vec![("open".into(), base.clone())],
            allow: Vec::new(),
            ..Setup::default()
        })
        .await;
        let a = srv.account("ssrf@example.com").await;
        let k = a.key.expose();
        refused(&srv, k, json!({"path": {"doc": "x"}})).await;
        let runs = srv.runs(k).await;
        assert_eq!(runs.len(), 1, "{base}");
        assert_eq!(runs[0]["status"], "failed");
        assert!(
            runs[0]["error"]
                .as_str()
                .unwrap()
                .starts_with("destination_refused"),
            "{base}: {}",
            runs[0]["error"]
        );
    }

    // The peer itself is allowed (127.0.0.1), but a redirect from it to a private address is not
    // followed.
    let srv = conn_server(Setup {
        overrides: vec![("open".into(), format!("{}/api", peer.url))],
        allow: vec![AllowRule::Net("127.0.0.1/32".parse().unwrap())],
        ..Setup::default()
    })
    .await;
    let a = srv.account("ssrf-redirect@example.com").await;
    let k = a.key.expose();
    let through = srv
        .run(
            k,
            "open.fetch",
            json!({"arguments": {"path": {"doc": "plain"}}}),
        )
        .await;
    assert_eq!(
        through.status, 200,
        "the allowed peer is reachable: {}",
        through.body
    );
    for to in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://[::1]:9/",
    ] {
        refused(
            &srv,
            k,
            json!({"path": {"doc": "redirect"}, "query": {"to": to}}),
        )
        .await;
    }
    let runs = srv.runs(k).await;
    assert_eq!(runs.len(), 4);
    assert!(runs[..3].iter().all(|r| r["status"] == "failed"));
}
