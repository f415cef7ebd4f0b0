//! The live view over real loopback HTTP against the built binary: the token and its cookie,
//! what a visitor without them gets, the browser guards, the away switch, the event stream, the
//! runtime file `open` reads, and the engine's refusal rules left as they were.

mod engine_support;
mod view_support;

use std::time::Duration;

use engine_support::{raw, raw_bytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use view_support::Agent;

fn start() -> Agent {
    Agent::start(&["--speed", "4"], &[])
}

fn head(agent: &Agent, method: &str, path: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}{extra}",
        agent.view.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_address_sets_a_strict_cookie_and_stays_valid() {
    let agent = start();
    assert_eq!(agent.view.ip().to_string(), "127.0.0.1");
    assert!(
        agent
            .url
            .starts_with(&format!("http://127.0.0.1:{}/?token=", agent.view.port()))
    );
    assert!(agent.token.len() >= 43, "a 256-bit token");
    let path = format!("/?token={}", agent.token);
    for _ in 0..2 {
        // The same address works again (another browser, a reload).
        let r = raw(agent.view, &head(&agent, "GET", &path, ""))
            .await
            .unwrap();
        assert_eq!(r.status, 303);
        assert_eq!(r.header("location"), Some("/"));
        let cookie = r.header("set-cookie").expect("a cookie");
        assert_eq!(
            cookie,
            format!(
                "presence_view_{}={}; HttpOnly; SameSite=Strict; Path=/",
                agent.view.port(),
                agent.token
            )
        );
    }
    let page = agent.view_get("/").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = page.header("content-security-policy").expect("CSP");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    let state = agent.view_get("/api/state").await;
    assert_eq!(state.status, 200);
    let json = state.json();
    assert_eq!(json["frame"]["source"], "simulator");
    assert!(json["breathing"]["reason"].as_str().is_some());
    agent.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_gets_nothing() {
    let agent = start();
    let wrong = format!("/?token={}x", agent.token);
    let cases = [
        head(&agent, "GET", "/", ""),
        head(&agent, "GET", &wrong, ""),
        head(&agent, "GET", "/?token=", ""),
        head(&agent, "GET", "/api/state", ""),
        head(&agent, "GET", "/api/events", ""),
        head(&agent, "GET", "/api/doctor", ""),
        head(&agent, "GET", "/app.js", ""),
        head(
            &agent,
            "GET",
            "/api/state",
            &format!(
                "\r\nCookie: presence_view_{}={}x",
                agent.view.port(),
                agent.token
            ),
        ),
        // The right token under another port's cookie name (another agent's) is not a session.
        head(
            &agent,
            "GET",
            "/api/state",
            &format!("\r\nCookie: presence_view_1={}", agent.token),
        ),
        head(
            &agent,
            "GET",
            "/api/state",
            &format!("\r\nAuthorization: Bearer {}x", agent.token),
        ),
    ];
    for request in cases {
        let r = raw(agent.view, &request).await.unwrap();
        assert_eq!(r.status, 401, "{request}");
        assert!(r.header("set-cookie").is_none(), "{request}");
        let body = String::from_utf8_lossy(&r.body);
        for leak in [
            "\"present\"",
            "\"motion\"",
            "\"breathing\"",
            "\"nodes\"",
            "\"frame\"",
        ] {
            assert!(!body.contains(leak), "{request} leaked {leak}: {body}");
        }
    }
    let post = raw_bytes(
        agent.view,
        format!(
            "POST /api/away HTTP/1.1\r\nHost: 127.0.0.1:{0}\r\nOrigin: http://127.0.0.1:{0}\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{{\"on\":true}}",
            agent.view.port()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(post.status, 401);
    let away = agent.cli(&[
        "away",
        "status",
        "--port",
        &agent.hub.unwrap().port().to_string(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&away.stdout).trim(),
        "away mode is off"
    );
    agent.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_and_other_hosts_are_refused_even_with_the_cookie() {
    let agent = start();
    let port = agent.view.port();
    for host in [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{}", port + 1),
    ] {
        let r = raw(
            agent.view,
            &format!(
                "GET /api/state HTTP/1.1\r\nHost: {host}\r\nCookie: {}",
                agent.cookie()
            ),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 403, "{host}");
        assert!(!String::from_utf8_lossy(&r.body).contains("frame"));
    }
    // A page served from another port of this computer shares the cookie's site, not its origin.
    for site in ["same-site", "cross-site"] {
        let r = raw(
            agent.view,
            &format!(
                "GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {}\r\nSec-Fetch-Site: {site}",
                agent.cookie()
            ),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 403, "{site}");
    }
    // localhost is this listener too.
    let r = raw(
        agent.view,
        &format!(
            "GET /api/state HTTP/1.1\r\nHost: localhost:{port}\r\nCookie: {}",
            agent.cookie()
        ),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    // Bound to 127.0.0.1 only: another loopback address does not reach it.
    let other = std::net::SocketAddr::from(([127, 0, 0, 2], port));
    assert!(tokio::net::TcpStream::connect(other).await.is_err());
    agent.stop();
}

async fn post_away(agent: &Agent, extra_headers: &str, body: &str) -> engine_support::Reply {
    raw_bytes(
        agent.view,
        format!(
            "POST /api/away HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {}\r\nContent-Type: application/json\r\nContent-Length: {}{extra_headers}\r\nConnection: close\r\n\r\n{body}",
            agent.view.port(),
            agent.cookie(),
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_away_switch_needs_the_cookie_and_the_same_origin() {
    let agent = start();
    let port = agent.view.port();
    let hub_port = agent.hub.unwrap().port().to_string();
    let status = |a: &Agent| {
        String::from_utf8_lossy(&a.cli(&["away", "status", "--port", &hub_port]).stdout)
            .trim()
            .to_string()
    };
    for origin in [
        String::new(),
        "\r\nOrigin: https://evil.example".to_string(),
        format!("\r\nOrigin: http://127.0.0.1:{}", port + 1),
        "\r\nOrigin: null".to_string(),
        format!("\r\nOrigin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: cross-site"),
    ] {
        let r = post_away(&agent, &origin, r#"{"on":true}"#).await;
        assert_eq!(r.status, 403, "{origin:?}");
        assert_eq!(status(&agent), "away mode is off");
    }
    let same = format!("\r\nOrigin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin");
    let r = post_away(&agent, &same, r#"{"on":"yes"}"#).await;
    assert_eq!(r.status, 400);
    let r = post_away(&agent, &same, r#"{"on":true}"#).await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["away"], true);
    assert_eq!(status(&agent), "away mode is on");
    assert_eq!(
        agent.view_get("/api/state").await.json()["away"]["on"],
        true
    );
    let r = post_away(&agent, &same, r#"{"on":false}"#).await;
    assert_eq!(r.json()["away"], false);
    assert_eq!(status(&agent), "away mode is off");
    let get = raw(
        agent.view,
        &format!(
            "PUT /api/away HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {}",
            agent.cookie()
        ),
    )
    .await
    .unwrap();
    assert_eq!(get.status, 405);
    agent.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stream_updates_that_change_as_the_scene_plays() {
    let agent = start();
    let mut stream = tokio::net::TcpStream::connect(agent.view).await.unwrap();
    stream
        .write_all(
            format!(
                "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {}\r\n\r\n",
                agent.view.port(),
                agent.cookie()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut buf = Vec::new();
    let mut ticks = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while ticks.len() < 4 {
        let mut chunk = [0u8; 65536];
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .expect("updates keep coming")
            .unwrap();
        assert!(n > 0, "the stream ended");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if ticks.is_empty() {
            assert!(text.contains("content-type: text/event-stream"), "{text}");
        }
        ticks = text
            .split("\n\n")
            .filter_map(|e| e.split("data: ").nth(1))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .map(|u| u["state"]["frame"]["tick"].as_u64().unwrap_or(0))
            .collect();
    }
    assert!(
        ticks.windows(2).all(|w| w[1] > w[0]),
        "each update carries newer estimates: {ticks:?}"
    );
    agent.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_name_nothing_outside_this_origin() {
    let agent = start();
    for path in ["/", "/app.js", "/app.css", "/icon.svg"] {
        let r = agent.view_get(path).await;
        assert_eq!(r.status, 200, "{path}");
        let body = String::from_utf8_lossy(&r.body).to_lowercase();
        for external in ["http://", "https://", "//cdn", "@import", "fonts.", "url("] {
            // The SVG's xmlns is a name, not a request.
            if path == "/icon.svg" && external == "http://" {
                continue;
            }
            assert!(!body.contains(external), "{path} references {external}");
        }
    }
    agent.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_still_refuses_pages_and_the_view_does_not_open_it() {
    let agent = start();
    let port = agent.engine.port();
    for extra in [
        format!("\r\nOrigin: http://127.0.0.1:{}", agent.view.port()),
        format!("\r\nReferer: http://127.0.0.1:{}/", agent.view.port()),
        format!("\r\nCookie: {}", agent.cookie()),
    ] {
        let r = raw(
            agent.engine,
            &format!("GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}{extra}"),
        )
        .await
        .unwrap();
        if extra.contains("Cookie") {
            // A cookie is not a browser marker; the engine ignores it as before.
            assert_eq!(r.status, 200);
        } else {
            assert_eq!(r.status, 403, "{extra}");
            assert_eq!(r.json()["error"], "forbidden");
        }
    }
    agent.stop();
}

#[test]
fn open_finds_the_running_agent_and_forgets_it_when_it_stops() {
    let agent = start();
    let printed = agent.cli(&["open", "--print"]);
    assert!(printed.status.success(), "{printed:?}");
    assert_eq!(String::from_utf8_lossy(&printed.stdout).trim(), agent.url);
    let file = agent.data_dir().join("view.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the runtime file is the user's only");
    }
    // A desktop's opener gets the address (a stand-in `xdg-open` records it).
    let bin = agent.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = agent.dir.join("opened.txt");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$1\" > {}\n", record.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = view_support::command(&agent.dir)
        .arg("open")
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !record.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let opened = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(opened.trim(), agent.url);
    let dir = agent.dir.clone();
    agent.stop();
    assert!(!file.exists(), "a clean stop removes the runtime file");
    let out = view_support::command(&dir)
        .args(["open", "--print"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no running agent"));
}
