//! Shared harness: a fresh table per test on DynamoDB Local, the router served over real
//! loopback HTTP with a manual clock, and responses checked against the OpenAPI document.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use platform::domain::accounts::{self, IssuedKey};
use platform::domain::apps::StaticCatalog;
use platform::domain::clock::{Clock, ManualClock, SystemClock};
use platform::domain::ratelimit::RateLimitPolicy;
use platform::http::App;
use platform::store::DynamoStore;
use serde_json::Value;

pub fn fixture_catalog_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog.json")
}

/// A DynamoDB Local table of its own, created from the platform's table definition.
pub async fn fresh_store() -> DynamoStore {
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::var(platform::env::ENDPOINT_VAR)
        .expect("DDB_ENDPOINT must point at DynamoDB Local (the test command starts it)");
    let client = platform::bootstrap::dynamodb_client().await;
    let table = format!(
        "t-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        SystemClock.now_ms()
    );
    platform::store::table::create_table(&client, &table)
        .await
        .expect("create table on DynamoDB Local");
    DynamoStore::new(client, table)
}

/// Start of the current real minute plus one second: a window that is not about to roll over, and
/// whose counters' TTL lies in the future (DynamoDB Local really expires items).
pub fn start_of_minute_ms() -> i64 {
    let now = SystemClock.now_ms();
    now - now % 60_000 + 1_000
}

pub struct Server {
    pub base: String,
    pub store: DynamoStore,
    pub clock: Arc<ManualClock>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn server() -> Server {
    let store = fresh_store().await;
    let clock = Arc::new(ManualClock::new(start_of_minute_ms()));
    let catalog = StaticCatalog::from_path(&fixture_catalog_path()).expect("fixture catalog loads");
    let app = App::new(
        store.clone(),
        Arc::new(catalog),
        clock.clone(),
        RateLimitPolicy::default(),
    )
    .expect("app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(platform::http::local::serve(listener, Arc::new(app)));
    Server {
        base,
        store,
        clock,
        task,
    }
}

impl Server {
    pub async fn account(&self, email: &str) -> IssuedKey {
        accounts::create_account(&self.store, email, None, self.clock.now_ms())
            .await
            .expect("create account")
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub raw: Bytes,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

pub struct Call<'a> {
    pub method: Method,
    pub path: &'a str,
    pub key: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: Vec<u8>,
}

pub fn get<'a>(path: &'a str, key: Option<&'a str>) -> Call<'a> {
    Call {
        method: Method::GET,
        path,
        key,
        content_type: None,
        body: Vec::new(),
    }
}

pub fn post_json<'a>(path: &'a str, key: Option<&'a str>, body: &Value) -> Call<'a> {
    Call {
        method: Method::POST,
        path,
        key,
        content_type: Some("application/json"),
        body: body.to_string().into_bytes(),
    }
}

pub async fn send(base: &str, call: Call<'_>) -> Resp {
    send_with_headers(base, call, &[]).await
}

pub async fn send_with_headers(base: &str, call: Call<'_>, headers: &[(&str, &str)]) -> Resp {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let mut req = Request::builder()
        .method(call.method)
        .uri(format!("{base}{}", call.path));
    if let Some(k) = call.key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    if let Some(ct) = call.content_type {
        req = req.header("content-type", ct);
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
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

/// The OpenAPI document, parsed.
pub fn openapi() -> Value {
    serde_json::from_str(platform::http::openapi::DOCUMENT).unwrap()
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("dangling $ref {r}")),
        None => v,
    }
}

/// Asserts that `resp` is one the document declares for `method template` (body schema by status
/// and content type, and the common headers).
pub fn assert_documented(resp: &Resp, method: &str, template: &str) {
    let doc = openapi();
    let op = doc["paths"][template][method].clone();
    assert!(op.is_object(), "{method} {template} is not in openapi.json");
    let responses = &op["responses"];
    let declared = responses
        .get(resp.status.to_string())
        .or_else(|| responses.get("default"))
        .unwrap_or_else(|| panic!("status {} of {method} {template} undocumented", resp.status));
    let declared = resolve(&doc, declared);
    let ct = resp.header("content-type").expect("content-type");
    let schema = &declared["content"][ct]["schema"];
    assert!(
        schema.is_object(),
        "content type {ct} of {} for {method} {template} undocumented",
        resp.status
    );
    let validator = platform::http::openapi::schema_validator(&doc, schema).unwrap();
    let errors = platform::http::openapi::violations(&validator, &resp.body);
    assert!(
        errors.is_empty(),
        "{method} {template} {} does not match openapi.json: {errors:?}\nbody: {}",
        resp.status,
        resp.body
    );
    assert_common_headers(resp);
}

/// Headers every `/api/v1` response carries, with the values CONTRACTS.md fixes.
pub fn assert_common_headers(resp: &Resp) {
    let id = resp.header("x-request-id").expect("x-request-id header");
    assert!(id.starts_with("req_") && id.len() == 20, "{id}");
    if resp.body.get("request_id").is_some() {
        assert_eq!(resp.body["request_id"], id, "problem request_id = header");
    }
    assert_eq!(
        resp.header("ratelimit-policy"),
        Some("\"per-key\";q=120;w=60")
    );
}

/// `(r, t)` of the `RateLimit` header.
pub fn ratelimit(resp: &Resp) -> (u32, u64) {
    let v = resp.header("ratelimit").expect("RateLimit header");
    let rest = v
        .strip_prefix("\"per-key\";r=")
        .unwrap_or_else(|| panic!("{v}"));
    let (r, t) = rest.split_once(";t=").unwrap_or_else(|| panic!("{v}"));
    (r.parse().unwrap(), t.parse().unwrap())
}
