//! Apps as products across the re-grouping, on DynamoDB Local: connections, runs and triggers
//! written the way the per-document catalog stored them (app `twilio_api_v2010`, tool
//! `twilio_api_v2010.list_messages`) keep working under the product catalog (app `twilio`
//! grouping two documents). The stored items are written through the store exactly as the
//! previous code wrote them and are never rewritten: ids resolve to the product app at read time.
//! The upstream "Twilio" and the webhook receiver are real loopback HTTP servers. Also
//! `GET /apps/{app}` by slug, alias, title and former id.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use catalog_core as core;
use common::{Resp, assert_documented, get, post_json, send};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use platform::domain::accounts;
use platform::domain::clock::{Clock, ManualClock};
use platform::domain::connections::{
    AuthMethod, ConnStatus, Connection, ConnectionStore, IntegrationConfig, Secret,
};
use platform::domain::oauth::OAuthApps;
use platform::domain::ratelimit::RateLimitPolicy;
use platform::domain::runs::{Arguments, NewRun, Run, RunStatus, RunStore};
use platform::domain::secrets::SecretBox;
use platform::domain::triggers::{EventKind, POLL_INTERVAL_MS, Trigger, TriggerStore};
use platform::exec::Integrations;
use platform::exec::outbound::{AllowRule, Outbound, OutboundPolicy};
use platform::exec::triggers::Triggers;
use platform::http::App;
use platform::store::{DynamoStore, Sealer};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Loopback servers: the app's API and the webhook receiver. Both record what they were sent.

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Value,
}

struct Loopback {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The messages `GET …/Messages.json` lists, newest first.
    messages: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    req: Request<Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    messages: Arc<Mutex<Vec<Value>>>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let raw = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    seen.lock().unwrap().push(Seen {
        method,
        path: path.clone(),
        authorization,
        body,
    });
    let answer = if path.ends_with("/Messages.json") {
        json!({"messages": *messages.lock().unwrap()})
    } else if path.ends_with("/v1/Services") {
        json!({"services": [{"sid": "MG001", "friendly_name": "alerts"}]})
    } else {
        json!({"ok": true})
    };
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .unwrap())
}

impl Loopback {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let messages: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (s2, m2) = (seen.clone(), messages.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (seen, messages) = (s2.clone(), m2.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req| answer(req, seen.clone(), messages.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{addr}"),
            seen,
            messages,
            task,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------------------------
// The product catalog: Twilio grouping the two documents that were apps `twilio_api_v2010` and
// `twilio_messaging_v1`, each with its own server (paths of the loopback upstream), both with
// HTTP basic auth (shared: one connection serves both).

fn schema_with_account_sid() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "object",
        "properties": {"AccountSid": {"type": "string"}}, "required": ["AccountSid"],
        "additionalProperties": false}}, "required": ["path"], "additionalProperties": false})
}

fn product_catalog(upstream: &str) -> core::Catalog {
    let basic = core::AuthScheme {
        name: "accountSid_authToken".into(),
        kind: core::AuthKind::Http {
            scheme: "basic".into(),
        },
    };
    let doc = |id: &str, title: &str, server: String| core::Doc {
        id: id.into(),
        title: title.into(),
        version: "1.0.0".into(),
        license: Some("MIT".into()),
        origin: "test".into(),
        servers: vec![core::Server {
            url: server,
            variables: Vec::new(),
        }],
        auth: vec![basic.clone()],
    };
    let uses = vec![vec![core::SchemeUse {
        scheme: 0,
        scopes: Vec::new(),
    }]];
    let tool = |name: &str, doc: u32, method, path: &str| core::Tool {
        name: name.into(),
        app: 0,
        doc,
        server: 0,
        method,
        path: path.into(),
        operation_id: None,
        description: format!("{name} of the test catalog."),
        security: uses.clone(),
        deprecated: false,
    };
    let messages = "/2010-04-01/Accounts/{AccountSid}/Messages.json";
    // Sorted by name, as the artifact keeps them.
    let tools = vec![
        tool("twilio.create_message", 0, core::Method::Post, messages),
        tool("twilio.list_messages", 0, core::Method::Get, messages),
        tool("twilio.list_services", 1, core::Method::Get, "/v1/Services"),
    ];
    let inputs = vec![
        core::ToolInput {
            schema: schema_with_account_sid(),
            example: json!({}),
        },
        core::ToolInput {
            schema: schema_with_account_sid(),
            example: json!({}),
        },
        core::ToolInput {
            schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            example: json!({}),
        },
    ];
    let (schema_offsets, schema_blob) = core::Catalog::schema_chunks(&inputs, 3).unwrap();
    let catalog = core::Catalog {
        source: core::Source {
            packages: vec!["test@1".into()],
            input_key: "products".into(),
        },
        apps: vec![core::App {
            slug: "twilio".into(),
            title: "Twilio".into(),
            description: "SMS, voice and messaging services.".into(),
            aliases: vec!["twilio sms".into()],
            former_ids: vec!["twilio_api_v2010".into(), "twilio_messaging_v1".into()],
            categories: vec!["communication".into()],
            logo_url: Some("https://www.twilio.com/logo.png".into()),
            docs: vec![0, 1],
            tools: (0, 3),
            prior: 1.0,
        }],
        docs: vec![
            doc(
                "twilio/twilio_api_v2010",
                "Twilio - Api",
                format!("{upstream}/api"),
            ),
            doc(
                "twilio/twilio_messaging_v1",
                "Twilio - Messaging",
                format!("{upstream}/messaging"),
            ),
        ],
        tools,
        index: Default::default(),
        app_index: Default::default(),
        former_app_ids: vec![
            ("twilio_api_v2010".into(), 0),
            ("twilio_messaging_v1".into(), 0),
        ],
        renamed_tools: vec![
            ("twilio_api_v2010.create_message".into(), 0),
            ("twilio_api_v2010.list_messages".into(), 1),
            ("twilio_messaging_v1.list_services".into(), 2),
        ],
        embedding: Default::default(),
        tool_vectors: Vec::new(),
        schema_offsets,
        schema_blob,
        in_memory: false,
    };
    // Through the artifact format, as the platform loads it.
    core::Catalog::from_bytes(catalog.to_artifact(3).unwrap()).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The platform: connections, runs and triggers over one fresh table, loopback allowed.

struct Platform {
    base: String,
    store: DynamoStore,
    clock: Arc<ManualClock>,
    sealer: Arc<Sealer>,
    integrations: Arc<Integrations>,
    triggers: Arc<Triggers>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn platform(catalog: core::Catalog) -> Platform {
    let store = common::fresh_store().await;
    let clock = Arc::new(ManualClock::new(common::start_of_minute_ms()));
    let catalog: Arc<dyn platform::domain::apps::Catalog> = Arc::new(catalog);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let config = IntegrationConfig::new(&base, OAuthApps::from_json(b"{}").unwrap()).unwrap();
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    let sealer = Arc::new(Sealer::local(key));
    let outbound = Arc::new(
        Outbound::new(OutboundPolicy {
            allow: vec![AllowRule::Net("127.0.0.1/32".parse().unwrap())],
            allow_http: true,
            timeout: Duration::from_secs(10),
            max_response_bytes: 1024 * 1024,
        })
        .unwrap(),
    );
    let integrations = Arc::new(Integrations::new(
        store.clone(),
        catalog.clone(),
        clock.clone(),
        sealer.clone(),
        outbound.clone(),
        config,
    ));
    let triggers = Arc::new(Triggers::new(
        store.clone(),
        catalog.clone(),
        clock.clone(),
        outbound,
        sealer.clone(),
        Some(base.clone()),
    ));
    let app = App::new(
        store.clone(),
        catalog,
        clock.clone(),
        RateLimitPolicy::default(),
    )
    .unwrap()
    .with_integrations(integrations.clone())
    .unwrap()
    .with_triggers(triggers.clone());
    let task = tokio::spawn(platform::http::local::serve(listener, Arc::new(app)));
    Platform {
        base,
        store,
        clock,
        sealer,
        integrations,
        triggers,
        task,
    }
}

impl Platform {
    async fn get(&self, path: &str, key: &str) -> Resp {
        self.clock.advance(1);
        send(&self.base, get(&format!("/api/v1{path}"), Some(key))).await
    }

    async fn run(&self, key: &str, tool: &str, body: Value) -> Resp {
        self.clock.advance(1);
        let path = format!("/api/v1/tools/{tool}/run");
        send(&self.base, post_json(&path, Some(key), &body)).await
    }

    /// A connection as the per-document catalog stored it: app id `app`, basic credentials
    /// sealed under the connection's context.
    async fn stored_connection(&self, account: &str, app: &str, user: &str) -> String {
        let now = self.clock.now_ms();
        let id = platform::domain::connections::new_connection_id(now);
        let secret = Secret {
            username: Some(user.into()),
            password: Some(format!("{user}-token")),
            ..Secret::default()
        };
        let mut c = Connection {
            id: id.clone(),
            account_id: account.into(),
            app: app.into(),
            label: Some(format!("{app} ({user})")),
            identity: None,
            status: ConnStatus::Active,
            auth: AuthMethod::Basic,
            created_at_ms: now,
            token_expires_ms: None,
            version: 1,
            sealed: None,
            params: BTreeMap::new(),
        };
        let plain = serde_json::to_vec(&secret).unwrap();
        c.sealed = Some(self.sealer.seal(&plain, &c.context()).await.unwrap());
        self.store.put_connection(&c).await.unwrap();
        self.clock.advance(10);
        id
    }

    async fn stored_run(&self, account: &str, app: &str, tool: &str) -> String {
        let run = Run::from_new(NewRun {
            tool: tool.into(),
            app: app.into(),
            status: RunStatus::Succeeded,
            duration_ms: 42,
            started_at_ms: self.clock.now_ms(),
            error: None,
            arguments: json!({"path": {"AccountSid": "AC1"}}),
            keep_arguments: Arguments::Redacted,
        });
        self.store.record_run(account, &run).await.unwrap();
        self.clock.advance(10);
        run.id
    }

    /// A poll trigger as the per-document catalog created it: its app, event and tool under the
    /// former names, using `connection`.
    async fn stored_trigger(&self, account: &str, connection: &str, webhook: &str) -> String {
        let id = platform::domain::triggers::new_id();
        let sealed_secret = self
            .sealer
            .seal(
                b"whsec_dGVzdHNlY3JldHRlc3RzZWNyZXQ=",
                &platform::domain::triggers::secret_context(&id),
            )
            .await
            .unwrap();
        let t = Trigger {
            id: id.clone(),
            account_id: account.into(),
            app: "twilio_api_v2010".into(),
            event: "new_message".into(),
            kind: EventKind::Poll,
            tool: Some("twilio_api_v2010.list_messages".into()),
            connection_id: Some(connection.into()),
            webhook_url: webhook.into(),
            filter: None,
            params: Some(json!({"path": {"AccountSid": "AC1"}})),
            active: true,
            disabled_reason: None,
            created_at_ms: self.clock.now_ms(),
            last_poll_ms: None,
            last_event_ms: None,
            last_delivery_ms: None,
            last_error: None,
            poll_failures: 0,
            delivery_failures: 0,
            baseline: false,
            seen: Vec::new(),
            sealed_secret,
        };
        self.store.put_trigger(&t, None).await.unwrap();
        id
    }

    async fn round(&self) -> platform::domain::triggers::RoundReport {
        self.triggers
            .run_round(
                self.integrations.executor.as_ref(),
                self.clock.now_ms(),
                Instant::now() + Duration::from_secs(60),
            )
            .await
            .unwrap()
    }
}

fn basic(user: &str) -> String {
    use base64::Engine;
    let raw = format!("{user}:{user}-token");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_app_answers_by_slug_alias_title_and_former_id_naming_the_canonical_app() {
    let upstream = Loopback::start().await;
    let p = platform(product_catalog(&upstream.url)).await;
    let issued = accounts::create_account(&p.store, "apps@example.com", None, p.clock.now_ms())
        .await
        .unwrap();
    let key = issued.key.expose().to_string();

    for name in [
        "twilio",
        "twilio_api_v2010",
        "twilio_messaging_v1",
        "twilio%20sms",
        "TWILIO",
    ] {
        let r = p.get(&format!("/apps/{name}"), &key).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_documented(&r, "get", "/apps/{app}");
        assert_eq!(r.body["id"], "twilio", "{name}");
    }
    let r = p.get("/apps/twilio_api_v2010", &key).await;
    assert_eq!(r.body["name"], "Twilio");
    assert_eq!(r.body["tool_count"], 3);
    assert_eq!(r.body["auth"], json!(["basic"]));
    assert_eq!(r.body["logo_url"], "https://www.twilio.com/logo.png");
    assert_eq!(
        r.body["former_ids"],
        json!(["twilio_api_v2010", "twilio_messaging_v1"])
    );
    let docs: Vec<&str> = r.body["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        docs,
        ["twilio/twilio_api_v2010", "twilio/twilio_messaging_v1"]
    );
    assert_eq!(r.body["connection_status"], "not_connected");

    let r = p.get("/apps/no_such_app", &key).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert_eq!(r.code(), "app_not_found");
    assert_documented(&r, "get", "/apps/{app}");

    let r = p.get("/apps/twilio?x=1", &key).await;
    assert_eq!(
        (r.status, r.code()),
        (400, "unknown_parameter"),
        "{}",
        r.body
    );
    let anonymous = send(&p.base, get("/api/v1/apps/twilio", None)).await;
    assert_eq!(anonymous.status, 401);
}

// Longer than 80 lines on purpose: one migration scenario whose checks all read the same stored
// records; split up, each part would have to write them again.
#[tokio::test]
async fn connections_runs_and_triggers_stored_under_per_document_ids_keep_working() {
    let upstream = Loopback::start().await;
    let receiver = Loopback::start().await;
    let p = platform(product_catalog(&upstream.url)).await;
    let issued = accounts::create_account(&p.store, "migrate@example.com", None, p.clock.now_ms())
        .await
        .unwrap();
    let (account, key) = (issued.account_id.clone(), issued.key.expose().to_string());

    // What the per-document catalog left in the table.
    let first = p
        .stored_connection(&account, "twilio_api_v2010", "AC1")
        .await;
    let second = p
        .stored_connection(&account, "twilio_messaging_v1", "AC2")
        .await;
    let old_run = p
        .stored_run(
            &account,
            "twilio_api_v2010",
            "twilio_api_v2010.list_messages",
        )
        .await;
    let webhook = format!("{}/hook", receiver.url);
    let trigger = p.stored_trigger(&account, &first, &webhook).await;

    // Connections name the product app; the oldest is its one default, whichever document's id
    // it was stored under, and a filter by any of the app's ids finds both.
    let r = p.get("/connections", &key).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/connections");
    let listed: Vec<(&str, &str, bool)> = r.body["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap(),
                c["app"].as_str().unwrap(),
                c["is_default"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (first.as_str(), "twilio", true),
            (second.as_str(), "twilio", false)
        ]
    );
    for filter in ["twilio", "twilio_messaging_v1"] {
        let r = p.get(&format!("/connections?app={filter}"), &key).await;
        assert_eq!(
            r.body["connections"].as_array().unwrap().len(),
            2,
            "{filter}"
        );
    }
    let r = p.get("/apps/twilio", &key).await;
    assert_eq!(r.body["connection_status"], "connected");

    // A tool of the other document runs with the default connection (stored under the first
    // document's id): the auth is shared, so one connection serves the product.
    let r = p
        .run(&key, "twilio.list_services", json!({"arguments": {}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(
        (r.body["app"].as_str(), r.body["connection_id"].as_str()),
        (Some("twilio"), Some(first.as_str()))
    );
    assert_eq!(r.body["data"]["services"][0]["sid"], "MG001");
    let call = upstream.seen().pop().unwrap();
    assert_eq!(
        (call.method.as_str(), call.path.as_str()),
        ("GET", "/messaging/v1/Services")
    );
    assert_eq!(call.authorization.as_deref(), Some(basic("AC1").as_str()));

    // A saved call: the old tool name with the connection stored under the other document's id.
    let r = p
        .run(
            &key,
            "twilio_api_v2010.list_messages",
            json!({"arguments": {"path": {"AccountSid": "AC2"}}, "connection_id": second}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tool"], "twilio.list_messages");
    let call = upstream.seen().pop().unwrap();
    assert_eq!(call.path, "/api/2010-04-01/Accounts/AC2/Messages.json");
    assert_eq!(call.authorization.as_deref(), Some(basic("AC2").as_str()));

    // Runs: the stored one and the two new ones, all named as the catalog names them now.
    let r = p.get("/runs", &key).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/runs");
    let runs: Vec<(&str, &str, &str)> = r.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["id"].as_str().unwrap(),
                x["app"].as_str().unwrap(),
                x["tool"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|(_, app, _)| *app == "twilio"), "{runs:?}");
    assert_eq!(
        runs[2],
        (old_run.as_str(), "twilio", "twilio.list_messages")
    );

    // Triggers: listed and shown under the product app; its events answer by any id.
    let r = p.get("/triggers", &key).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/triggers");
    assert_eq!(r.body["triggers"][0]["id"], trigger.as_str());
    assert_eq!(r.body["triggers"][0]["app"], "twilio");
    let r = p.get(&format!("/triggers/{trigger}"), &key).await;
    assert_eq!((r.status, r.body["app"].as_str()), (200, Some("twilio")));
    for app in ["twilio", "twilio_api_v2010"] {
        let r = p.get(&format!("/triggers/events?app={app}"), &key).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let names: Vec<&str> = r.body["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"new_message"), "{app}: {names:?}");
    }

    // And it fires: the first round records the baseline through the stored connection, a new
    // message is delivered to the webhook once.
    upstream
        .messages
        .lock()
        .unwrap()
        .push(json!({"sid": "SM001", "body": "hello"}));
    let r = p.round().await;
    assert_eq!(
        (r.poll.polled, r.poll.failed, r.poll.new_items),
        (1, 0, 0),
        "{r:?}"
    );
    upstream
        .messages
        .lock()
        .unwrap()
        .insert(0, json!({"sid": "SM002", "body": "deploy finished"}));
    p.clock.advance(POLL_INTERVAL_MS);
    let r = p.round().await;
    assert_eq!(
        (r.poll.polled, r.poll.failed, r.poll.new_items),
        (1, 0, 1),
        "{r:?}"
    );
    assert_eq!(r.delivery.delivered, 1, "{r:?}");
    let polls: Vec<Seen> = upstream
        .seen()
        .into_iter()
        .filter(|s| s.path == "/api/2010-04-01/Accounts/AC1/Messages.json")
        .collect();
    assert_eq!(polls.len(), 2);
    assert!(
        polls
            .iter()
            .all(|s| s.authorization.as_deref() == Some(basic("AC1").as_str()))
    );
    let delivered = receiver.seen();
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0].path, "/hook");
    assert_eq!(delivered[0].body["data"]["item"]["sid"], "SM002");
    assert_eq!(delivered[0].body["data"]["app"], "twilio");

    // Nothing was rewritten: the stored items still carry the ids they were written with.
    let raw = p.store.connections(&account).await.unwrap();
    assert_eq!(raw[0].app, "twilio_api_v2010");

    // New items named by a former id are written under the product app: a connect link, and a
    // trigger using the connection stored under the other document's id.
    p.clock.advance(1);
    let r = send(
        &p.base,
        post_json(
            "/api/v1/apps/twilio_messaging_v1/connect",
            Some(&key),
            &json!({}),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        (r.body["app"].as_str(), r.body["auth"].as_str()),
        (Some("twilio"), Some("basic"))
    );
    p.clock.advance(1);
    let body = json!({"app": "twilio_api_v2010", "event": "new_message",
                      "webhook_url": webhook, "connection_id": second});
    let r = send(&p.base, post_json("/api/v1/triggers", Some(&key), &body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_documented(&r, "post", "/triggers");
    let id = r.body["id"].as_str().unwrap();
    let stored = p.store.get_trigger(&account, id).await.unwrap().unwrap();
    assert_eq!(
        (stored.app.as_str(), stored.tool.as_deref()),
        ("twilio", Some("twilio.list_messages"))
    );
}
