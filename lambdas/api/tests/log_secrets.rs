//! No secret a client uses shows up in the platform's log. `api --local` runs a full flow at
//! debug level (OAuth connect through the consent page against the node OAuth peer, a pasted API
//! key, a tool run with the provider's token, the MCP URL key form, a webhook trigger and its
//! ingress), and afterwards its whole stderr is searched for every secret the flow used: the API
//! key, the link ids, the OAuth state and code, the access token, the pasted key, the hook token,
//! the trigger's signing secret, the OAuth client secret and the local credentials key.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const PUBLIC: &str = "https://platform.example";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Resp {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn location(&self) -> String {
        self.headers
            .get("location")
            .unwrap_or_else(|| panic!("no Location on {}: {}", self.status, self.body))
            .clone()
    }
}

/// One HTTP/1.1 request over a fresh connection (`Connection: close`), redirects not followed.
fn http(addr: &str, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Resp {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `host:port` and path-with-query of a URL on the local server or the peer; the platform's
/// public origin stands for the local server.
fn target(url: &str, local: &str) -> (String, String) {
    let url = url.replace(PUBLIC, &format!("http://{local}"));
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    (host.to_owned(), path.to_owned())
}

fn query(url: &str, name: &str) -> String {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    q.split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

fn spawn_peer(root: &Path) -> (Killed, String) {
    let mut child = Command::new("node")
        .arg(root.join("lambdas/platform/tests/support/oauth_peer.mjs"))
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs the OAuth peer (npm ci at the repository root)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Value = serde_json::from_str(line.trim()).expect("peer prints JSON");
    let url = v["url"].as_str().unwrap().to_owned();
    (Killed(child), url)
}

fn api(table: &str) -> Command {
    std::env::var("DDB_ENDPOINT")
        .expect("DDB_ENDPOINT must point at DynamoDB Local (the test command starts it)");
    let mut c = Command::new(env!("CARGO_BIN_EXE_api"));
    c.env("TABLE_NAME", table).env("RUST_LOG", "debug");
    c
}

fn admin(table: &str, args: &[&str]) -> Value {
    let out = api(table).arg("admin").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

// Longer than 80 lines on purpose: one flow whose every step adds a secret to look for.
#[test]
fn a_full_flow_leaves_no_secret_in_the_log() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let table = format!("logs-{}-{nanos}", std::process::id());
    let dir = std::env::temp_dir().join(&table);
    std::fs::create_dir_all(&dir).unwrap();
    let (_peer, peer_url) = spawn_peer(&root);
    let client_secret = format!("client-secret-{nanos}");
    let oauth_apps: PathBuf = dir.join("oauth_apps.json");
    std::fs::write(
        &oauth_apps,
        json!({"acme": {
            "client_id": "acme-client",
            "client_secret": client_secret,
            "authorize_url": format!("{peer_url}/authorize"),
            "token_url": format!("{peer_url}/token"),
            "scopes": ["notes:read"],
            "base_url": format!("{peer_url}/api"),
        }})
        .to_string(),
    )
    .unwrap();
    // 32 bytes, base64: the local credentials key.
    let creds_key = "c2VjcmV0LWxvY2FsLWtleS1mb3ItdGhlLWxvZy10ZXM=";

    admin(&table, &["create-table"]);
    let account = admin(&table, &["create-account", "--email", "logs@example.com"]);
    let key = account["api_key"].as_str().unwrap().to_owned();
    let log_path = dir.join("api.stderr");
    let mut child = api(&table)
        .args(["--local", "127.0.0.1:0"])
        .env(
            "CATALOG_PATH",
            root.join("lambdas/platform/tests/fixtures/run_catalog.json"),
        )
        .env("PUBLIC_BASE_URL", PUBLIC)
        .env("CREDENTIALS_KEY", creds_key)
        .env("OAUTH_APPS", &oauth_apps)
        .env("PLATFORM_OUTBOUND_ALLOW", "127.0.0.1")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Killed(child);
    let local = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("first line {line:?}"))
        .to_owned();
    let bearer = format!("Bearer {key}");
    let auth = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let mut secrets: Vec<(&str, String)> = vec![
        ("API key", key.clone()),
        ("OAuth client secret", client_secret.clone()),
        ("credentials key", creds_key.to_owned()),
    ];

    // OAuth: link → consent page → its POST → provider → callback.
    let r = http(&local, "POST", "/api/v1/apps/acme/connect", &auth, "{}");
    assert_eq!(r.status, 201, "{}", r.body);
    let link = r.json()["url"].as_str().unwrap().to_owned();
    secrets.push(("OAuth link id", r.json()["id"].as_str().unwrap().to_owned()));
    let (_, link_path) = target(&link, &local);
    assert_eq!(http(&local, "GET", &link_path, &[], "").status, 200);
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let go = http(&local, "POST", &link_path, &form, "");
    assert_eq!(go.status, 303, "{}", go.body);
    let to_provider = go.location();
    secrets.push(("OAuth state", query(&to_provider, "state")));
    let (peer_host, peer_path) = target(&to_provider, &local);
    let back = http(&peer_host, "GET", &peer_path, &[], "").location();
    secrets.push(("OAuth code", query(&back, "code")));
    let (_, callback) = target(&back, &local);
    let done = http(&local, "GET", &callback, &[], "");
    assert_eq!(done.status, 200, "{}", done.body);

    // A run with the provider's token; the peer's app API echoes the Authorization it got.
    let r = http(
        &local,
        "POST",
        "/api/v1/tools/acme.get_me/run",
        &auth,
        r#"{"arguments":{}}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let token = r.json()["data"]["authorization"]
        .as_str()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap()
        .to_owned();
    secrets.push(("access token", token));

    // A pasted API key on the form of a key link.
    let r = http(&local, "POST", "/api/v1/apps/keyed/connect", &auth, "{}");
    assert_eq!(r.status, 201, "{}", r.body);
    secrets.push(("key link id", r.json()["id"].as_str().unwrap().to_owned()));
    let (_, key_link) = target(r.json()["url"].as_str().unwrap(), &local);
    let pasted = format!("pasted-app-key-{nanos}");
    let r = http(
        &local,
        "POST",
        &key_link,
        &form,
        &format!("api_key={pasted}"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    secrets.push(("pasted app key", pasted));
    // Replayed and unknown links, and a forged callback, are logged too.
    assert_eq!(
        http(&local, "GET", &key_link, &[], "").status,
        404,
        "used link"
    );
    let forged = format!("/oauth/callback?state=forged-state-{nanos}&code=forged-code-{nanos}");
    assert_eq!(http(&local, "GET", &forged, &[], "").status, 400);
    secrets.push(("forged state", format!("forged-state-{nanos}")));
    secrets.push(("forged code", format!("forged-code-{nanos}")));

    // The MCP URL form.
    let mcp = format!("/mcp/k/{key}");
    let r = http(
        &local,
        "POST",
        &mcp,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // A webhook trigger: its signing secret and the ingress token.
    let r = http(
        &local,
        "POST",
        "/api/v1/triggers",
        &auth,
        &json!({"app": "keyed", "event": "webhook", "webhook_url": "https://example.com/hook"})
            .to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    secrets.push((
        "trigger secret",
        r.json()["secret"].as_str().unwrap().to_owned(),
    ));
    let hook_url = r.json()["hook_url"].as_str().unwrap().to_owned();
    secrets.push((
        "hook token",
        hook_url.rsplit('/').next().unwrap().to_owned(),
    ));
    let (_, hook_path) = target(&hook_url, &local);
    let json_ct = [("Content-Type", "application/json")];
    assert_eq!(http(&local, "POST", &hook_path, &json_ct, "{}").status, 202);

    drop(server);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("/connect/[redacted]") && log.contains("\"request\""),
        "the flow is in the log: {log}"
    );
    for (what, secret) in &secrets {
        assert!(secret.len() >= 16, "{what} {secret:?} is a real secret");
        assert!(
            !log.contains(secret.as_str()),
            "the log shows the {what}: {}",
            log.lines()
                .find(|l| l.contains(secret.as_str()))
                .unwrap_or("")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
