//! Shared helpers for the engine tests: a raw HTTP/1.1 client over loopback (so tests control
//! every header byte), the OpenAPI response validator, and polling with a deadline.

#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use local_agent::engine::server::Limits;
use local_agent::engine::source::SimulatorFeed;
use local_agent::engine::{Engine, EngineConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One parsed response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends `head` (request line and headers, without the final blank line) plus
/// `Connection: close`, and reads the whole response.
pub async fn raw(addr: SocketAddr, head: &str) -> std::io::Result<Reply> {
    raw_bytes(
        addr,
        format!("{head}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
}

/// Sends exact bytes and reads until the server closes.
pub async fn raw_bytes(addr: SocketAddr, bytes: &[u8]) -> std::io::Result<Reply> {
    raw_bytes_within(addr, bytes, Duration::from_secs(10)).await
}

/// As [`raw_bytes`], giving up after `limit`.
pub async fn raw_bytes_within(
    addr: SocketAddr,
    bytes: &[u8],
    limit: Duration,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(bytes).await?;
    let mut buf = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply"))??;
    parse(&buf)
}

fn parse(buf: &[u8]) -> std::io::Result<Reply> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of head"))?;
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| bad("head not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or_else(|| bad("empty"))?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("status"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body: buf[end + 4..].to_vec(),
    })
}

/// `GET path` with a correct loopback Host.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}", addr.port()),
    )
    .await
    .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Polls `check` until it returns `Some`, or panics after `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An engine on a free loopback port playing the simulator's demo scene at `speed`.
pub async fn start_simulated(speed: f64) -> Engine {
    start_simulated_with(speed, Limits::default()).await
}

/// As [`start_simulated`], with the listener's limits.
pub async fn start_simulated_with(speed: f64, limits: Limits) -> Engine {
    let feed = SimulatorFeed::new("demo", 7, speed).expect("demo scene exists");
    let config = EngineConfig {
        port: 0,
        limits,
        data_dir: Some(temp_data_dir()),
        ..EngineConfig::default()
    };
    Engine::start(config, Box::new(feed))
        .await
        .expect("engine starts on a free port")
}

/// Validates JSON bodies against the component schemas of `local-agent/openapi.json`.
pub struct Contract {
    doc: Value,
}

impl Contract {
    pub fn load() -> Self {
        Self::load_file("openapi.json")
    }

    /// Loads another OpenAPI document of the crate (`hub-openapi.json`).
    pub fn load_file(file: &str) -> Self {
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("the OpenAPI document is readable");
        let doc: Value = serde_json::from_str(&text).expect("the OpenAPI document is JSON");
        assert_eq!(doc["openapi"], "3.1.0");
        Self { doc }
    }

    /// Panics with every violation when `value` does not match `#/components/schemas/{name}`.
    pub fn check(&self, name: &str, value: &Value) {
        let errors = self.errors(name, value);
        assert!(
            errors.is_empty(),
            "{name} violates openapi.json: {errors:#?}\nbody: {value}"
        );
    }

    /// Every violation of `#/components/schemas/{name}` by `value`.
    pub fn errors(&self, name: &str, value: &Value) -> Vec<String> {
        assert!(
            self.doc["components"]["schemas"].get(name).is_some(),
            "no schema {name}"
        );
        // The whole document is the root, so `#/components/...` references resolve in place.
        let mut root = self.doc.clone();
        root["$ref"] = Value::String(format!("#/components/schemas/{name}"));
        root["$schema"] = Value::String("https://json-schema.org/draft/2020-12/schema".into());
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("schema {name} compiles: {e}"));
        validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// The schema name of the 200 response of `GET path`.
    pub fn schema_of(&self, path: &str) -> String {
        let r = self.doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("no 200 schema for {path}"));
        r.rsplit('/').next().unwrap_or(r).to_string()
    }
}

/// A recording in the shared CSI data set (read at test time, never copied into the repo).
pub fn csi_data(relative: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi"
    ));
    let path = root.join(relative);
    assert!(
        path.is_file(),
        "CSI test data not found at {}: the repository must sit beside `shared/`",
        path.display()
    );
    path
}

/// The built binary with a private data directory and an empty config file in a fresh temp
/// directory, and no inherited alert settings: a test never reads the user's configuration or
/// writes into their data directory.
#[allow(dead_code)]
pub fn agent_command(bin: &str) -> std::process::Command {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "local-agent-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let config = dir.join("config.toml");
    std::fs::write(&config, "# empty: everything comes from the environment\n").expect("config");
    let mut cmd = std::process::Command::new(bin);
    for var in ["SERVICE_ALERT_WEBHOOK", "SERVICE_ALERT_CA"] {
        cmd.env_remove(var);
    }
    cmd.env("SERVICE_DATA_DIR", dir.join("data"))
        .env("SERVICE_CONFIG", config);
    cmd
}

/// A fresh, unique data directory for one engine (its `routine.db` lives there).
pub fn temp_data_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "local-agent-test-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp data dir");
    dir
}
