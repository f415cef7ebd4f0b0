//! Harness of the connect and tool-run tests: the platform with connections and the executor on
//! loopback (fresh DynamoDB Local table, manual clock, the run fixture catalog), the node OAuth
//! peer (oauth2-mock-server + an echoing app API), and a browser-like client that does not
//! follow redirects.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use platform::domain::apps::StaticCatalog;
use platform::domain::clock::{Clock, ManualClock};
use platform::domain::connections::IntegrationConfig;
use platform::domain::oauth::OAuthApps;
use platform::domain::ratelimit::RateLimitPolicy;
use platform::exec::Integrations;
use platform::exec::outbound::{AllowRule, Outbound, OutboundPolicy};
use platform::http::App;
use platform::store::DynamoStore;
use platform::store::Sealer;
use serde_json::Value;

use crate::common::{self, Call, Resp};

pub fn run_catalog_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run_catalog.json")
}

/// The node peer; killed (by its pid) when dropped.
pub struct Peer {
    pub url: String,
    child: Child,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tests/support/oauth_peer.mjs`. Fails (does not skip) without node or the package.
pub fn spawn_peer() -> Peer {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/oauth_peer.mjs");
    assert!(
        root.join("node_modules/oauth2-mock-server/package.json")
            .exists(),
        "npm package oauth2-mock-server is missing: run `npm ci` at the repository root"
    );
    let mut child = Command::new("node")
        .arg(&script)
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node must be installed to run the OAuth peer");
    let stdout = child.stdout.take().expect("peer stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the OAuth peer printed its URL within 30 s");
    let v: Value = serde_json::from_str(line.trim()).expect("peer prints JSON");
    Peer {
        url: v["url"].as_str().expect("peer url").to_owned(),
        child,
    }
}

impl Peer {
    pub async fn stats(&self) -> Value {
        let r = common::send(&self.url, common::get("/__control/stats", None)).await;
        assert_eq!(r.status, 200);
        r.body
    }

    pub async fn mode(&self, query: &str) {
        let path = format!("/__control/mode?{query}");
        let r = common::send(
            &self.url,
            Call {
                method: Method::POST,
                path: &path,
                key: None,
                content_type: None,
                body: Vec::new(),
            },
        )
        .await;
        assert_eq!(r.status, 200);
    }
}

pub struct ConnServer {
    pub base: String,
    pub store: DynamoStore,
    pub clock: Arc<ManualClock>,
    pub integrations: Arc<Integrations>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for ConnServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a test changes about the server.
pub struct Setup {
    pub oauth_apps: Value,
    pub overrides: Vec<(String, String)>,
    /// Private destinations the outbound client may reach (the peer is on loopback).
    pub allow: Vec<AllowRule>,
    pub lease_wait: Duration,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            oauth_apps: serde_json::json!({}),
            overrides: Vec::new(),
            allow: vec![AllowRule::Net("127.0.0.1/32".parse().unwrap())],
            lease_wait: Duration::from_secs(10),
        }
    }
}

/// The OAuth client of app `acme`, pointed at the peer.
pub fn acme_oauth(peer: &Peer) -> Value {
    serde_json::json!({"acme": {
        "client_id": "acme-client",
        "client_secret": "acme-secret",
        "authorize_url": format!("{}/authorize", peer.url),
        "token_url": format!("{}/token", peer.url),
        "scopes": ["notes:read", "notes:write"],
        "base_url": format!("{}/api", peer.url),
    }})
}

pub async fn conn_server(setup: Setup) -> ConnServer {
    let catalog: Arc<dyn platform::domain::apps::Catalog> =
        Arc::new(StaticCatalog::from_path(&run_catalog_path()).expect("run catalog loads"));
    conn_server_with(setup, catalog).await
}

/// [`conn_server`] over another catalog (a built artifact, say).
pub async fn conn_server_with(
    setup: Setup,
    catalog: Arc<dyn platform::domain::apps::Catalog>,
) -> ConnServer {
    let store = common::fresh_store().await;
    let clock = Arc::new(ManualClock::new(common::start_of_minute_ms()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let oauth = OAuthApps::from_json(setup.oauth_apps.to_string().as_bytes()).expect("oauth apps");
    let mut config = IntegrationConfig::new(&base, oauth).expect("config");
    config.lease_wait = setup.lease_wait;
    for (app, url) in setup.overrides {
        config.base_url_overrides.insert(app, url);
    }
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    let policy = OutboundPolicy {
        allow: setup.allow,
        allow_http: true,
        timeout: Duration::from_secs(10),
        max_response_bytes: 1024 * 1024,
    };
    let integrations = Arc::new(Integrations::new(
        store.clone(),
        catalog.clone(),
        clock.clone(),
        Arc::new(Sealer::local(key)),
        Arc::new(Outbound::new(policy).expect("outbound")),
        config,
    ));
    let app = App::new(
        store.clone(),
        catalog,
        clock.clone(),
        RateLimitPolicy::default(),
    )
    .expect("app")
    .with_integrations(integrations.clone())
    .expect("integrations");
    let task = tokio::spawn(platform::http::local::serve(listener, Arc::new(app)));
    ConnServer {
        base,
        store,
        clock,
        integrations,
        task,
    }
}

impl ConnServer {
    pub async fn account(&self, email: &str) -> platform::domain::accounts::IssuedKey {
        platform::domain::accounts::create_account(&self.store, email, None, self.clock.now_ms())
            .await
            .expect("create account")
    }

    /// `POST /api/v1/apps/{app}/connect`.
    pub async fn link(&self, key: &str, app: &str, body: Value) -> Resp {
        let path = format!("/api/v1/apps/{app}/connect");
        common::send(&self.base, common::post_json(&path, Some(key), &body)).await
    }

    pub async fn connections(&self, key: &str) -> Resp {
        common::send(&self.base, common::get("/api/v1/connections", Some(key))).await
    }

    /// `POST /api/v1/tools/{tool}/run`, a millisecond after the previous call, so that the
    /// runs' order in /runs is the order of the calls.
    pub async fn run(&self, key: &str, tool: &str, body: Value) -> Resp {
        self.clock.advance(1);
        let path = format!("/api/v1/tools/{tool}/run");
        common::send(&self.base, common::post_json(&path, Some(key), &body)).await
    }

    pub async fn runs(&self, key: &str) -> Vec<Value> {
        let r = common::send(&self.base, common::get("/api/v1/runs", Some(key))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["runs"].as_array().cloned().unwrap_or_default()
    }
}

/// GET an absolute URL, without following redirects.
pub async fn browse(url: &str) -> Resp {
    let (base, path) = split(url);
    common::send(&base, common::get(&path, None)).await
}

/// POST a form to an absolute URL, without following redirects.
pub async fn post_form(url: &str, form: &[(&str, &str)]) -> Resp {
    let (base, path) = split(url);
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().copied())
        .finish();
    common::send(
        &base,
        Call {
            method: Method::POST,
            path: &path,
            key: None,
            content_type: Some("application/x-www-form-urlencoded"),
            body: body.into_bytes(),
        },
    )
    .await
}

fn split(url: &str) -> (String, String) {
    let u = url::Url::parse(url).expect("absolute URL");
    let base = format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str().unwrap(),
        u.port_or_known_default().unwrap()
    );
    let mut path = u.path().to_owned();
    if let Some(q) = u.query() {
        path.push('?');
        path.push_str(q);
    }
    (base, path)
}

pub fn location(r: &Resp) -> String {
    r.header("location")
        .unwrap_or_else(|| panic!("no Location on {}: {}", r.status, html(r)))
        .to_owned()
}

pub fn html(r: &Resp) -> String {
    String::from_utf8_lossy(&r.raw).into_owned()
}

/// Opens an OAuth link as a person would: `GET` shows the consent page (which uses nothing up),
/// its button POSTs back to the same URL; returns that answer (303 to the provider).
pub async fn open_link(link_url: &str) -> Resp {
    let page = browse(link_url).await;
    assert_eq!(page.status, 200, "consent page: {}", html(&page));
    assert!(
        html(&page).contains("<form method=\"post\" action=\"\">"),
        "{}",
        html(&page)
    );
    post_form(link_url, &[]).await
}

/// Runs the browser part of an OAuth connect: open the link, follow the provider's consent
/// redirect back to the callback, and return the callback's answer.
pub async fn oauth_dance(link_url: &str) -> Resp {
    let open = open_link(link_url).await;
    assert_eq!(open.status, 303, "link → provider: {}", html(&open));
    let consent = browse(&location(&open)).await;
    assert_eq!(
        consent.status,
        302,
        "provider → callback: {}",
        html(&consent)
    );
    browse(&location(&consent)).await
}

pub fn query_of(url: &str) -> std::collections::BTreeMap<String, String> {
    url::Url::parse(url)
        .expect("URL")
        .query_pairs()
        .into_owned()
        .collect()
}

/// Polls `f` until it returns `Some`, failing after `secs`.
pub async fn eventually<T, F, Fut>(secs: u64, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "condition not met within {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn bytes(s: &str) -> Bytes {
    Bytes::from(s.to_owned())
}
