//! Triggers end to end over real loopback HTTP and DynamoDB Local: a local "app" whose list
//! grows, the platform polling it through the jobs round, and a receiver that verifies every
//! delivery with the official Standard Webhooks library (npm `standardwebhooks`, in a node
//! process). Time is a manual clock; jobs rounds are called directly, so nothing sleeps.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::{Call, Resp, assert_documented, get, post_json, send, send_with_headers};
use http::{Method, Response};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use platform::domain::apps::StaticCatalog;
use platform::domain::clock::{Clock, ManualClock};
use platform::domain::ratelimit::RateLimitPolicy;
use platform::domain::triggers::RoundReport;
use platform::exec::outbound::{AllowRule, Outbound, OutboundPolicy};
use platform::exec::triggers::{Triggers, UrlListSource};
use platform::http::App;
use platform::store::DynamoStore;
use platform::store::Sealer;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// A local app with a growing list: GET /channels → {"ok": true, "channels": [...]}.

struct ListApp {
    url: String,
    items: Arc<Mutex<Vec<Value>>>,
    status: Arc<Mutex<u16>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ListApp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ListApp {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let items: Arc<Mutex<Vec<Value>>> = Arc::default();
        let status = Arc::new(Mutex::new(200u16));
        let (i2, s2) = (items.clone(), status.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (items, status) = (i2.clone(), s2.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| {
                        let body = json!({"ok": true, "channels": *items.lock().unwrap()});
                        let code = *status.lock().unwrap();
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                Response::builder()
                                    .status(code)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(body.to_string())))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{addr}/channels"),
            items,
            status,
            task,
        }
    }

    fn push(&self, id: &str) {
        self.items
            .lock()
            .unwrap()
            .insert(0, json!({"id": id, "name": format!("channel {id}")}));
    }
}

// ---------------------------------------------------------------------------------------------
// The node receiver (tests/fixtures/webhook_receiver.mjs).

struct Receiver {
    base: String,
    child: Child,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start() -> Self {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = manifest.join("tests/fixtures/webhook_receiver.mjs");
        let mut child = Command::new(std::env::var("NODE").unwrap_or_else(|_| "node".into()))
            .arg(script)
            .current_dir(manifest.join("../.."))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs (the repo's npm packages must be installed: npm ci)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("receiver said {line:?}"))
            .to_string();
        Self {
            base: format!("http://127.0.0.1:{port}"),
            child,
        }
    }

    async fn control(&self, path: &str, body: Value) {
        let r = send(&self.base, post_json(path, None, &body)).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
    }

    async fn secret(&self, path: &str, secret: &str) {
        self.control("/_config", json!({"path": path, "secret": secret}))
            .await;
    }

    async fn script(&self, path: &str, responses: Value) {
        self.control("/_script", json!({"path": path, "responses": responses}))
            .await;
    }

    async fn clock(&self, now_ms: i64) {
        self.control("/_clock", json!({"now_ms": now_ms})).await;
    }

    async fn log(&self, path: &str) -> Vec<Value> {
        let r = send(&self.base, get("/_log", None)).await;
        r.body
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["path"] == path)
            .cloned()
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The platform with triggers.

struct Platform {
    base: String,
    store: DynamoStore,
    clock: Arc<ManualClock>,
    triggers: Arc<Triggers>,
    source: UrlListSource,
    receiver: Receiver,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn loopback_policy() -> OutboundPolicy {
    OutboundPolicy {
        allow: vec![AllowRule::parse("127.0.0.1").unwrap()],
        allow_http: true,
        ..OutboundPolicy::default()
    }
}

async fn platform(policy: OutboundPolicy, list_urls: HashMap<String, String>) -> Platform {
    let store = common::fresh_store().await;
    let clock = Arc::new(ManualClock::new(common::start_of_minute_ms()));
    let catalog = Arc::new(StaticCatalog::from_path(&common::fixture_catalog_path()).unwrap());
    let outbound = Arc::new(Outbound::new(policy).unwrap());
    let triggers = Arc::new(Triggers::new(
        store.clone(),
        catalog.clone(),
        clock.clone(),
        outbound.clone(),
        Arc::new(Sealer::local([7u8; 32])),
        Some("https://platform.example".into()),
    ));
    let app = App::new(
        store.clone(),
        catalog,
        clock.clone(),
        RateLimitPolicy::default(),
    )
    .unwrap()
    .with_triggers(triggers.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(platform::http::local::serve(listener, Arc::new(app)));
    let receiver = Receiver::start();
    receiver.clock(clock.now_ms()).await;
    Platform {
        base,
        store,
        clock,
        triggers,
        source: UrlListSource::new(outbound, list_urls),
        receiver,
        task,
    }
}

impl Platform {
    async fn key(&self, email: &str) -> String {
        platform::domain::accounts::create_account(&self.store, email, None, self.clock.now_ms())
            .await
            .unwrap()
            .key
            .expose()
            .to_string()
    }

    /// Moves both clocks (ours and the receiver's verifier) forward.
    async fn advance(&self, ms: i64) {
        self.clock.advance(ms);
        self.receiver.clock(self.clock.now_ms()).await;
    }

    async fn round(&self) -> RoundReport {
        self.triggers
            .run_round(
                &self.source,
                self.clock.now_ms(),
                std::time::Instant::now() + std::time::Duration::from_secs(60),
            )
            .await
            .unwrap()
    }

    /// The first round: every trigger records its baseline without failing or firing.
    async fn baseline(&self, triggers: usize) {
        let r = self.round().await;
        assert_eq!((r.poll.polled, r.poll.failed), (triggers, 0), "{r:?}");
        assert_eq!(r.delivery.attempted, 0, "{r:?}");
    }

    async fn create(&self, key: &str, body: Value) -> Resp {
        let r = send(&self.base, post_json("/api/v1/triggers", Some(key), &body)).await;
        assert_documented(&r, "post", "/triggers");
        r
    }

    /// A `new_channel` trigger of `slack` delivering to the receiver's `path`.
    async fn channel_trigger(&self, key: &str, path: &str) -> String {
        let r = self
            .create(
                key,
                json!({"app": "slack", "event": "new_channel",
                       "webhook_url": format!("{}{path}", self.receiver.base)}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        let secret = r.body["secret"].as_str().unwrap();
        self.receiver.secret(path, secret).await;
        r.body["id"].as_str().unwrap().to_string()
    }

    async fn trigger(&self, key: &str, id: &str) -> Resp {
        let r = send(
            &self.base,
            get(&format!("/api/v1/triggers/{id}"), Some(key)),
        )
        .await;
        assert_documented(&r, "get", "/triggers/{id}");
        r
    }
}

fn delete<'a>(path: &'a str, key: Option<&'a str>) -> Call<'a> {
    Call {
        method: Method::DELETE,
        path,
        key,
        content_type: None,
        body: Vec::new(),
    }
}

fn channels(list_app: &ListApp) -> HashMap<String, String> {
    HashMap::from([("slack_list_channels".to_string(), list_app.url.clone())])
}

fn item_ids(log: &[Value]) -> Vec<String> {
    log.iter()
        .map(|e| {
            e["payload"]["data"]["item"]["id"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn a_polling_trigger_fires_once_per_new_item_signed_as_standard_webhooks() {
    let list_app = ListApp::start().await;
    let p = platform(loopback_policy(), channels(&list_app)).await;
    let key = p.key("poll@example.com").await;
    list_app.push("C1");
    list_app.push("C2");

    let events = send(
        &p.base,
        get("/api/v1/triggers/events?app=slack", Some(&key)),
    )
    .await;
    assert_documented(&events, "get", "/triggers/events");
    let names: Vec<&str> = events.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["new_channel", "webhook"]);

    let id = p.channel_trigger(&key, "/r/poll").await;
    let created = p.trigger(&key, &id).await;
    assert_eq!(created.body["health"]["state"], "healthy");
    assert!(created.body["health"]["last_poll_at"].is_null());
    assert!(
        created.body.get("secret").is_none(),
        "the secret is shown once"
    );

    // First poll: the baseline. What already exists does not fire.
    let r = p.round().await;
    assert_eq!((r.poll.polled, r.poll.new_items), (1, 0));
    assert_eq!(r.delivery.attempted, 0);
    // Not due again before the interval.
    list_app.push("C3");
    assert_eq!(p.round().await.poll.polled, 0);

    p.advance(60_000).await;
    let r = p.round().await;
    assert_eq!((r.poll.new_items, r.delivery.delivered), (1, 1), "{r:?}");

    list_app.push("C4");
    list_app.push("C5");
    p.advance(60_000).await;
    let r = p.round().await;
    assert_eq!((r.poll.new_items, r.delivery.delivered), (2, 2), "{r:?}");

    // Nothing new: nothing fires, however often it polls.
    for _ in 0..3 {
        p.advance(60_000).await;
        let r = p.round().await;
        assert_eq!((r.poll.polled, r.poll.new_items), (1, 0), "{r:?}");
    }

    let log = p.receiver.log("/r/poll").await;
    assert_eq!(log.len(), 3, "{log:#?}");
    assert!(log.iter().all(|e| e["verified"] == true), "{log:#?}");
    let mut ids = item_ids(&log);
    ids.sort();
    assert_eq!(ids, ["C3", "C4", "C5"]);
    let first = &log[0]["payload"];
    assert_eq!(first["type"], "trigger.event");
    assert_eq!(first["data"]["trigger_id"], id.as_str());
    assert_eq!(first["data"]["app"], "slack");
    assert_eq!(first["data"]["event"], "new_channel");
    let mut msg_ids: Vec<&str> = log.iter().map(|e| e["id"].as_str().unwrap()).collect();
    msg_ids.dedup();
    assert_eq!(msg_ids.len(), 3, "one message id per item");

    let t = p.trigger(&key, &id).await;
    let h = &t.body["health"];
    assert_eq!(h["state"], "healthy");
    assert_eq!(h["consecutive_failures"], 0);
    assert!(h["last_poll_at"].is_string() && h["last_event_at"].is_string());
    assert!(h["last_error"].is_null());

    let list = send(&p.base, get("/api/v1/triggers", Some(&key))).await;
    assert_documented(&list, "get", "/triggers");
    assert_eq!(list.body["triggers"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_failing_app_shows_in_health_and_recovers() {
    let list_app = ListApp::start().await;
    let p = platform(loopback_policy(), channels(&list_app)).await;
    let key = p.key("flaky@example.com").await;
    let id = p.channel_trigger(&key, "/r/flaky").await;
    p.baseline(1).await;

    *list_app.status.lock().unwrap() = 500;
    for _ in 0..3 {
        p.advance(20 * 60_000).await;
        assert_eq!(p.round().await.poll.failed, 1);
    }
    let t = p.trigger(&key, &id).await;
    assert_eq!(t.body["health"]["state"], "failing");
    assert_eq!(t.body["health"]["consecutive_failures"], 3);
    assert!(
        t.body["health"]["last_error"]
            .as_str()
            .unwrap()
            .contains("500"),
        "{:?}",
        t.body
    );

    *list_app.status.lock().unwrap() = 200;
    list_app.push("C9");
    p.advance(20 * 60_000).await;
    let r = p.round().await;
    assert_eq!((r.poll.new_items, r.delivery.delivered), (1, 1), "{r:?}");
    let t = p.trigger(&key, &id).await;
    assert_eq!(t.body["health"]["state"], "healthy");
    assert!(t.body["health"]["last_error"].is_null());
}

#[tokio::test]
async fn failed_deliveries_are_retried_on_the_schedule_honouring_retry_after() {
    let list_app = ListApp::start().await;
    let p = platform(loopback_policy(), channels(&list_app)).await;
    let key = p.key("retry@example.com").await;
    let id = p.channel_trigger(&key, "/r/retry").await;
    p.baseline(1).await;

    p.receiver
        .script(
            "/r/retry",
            json!([{"status": 500}, {"status": 503, "retry_after": "600"}, {"status": 500}]),
        )
        .await;
    list_app.push("C1");
    p.advance(60_000).await;
    let r = p.round().await;
    assert_eq!((r.delivery.attempted, r.delivery.retrying), (1, 1), "{r:?}");
    let t = p.trigger(&key, &id).await;
    assert_eq!(t.body["health"]["consecutive_failures"], 1);
    assert!(
        t.body["health"]["last_error"]
            .as_str()
            .unwrap()
            .contains("500")
    );

    // Second attempt 5 s after the first.
    p.advance(4_999).await;
    assert_eq!(p.round().await.delivery.attempted, 0);
    p.advance(1).await;
    assert_eq!(p.round().await.delivery.attempted, 1);
    // 503 with Retry-After: 600 pushes the third attempt from 5 min to 10 min.
    p.advance(5 * 60_000).await;
    assert_eq!(p.round().await.delivery.attempted, 0);
    p.advance(5 * 60_000).await;
    let r = p.round().await;
    assert_eq!((r.delivery.attempted, r.delivery.retrying), (1, 1), "{r:?}");
    // Fourth attempt 30 min after the third: delivered.
    p.advance(30 * 60_000 - 1).await;
    assert_eq!(p.round().await.delivery.attempted, 0);
    p.advance(1).await;
    let r = p.round().await;
    assert_eq!(r.delivery.delivered, 1, "{r:?}");

    let log = p.receiver.log("/r/retry").await;
    let answered: Vec<i64> = log
        .iter()
        .map(|e| e["answered"].as_i64().unwrap())
        .collect();
    assert_eq!(answered, [500, 503, 500, 204]);
    assert!(log.iter().all(|e| e["verified"] == true), "{log:#?}");
    assert!(
        log.iter().all(|e| e["id"] == log[0]["id"]),
        "every attempt carries the same webhook-id"
    );
    let stamps: Vec<i64> = log
        .iter()
        .map(|e| e["timestamp"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(stamps[1] - stamps[0], 5);
    assert_eq!(stamps[2] - stamps[1], 600);
    assert_eq!(stamps[3] - stamps[2], 1_800);
    let t = p.trigger(&key, &id).await;
    assert_eq!(t.body["health"]["consecutive_failures"], 0);
    assert_eq!(t.body["health"]["state"], "healthy");
}

#[tokio::test]
async fn a_410_disables_the_trigger_and_tells_the_other_triggers() {
    let list_app = ListApp::start().await;
    let p = platform(loopback_policy(), channels(&list_app)).await;
    let key = p.key("gone@example.com").await;
    let gone = p.channel_trigger(&key, "/r/gone").await;
    let other = p.channel_trigger(&key, "/r/other").await;
    p.baseline(2).await;

    p.receiver.script("/r/gone", json!([{"status": 410}])).await;
    list_app.push("C1");
    p.advance(60_000).await;
    let r = p.round().await;
    assert_eq!(r.delivery.failed, 1, "{r:?}");

    let t = p.trigger(&key, &gone).await;
    assert_eq!(t.body["status"], "disabled");
    assert_eq!(t.body["disabled_reason"], "endpoint_gone");
    assert_eq!(t.body["health"]["state"], "disabled");

    let events = send(&p.base, get("/api/v1/events", Some(&key))).await;
    assert_documented(&events, "get", "/events");
    let ev = &events.body["events"][0];
    assert_eq!(ev["type"], "trigger.disabled");
    assert_eq!(ev["data"]["trigger_id"], gone.as_str());

    // The account's other trigger hears about it (next round), signed with its own secret.
    p.round().await;
    let log = p.receiver.log("/r/other").await;
    let kinds: Vec<&str> = log
        .iter()
        .map(|e| e["payload"]["type"].as_str().unwrap_or(""))
        .collect();
    assert!(kinds.contains(&"trigger.disabled"), "{log:#?}");
    assert!(log.iter().all(|e| e["verified"] == true));
    let notice = log
        .iter()
        .find(|e| e["payload"]["type"] == "trigger.disabled")
        .unwrap();
    assert_eq!(notice["payload"]["data"]["trigger_id"], gone.as_str());
    assert_eq!(notice["payload"]["data"]["reason"], "endpoint_gone");

    // A disabled trigger is not polled; re-enabling brings it back.
    list_app.push("C2");
    p.advance(60_000).await;
    p.round().await;
    assert_eq!(p.receiver.log("/r/gone").await.len(), 1);
    let r = send(
        &p.base,
        post_json(
            &format!("/api/v1/triggers/{gone}/enable"),
            Some(&key),
            &json!({}),
        ),
    )
    .await;
    assert_documented(&r, "post", "/triggers/{id}/enable");
    assert_eq!(r.body["status"], "active");
    let r = p.round().await;
    assert!(r.delivery.delivered >= 1, "{r:?}");
    let ids = item_ids(&p.receiver.log("/r/gone").await);
    assert_eq!(ids.last().map(String::as_str), Some("C2"));
    let _ = other;
}

#[tokio::test]
async fn unsafe_webhook_urls_and_bad_requests_are_refused() {
    let p = platform(loopback_policy(), HashMap::new()).await;
    let key = p.key("ssrf@example.com").await;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "https://169.254.169.254/",
        "http://10.0.0.8/hook",
        "https://[::1]/hook",
        "http://localhost:9/hook",
        "ftp://example.com/hook",
    ] {
        let r = p
            .create(
                &key,
                json!({"app": "slack", "event": "new_channel", "webhook_url": url}),
            )
            .await;
        assert_eq!(r.status, 422, "{url}: {:?}", r.body);
        assert_eq!(r.code(), "destination_refused", "{url}");
    }
    let r = p
        .create(
            &key,
            json!({"app": "slack", "event": "new_channel", "webhook_url": "not a url"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (422, "invalid_webhook_url"));
    let r = p
        .create(
            &key,
            json!({"app": "slack", "event": "new_moon", "webhook_url": "https://example.com/h"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (422, "unknown_event"));
    assert!(r.body["detail"].as_str().unwrap().contains("new_channel"));
    let r = p
        .create(
            &key,
            json!({"app": "nope", "event": "webhook", "webhook_url": "https://example.com/h"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "app_not_found"));
    let r = p
        .create(&key, json!({"app": "slack", "event": "webhook", "webhook_url": "https://example.com/h", "colour": 1}))
        .await;
    assert_eq!((r.status, r.code()), (422, "invalid_request"));
    let r = p
        .create(&key, json!({"app": "slack", "event": "webhook", "webhook_url": "https://example.com/h", "connection_id": "conn_missing"}))
        .await;
    assert_eq!((r.status, r.code()), (404, "connection_not_found"));

    // Without an allow list, loopback is refused too.
    let strict = platform(OutboundPolicy::default(), HashMap::new()).await;
    let key2 = strict.key("strict@example.com").await;
    let r = strict
        .create(&key2, json!({"app": "slack", "event": "new_channel", "webhook_url": format!("{}/r/x", strict.receiver.base)}))
        .await;
    assert_eq!((r.status, r.code()), (422, "destination_refused"));
}

#[tokio::test]
async fn another_account_can_neither_see_nor_delete_a_trigger() {
    let p = platform(loopback_policy(), HashMap::new()).await;
    let owner = p.key("owner@example.com").await;
    let stranger = p.key("stranger@example.com").await;
    let id = p.channel_trigger(&owner, "/r/mine").await;

    let r = p.trigger(&stranger, &id).await;
    assert_eq!((r.status, r.code()), (404, "trigger_not_found"));
    let path = format!("/api/v1/triggers/{id}");
    let r = send(&p.base, delete(&path, Some(&stranger))).await;
    assert_eq!((r.status, r.code()), (404, "trigger_not_found"));
    let r = send(
        &p.base,
        post_json(&format!("{path}/enable"), Some(&stranger), &json!({})),
    )
    .await;
    assert_eq!(r.status, 404);
    let list = send(&p.base, get("/api/v1/triggers", Some(&stranger))).await;
    assert_eq!(list.body["triggers"], json!([]));

    assert_eq!(p.trigger(&owner, &id).await.status, 200);
    let r = send(&p.base, delete(&path, Some(&owner))).await;
    assert_eq!(r.status, 204);
    assert_documented_204(&r);
    assert_eq!(p.trigger(&owner, &id).await.status, 404);
    let r = send(&p.base, delete(&path, Some(&owner))).await;
    assert_eq!(r.status, 404);

    // Methods a route does not take are answered 405 with Allow.
    let r = send(
        &p.base,
        Call {
            method: Method::PUT,
            path: "/api/v1/triggers",
            key: Some(&owner),
            content_type: None,
            body: Vec::new(),
        },
    )
    .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, POST"));
}

fn assert_documented_204(r: &Resp) {
    assert!(r.raw.is_empty());
    common::assert_common_headers(r);
}

#[tokio::test]
async fn the_webhook_ingress_fans_an_apps_webhook_out_as_a_signed_event() {
    let p = platform(loopback_policy(), HashMap::new()).await;
    let key = p.key("hooks@example.com").await;
    let r = p
        .create(
            &key,
            json!({"app": "github", "event": "webhook",
                   "webhook_url": format!("{}/r/hook", p.receiver.base),
                   "filter": {"action": "opened"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    p.receiver
        .secret("/r/hook", r.body["secret"].as_str().unwrap())
        .await;
    let hook_url = r.body["hook_url"].as_str().unwrap();
    let hook_path = hook_url.strip_prefix("https://platform.example").unwrap();
    let id = r.body["id"].as_str().unwrap();
    assert!(hook_path.starts_with(&format!("/hooks/{id}/")));

    let push = |path: String, body: Value| {
        let base = p.base.clone();
        async move {
            send_with_headers(
                &base,
                post_json(&path, None, &body),
                &[("webhook-id", "gh-delivery-1")],
            )
            .await
        }
    };
    let opened = json!({"action": "opened", "number": 7});
    let r = push(hook_path.to_string(), opened.clone()).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    // The sender's retry of the same delivery is one message.
    let again = push(hook_path.to_string(), opened.clone()).await;
    assert_eq!(again.body["message_id"], r.body["message_id"]);
    // Filtered out: accepted, not sent.
    let closed = send(
        &p.base,
        post_json(hook_path, None, &json!({"action": "closed"})),
    )
    .await;
    assert_eq!(closed.body["filtered"], true);

    let wrong = send(
        &p.base,
        post_json(&format!("/hooks/{id}/not-the-token"), None, &opened),
    )
    .await;
    assert_eq!((wrong.status, wrong.code()), (404, "hook_not_found"));
    let big = Call {
        method: Method::POST,
        path: hook_path,
        key: None,
        content_type: Some("application/json"),
        body: vec![b' '; 70 * 1024],
    };
    assert_eq!(send(&p.base, big).await.status, 413);

    let r = p.round().await;
    assert_eq!(r.delivery.delivered, 1, "{r:?}");
    let log = p.receiver.log("/r/hook").await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["verified"], true);
    assert_eq!(log[0]["payload"]["data"]["item"], opened);
    let t = p.trigger(&key, id).await;
    assert!(t.body["health"]["last_event_at"].is_string());
}

/// Sends `call` from the loopback address `source` (all of 127.0.0.0/8 is this host), so that
/// the platform sees different client addresses.
async fn send_from(base: &str, source: [u8; 4], call: Call<'_>) -> Resp {
    use http_body_util::BodyExt;
    use hyper_util::client::legacy::Client;
    use hyper_util::client::legacy::connect::HttpConnector;
    let mut conn = HttpConnector::new();
    conn.set_local_address(Some(std::net::IpAddr::from(source)));
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(hyper_util::rt::TokioExecutor::new()).build(conn);
    let mut req = http::Request::builder()
        .method(call.method)
        .uri(format!("{base}{}", call.path));
    if let Some(ct) = call.content_type {
        req = req.header("content-type", ct);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(call.body))).unwrap())
        .await
        .expect("request reaches the local server");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let raw = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        raw,
        body,
    }
}

#[tokio::test]
async fn a_flood_of_made_up_trigger_ids_is_bounded_per_source_and_spares_real_senders() {
    const MISS_BUDGET: usize = 20;
    let p = platform(loopback_policy(), HashMap::new()).await;
    let key = p.key("flood@example.com").await;
    let r = p
        .create(
            &key,
            json!({"app": "github", "event": "webhook",
                   "webhook_url": format!("{}/r/hook", p.receiver.base)}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    let hook_path = r.body["hook_url"]
        .as_str()
        .unwrap()
        .strip_prefix("https://platform.example")
        .unwrap()
        .to_string();

    // The attacker (127.0.0.2) invents a fresh trigger id per request: each used to get a fresh
    // bucket, so none was ever refused.
    let attacker = [127, 0, 0, 2];
    let (mut missed, mut refused) = (0, 0);
    for i in 0..200u32 {
        let path = format!("/hooks/trg_{i:020x}/guess{i}");
        let r = send_from(&p.base, attacker, post_json(&path, None, &json!({}))).await;
        match r.status {
            404 => {
                assert_eq!(r.code(), "hook_not_found");
                missed += 1;
            }
            429 => {
                assert_eq!(r.code(), "rate_limited");
                let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
                assert!((1..=60).contains(&after), "Retry-After {after}");
                refused += 1;
            }
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert_eq!((missed, refused), (MISS_BUDGET, 200 - MISS_BUDGET));
    // Guessing the real trigger's token is refused the same way.
    let guess = format!("/hooks/{id}/not-the-token");
    let r = send_from(&p.base, attacker, post_json(&guess, None, &json!({}))).await;
    assert_eq!(r.status, 429);

    // Another source that sends a wrong token still gets the plain 404, and the real sender
    // (127.0.0.1, with the token) is not limited by what the attacker did with its trigger id.
    let r = send_from(&p.base, [127, 0, 0, 3], post_json(&guess, None, &json!({}))).await;
    assert_eq!((r.status, r.code()), (404, "hook_not_found"));
    let r = send(&p.base, post_json(&hook_path, None, &json!({"n": 1}))).await;
    assert_eq!(r.status, 202, "{:?}", r.body);

    // Once over its budget the source is refused without a store call: with the table gone
    // the answer is still 429, not 503 store_unavailable.
    p.store
        .client()
        .delete_table()
        .table_name(p.store.table())
        .send()
        .await
        .unwrap();
    let r = send_from(
        &p.base,
        attacker,
        post_json("/hooks/trg_x/y", None, &json!({})),
    )
    .await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"), "{:?}", r.body);
    let r = send(&p.base, post_json(&hook_path, None, &json!({"n": 2}))).await;
    assert_eq!(
        r.status, 503,
        "the real sender does reach the (now missing) store"
    );
}
