//! The hub's HTTP surface on loopback: every answer (success and error) against
//! `hub-openapi.json`, the `hours` rule, the away-mode control route, and the CLI wiring.

mod engine_support;
mod hub_support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use engine_support::{Contract, get, raw, raw_bytes, wait_for};
use hub_support::{BIN, Rig, RigOptions, data};
use local_agent::alerts::{AlertKind, AlertSink, NewAlert};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_answer_per_contract_and_refuse_bad_hours() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let addr = rig.http();
    let health = rig.json("/health").await;
    contract.check("HubHealth", &health);
    assert_eq!(health["nodes_total"], 0);
    contract.check("Nodes", &rig.json("/nodes").await);

    rig.alerts
        .raise(NewAlert::new(AlertKind::Test, "first", "one"));
    rig.alerts
        .raise(NewAlert::new(AlertKind::Fall, "second", "two"));
    for path in ["/alerts", "/alerts?hours=1", "/alerts?hours=720"] {
        let body = rig.json(path).await;
        contract.check("Alerts", &body);
        let kinds: Vec<_> = body["alerts"]
            .as_array()
            .expect("alerts")
            .iter()
            .map(|a| a["kind"].clone())
            .collect();
        assert_eq!(kinds, ["fall", "test"], "newest first ({path})");
    }
    assert_eq!(rig.json("/alerts").await["hours"], 24);

    for bad in [
        "0",
        "721",
        "-1",
        "abc",
        "24.5",
        "",
        "1e2",
        "%31",
        "+5",
        "0024",
        "99999999999",
    ] {
        let reply = get(addr, &format!("/alerts?hours={bad}")).await;
        assert_eq!(reply.status, 400, "hours={bad}");
        let body = reply.json();
        contract.check("Error", &body);
        assert_eq!(body["error"], "bad_request");
    }
    for bad in ["/alerts?hours=1&hours=2", "/alerts?hour=3", "/alerts?hours"] {
        let reply = get(addr, bad).await;
        assert_eq!(reply.status, 400, "{bad}");
        contract.check("Error", &reply.json());
    }

    let reply = get(addr, "/nope").await;
    assert_eq!(reply.status, 404);
    contract.check("Error", &reply.json());
    let reply = raw(
        addr,
        &format!(
            "POST /nodes HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0",
            addr.port()
        ),
    )
    .await
    .expect("reply");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("GET"));
    contract.check("Error", &reply.json());
    let with_body = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        addr.port()
    );
    let reply = raw_bytes(addr, with_body.as_bytes()).await.expect("reply");
    assert_eq!(reply.status, 413);
    contract.check("Error", &reply.json());
    // /ingest without a WebSocket handshake.
    let reply = get(addr, "/ingest").await;
    assert_eq!(reply.status, 400);
    contract.check("Error", &reply.json());
    // Oversized request head: hyper's limit answers 431 and the hub keeps serving.
    let huge = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Pad: {}\r\nConnection: close\r\n\r\n",
        addr.port(),
        "a".repeat(64 * 1024)
    );
    let reply = raw_bytes(addr, huge.as_bytes()).await.expect("reply");
    assert_eq!(reply.status, 431);
    assert_eq!(get(addr, "/health").await.status, 200);
    rig.stop().await;
}

async fn post_away(addr: SocketAddr, extra: &str, body: &str) -> engine_support::Reply {
    raw_bytes(
        addr,
        format!(
            "POST /control/away HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            addr.port(),
            body.len()
        )
        .as_bytes(),
    )
    .await
    .expect("reply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn away_mode_is_switched_by_local_scripts_only() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let addr = rig.http();
    let json = "Content-Type: application/json\r\n";
    let reply = post_away(addr, json, r#"{"on": true}"#).await;
    assert_eq!(reply.status, 200);
    contract.check("Away", &reply.json());
    assert_eq!(reply.json()["away"], true);
    assert!(rig.away.is_on());
    assert_eq!(rig.json("/control/away").await["away"], true);
    let reply = post_away(addr, json, r#"{"on": false}"#).await;
    assert_eq!(reply.json()["away"], false);
    assert!(!rig.away.is_on());

    for (extra, body, status) in [
        (json, r#"{"on": "yes"}"#, 400),
        (json, r#"{"on": true, "x": 1}"#, 400),
        (json, "not json", 400),
        ("Content-Type: text/plain\r\n", r#"{"on": true}"#, 400),
        ("", r#"{"on": true}"#, 400),
        // A web page in the user's browser: refused before the body is read.
        (
            "Content-Type: application/json\r\nOrigin: http://evil.example\r\n",
            r#"{"on": true}"#,
            403,
        ),
    ] {
        let reply = post_away(addr, extra, body).await;
        assert_eq!(reply.status, status, "{extra:?} {body:?}");
        contract.check("Error", &reply.json());
    }
    let big = format!(r#"{{"on": true, "pad": "{}"}}"#, "a".repeat(2000));
    let reply = post_away(addr, json, &big).await;
    assert_eq!(reply.status, 413);
    assert!(
        !rig.away.is_on(),
        "no refused request switched away mode on"
    );
    // DNS rebinding: a page served from another name that resolves to 127.0.0.1.
    let reply = raw(
        addr,
        &format!(
            "GET /control/away HTTP/1.1\r\nHost: evil.example:{}",
            addr.port()
        ),
    )
    .await
    .expect("reply");
    assert_eq!(reply.status, 403);
    rig.stop().await;
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_source_hub_feeds_the_engine_switches_away_by_cli_and_logs_node_offline() {
    let engine_port = free_port();
    let hub_port = free_port();
    let udp_port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("free udp port");
    let mut child = engine_support::agent_command(BIN)
        .args(["run", "--source", "hub"])
        .args(["--hub-port", &hub_port.to_string()])
        .env("SERVICE_ENGINE_PORT", engine_port.to_string())
        .env("SERVICE_CSI_PORT", udp_port.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let engine = SocketAddr::from(([127, 0, 0, 1], engine_port));
    let hub = SocketAddr::from(([127, 0, 0, 1], hub_port));
    wait_for("the hub answering", Duration::from_secs(30), || async {
        raw(
            hub,
            &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{hub_port}"),
        )
        .await
        .ok()
        .filter(|r| r.status == 200)
    })
    .await;
    let out = tokio::task::block_in_place(|| {
        engine_support::agent_command(BIN)
            .args(["node-emulator", "--file"])
            .arg(data("esp32-csi-tool/example_csi.csv"))
            .args([
                "--to",
                &format!("udp://127.0.0.1:{udp_port}"),
                "--speed",
                "4",
            ])
            .output()
            .expect("emulator runs")
    });
    assert!(out.status.success());
    let frame = wait_for(
        "the engine fed by the hub",
        Duration::from_secs(30),
        || async {
            let r = get(engine, "/frame").await;
            let f = r.json();
            (f["csi_frames"] == 13).then_some(f)
        },
    )
    .await;
    assert_eq!(frame["source"], "hub");
    assert_eq!(frame["live"], true);
    assert_eq!(frame["csi_connected"], true);
    // The `away` CLI switches the running agent through the hub's control route.
    let away = tokio::task::block_in_place(|| {
        engine_support::agent_command(BIN)
            .args(["away", "on", "--port", &hub_port.to_string()])
            .output()
            .expect("away runs")
    });
    assert!(away.status.success(), "{away:?}");
    assert!(String::from_utf8_lossy(&away.stdout).contains("away mode is on"));
    let reply = get(hub, "/control/away").await;
    assert_eq!(reply.json()["away"], true);
    // The node stopped sending: after the 10 s offline timeout its alert lands in the agent's
    // durable outbox, and the hub lists it (no address configured, so delivery is `disabled`).
    let alerts = wait_for(
        "a node_offline alert in /alerts",
        Duration::from_secs(40),
        || async {
            let r = get(hub, "/alerts?hours=1").await;
            let list = r.json()["alerts"].as_array().cloned().unwrap_or_default();
            (!list.is_empty()).then_some(list)
        },
    )
    .await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["kind"], "node_offline");
    assert_eq!(alerts[0]["delivery"]["state"], "disabled");
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_websockets_are_capped_and_a_freed_slot_is_reused() {
    use tokio_tungstenite::tungstenite::Error as WsError;
    let rig = Rig::start(RigOptions {
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let mut open = Vec::new();
    for _ in 0..local_agent::hub::ingest_ws::MAX_CONNECTIONS {
        let (ws, _) = tokio_tungstenite::connect_async(rig.ws_url())
            .await
            .expect("within the cap");
        open.push(ws);
    }
    match tokio_tungstenite::connect_async(rig.ws_url()).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!(
            "the 65th WebSocket was not refused: {:?}",
            other.map(|_| ())
        ),
    }
    let mut first = open.remove(0);
    first.close(None).await.expect("close");
    drop(first);
    wait_for("a freed slot", Duration::from_secs(10), || async {
        tokio_tungstenite::connect_async(rig.ws_url()).await.ok()
    })
    .await;
    drop(open);
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_hub_port_stops_source_hub_but_not_the_simulator() {
    let taken = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
    let hub_port = taken.local_addr().expect("addr").port();
    let out = tokio::task::block_in_place(|| {
        engine_support::agent_command(BIN)
            .args(["run", "--source", "hub", "--port", "0", "--csi-port", "0"])
            .args(["--hub-port", &hub_port.to_string()])
            .env("RUST_LOG", "warn")
            .output()
            .expect("runs")
    });
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already in use") && stderr.contains(&hub_port.to_string()),
        "{stderr}"
    );

    let engine_port = free_port();
    let mut child = engine_support::agent_command(BIN)
        .args(["run", "--port", &engine_port.to_string(), "--csi-port", "0"])
        .args(["--hub-port", &hub_port.to_string()])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let engine = SocketAddr::from(([127, 0, 0, 1], engine_port));
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("the agent exited: {status}");
        }
        if let Ok(reply) = raw(
            engine,
            &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{engine_port}"),
        )
        .await
            && reply.status == 200
        {
            break reply;
        }
        assert!(Instant::now() < deadline, "the engine never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(health.json()["source"], "simulator");
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(taken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_pages_on_this_computer_cannot_read_the_hub() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let addr = rig.http();
    let port = addr.port();
    for head in [
        // DNS rebinding: a page's own name resolving to 127.0.0.1.
        format!("GET /nodes HTTP/1.1\r\nHost: evil.example:{port}"),
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example"),
        format!("GET /alerts HTTP/1.1\r\nHost: localhost:{port}\r\nReferer: http://evil.example/"),
    ] {
        let reply = raw(addr, &head).await.expect("reply");
        assert_eq!(reply.status, 403, "{head}");
        let body = reply.json();
        contract.check("Error", &body);
        assert_eq!(body["error"], "forbidden");
    }
    for host in ["127.0.0.1", "localhost"] {
        let reply = raw(addr, &format!("GET /nodes HTTP/1.1\r\nHost: {host}:{port}"))
            .await
            .expect("reply");
        assert_eq!(reply.status, 200, "{host}");
    }
    rig.stop().await;
}
