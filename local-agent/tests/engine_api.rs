//! The engine over real loopback HTTP: every endpoint against openapi.json, the refusals, and the
//! listener's resilience to bad requests.

mod engine_support;

use std::time::Duration;

use engine_support::{
    Contract, get, raw, raw_bytes, raw_bytes_within, start_simulated, start_simulated_with,
    wait_for,
};
use local_agent::engine::server::Limits;

const ENDPOINTS: [&str; 5] = ["/health", "/frame", "/anomaly", "/fall", "/baseline"];

/// Asserts the error shape and the headers every engine response carries.
fn assert_error(contract: &Contract, reply: &engine_support::Reply, status: u16, code: &str) {
    assert_eq!(
        reply.status,
        status,
        "body: {:?}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let body = reply.json();
    contract.check("Error", &body);
    assert_eq!(body["error"], code);
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
}

#[test]
fn the_contract_validator_rejects_bad_bodies() {
    let contract = Contract::load();
    let bad = serde_json::json!({"ok": 1, "source": "mars"});
    assert!(contract.errors("Health", &bad).len() >= 2);
    // Absent estimates must be present as null, never omitted.
    let mut frame = serde_json::json!({
        "ts": "2026-11-22T08:00:00.000Z", "tick": 1, "present": false, "motion": 0.0,
        "live": false, "source": "simulator", "csi_connected": false, "csi_frames": 0,
        "range_peak_m": null, "range_strength": null, "pose_ready": false,
        "breathing_bpm": null, "breathing_strength": null, "heart_bpm": null,
        "heart_strength": null
    });
    assert!(contract.errors("Frame", &frame).is_empty());
    if let Some(obj) = frame.as_object_mut() {
        obj.remove("heart_bpm");
    }
    assert!(!contract.errors("Frame", &frame).is_empty());
    frame["heart_bpm"] = serde_json::json!(null);
    frame["ts"] = serde_json::json!("yesterday");
    assert!(!contract.errors("Frame", &frame).is_empty());
}

#[tokio::test]
async fn every_endpoint_matches_the_contract() {
    let contract = Contract::load();
    let engine = start_simulated(20.0).await;
    let addr = engine.local_addr();
    assert!(addr.ip().is_loopback());

    // Served from the first instant, before any frame.
    for path in ENDPOINTS {
        let reply = get(addr, path).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.header("cache-control"), Some("no-store"));
        contract.check(&contract.schema_of(path), &reply.json());
    }

    // Once the simulator has delivered frames.
    let frame = wait_for("simulated frames", Duration::from_secs(20), || async {
        let f = get(addr, "/frame").await.json();
        (f["csi_frames"].as_u64().unwrap_or(0) > 0).then_some(f)
    })
    .await;
    contract.check("Frame", &frame);
    assert_eq!(frame["live"], false);
    assert_eq!(frame["source"], "simulator");
    assert_eq!(frame["csi_connected"], false);
    assert_eq!(frame["pose_ready"], false);

    let health = wait_for("a measured rate", Duration::from_secs(20), || async {
        let h = get(addr, "/health").await.json();
        (h["rate_hz"].as_f64().unwrap_or(0.0) > 0.0).then_some(h)
    })
    .await;
    contract.check("Health", &health);
    assert_eq!(health["ok"], true);
    assert_eq!(health["source"], "simulator");
    assert_eq!(health["fleet"]["nodes_online"], 0);
    assert_eq!(health["predict"]["ready"], false);

    let anomaly = get(addr, "/anomaly").await.json();
    assert_eq!(anomaly["status"], "learning_baseline");
    assert_eq!(anomaly["nights_observed"], 0);
    let fall = get(addr, "/fall").await.json();
    assert_eq!(fall["active"], false);
    assert!(fall["seconds_since_motion"].is_null());
    let baseline = get(addr, "/baseline").await.json();
    assert_eq!(baseline["ready"], false);
    for path in ENDPOINTS {
        let reply = get(addr, path).await;
        contract.check(&contract.schema_of(path), &reply.json());
    }
    engine.shutdown().await;
}

#[tokio::test]
async fn refusals_use_the_error_shape_and_the_server_keeps_serving() {
    let contract = Contract::load();
    let engine = start_simulated(1.0).await;
    let addr = engine.local_addr();
    let port = addr.port();

    let origin = raw(
        addr,
        &format!("GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example"),
    )
    .await
    .expect("reply");
    assert_error(&contract, &origin, 403, "forbidden");

    let null_origin = raw(
        addr,
        &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: null"),
    )
    .await
    .expect("reply");
    assert_error(&contract, &null_origin, 403, "forbidden");

    let referer = raw(
        addr,
        &format!(
            "GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nReferer: http://evil.example/page"
        ),
    )
    .await
    .expect("reply");
    assert_error(&contract, &referer, 403, "forbidden");

    let evil_host = raw(
        addr,
        &format!("GET /frame HTTP/1.1\r\nHost: evil.example:{port}"),
    )
    .await
    .expect("reply");
    assert_error(&contract, &evil_host, 403, "forbidden");

    let wrong_port = raw(
        addr,
        &format!("GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{}", port ^ 1),
    )
    .await
    .expect("reply");
    assert_error(&contract, &wrong_port, 403, "forbidden");

    let no_port = raw(addr, "GET /frame HTTP/1.1\r\nHost: localhost")
        .await
        .expect("reply");
    assert_error(&contract, &no_port, 403, "forbidden");

    let no_host = raw(addr, "GET /frame HTTP/1.0").await.expect("reply");
    assert_error(&contract, &no_host, 403, "forbidden");

    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        let ok = raw(addr, &format!("GET /frame HTTP/1.1\r\nHost: {host}"))
            .await
            .expect("reply");
        assert_eq!(ok.status, 200, "Host {host}");
        contract.check("Frame", &ok.json());
    }

    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let reply = raw(
            addr,
            &format!("{method} /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0"),
        )
        .await
        .expect("reply");
        assert_error(&contract, &reply, 405, "method_not_allowed");
        assert_eq!(reply.header("allow"), Some("GET"), "{method}");
    }

    // HEAD is refused like any non-GET method: the spec says GET only. No body comes back.
    let head = raw(
        addr,
        &format!("HEAD /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
    )
    .await
    .expect("reply");
    assert_eq!(head.status, 405);
    assert_eq!(head.header("allow"), Some("GET"));
    assert!(head.body.is_empty());

    let unknown = get(addr, "/nope").await;
    assert_error(&contract, &unknown, 404, "not_found");
    let root = get(addr, "/").await;
    assert_error(&contract, &root, 404, "not_found");

    // A GET with a body is refused without reading it.
    let with_body = raw_bytes(
        addr,
        format!(
            "GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        )
        .as_bytes(),
    )
    .await
    .expect("reply");
    assert_error(&contract, &with_body, 413, "payload_too_large");

    // The guard runs before routing: a refused caller cannot probe paths.
    let probe = raw(addr, "GET /nope HTTP/1.1\r\nHost: evil.example")
        .await
        .expect("reply");
    assert_error(&contract, &probe, 403, "forbidden");

    // A query string does not change the route.
    let query = get(addr, "/health?x=1").await;
    assert_eq!(query.status, 200);

    let still = get(addr, "/health").await;
    assert_eq!(still.status, 200);
    contract.check("Health", &still.json());
    engine.shutdown().await;
}

#[tokio::test]
async fn oversized_and_malformed_requests_do_not_stop_the_server() {
    let limits = Limits {
        header_read_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let engine = start_simulated_with(1.0, limits).await;
    let addr = engine.local_addr();
    let port = addr.port();

    let huge = "a".repeat(64 * 1024);
    let oversized = raw(
        addr,
        &format!("GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: {huge}"),
    )
    .await;
    match oversized {
        // hyper answers 431 before any handler runs.
        Ok(reply) => assert_eq!(reply.status, 431),
        // Or the connection is reset while the client is still writing; either way it is refused.
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            ),
            "{e}"
        ),
    }

    let many: String = (0..200).map(|i| format!("\r\nX-H{i}: v")).collect();
    let too_many = raw(
        addr,
        &format!("GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{port}{many}"),
    )
    .await;
    if let Ok(reply) = too_many {
        assert!(reply.status >= 400, "status {}", reply.status);
    }

    for garbage in [
        &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n"[..],
        &b"GET /frame HTTP/9.9\r\n\r\n"[..],
        &b"GET\r\n\r\n"[..],
        &b"\r\n\r\n"[..],
    ] {
        // Whatever comes back (an error status or a closed connection), it is not a crash.
        let _ = raw_bytes_within(addr, garbage, Duration::from_secs(5)).await;
    }

    // A client that sends half a request head is cut off by the header read timeout, and does
    // not block others meanwhile.
    let mut slow = tokio::net::TcpStream::connect(addr).await.expect("connect");
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        slow.write_all(b"GET /frame HTTP/1.1\r\n")
            .await
            .expect("write");
        assert_eq!(get(addr, "/health").await.status, 200);
        let mut rest = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest)).await;
        assert!(
            closed.is_ok(),
            "slow client still connected after the header timeout"
        );
    }

    let reply = get(addr, "/health").await;
    assert_eq!(reply.status, 200);
    engine.shutdown().await;
}

#[tokio::test]
async fn keep_alive_serves_many_requests_on_one_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let engine = start_simulated(1.0).await;
    let addr = engine.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET /frame HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        addr.port()
    );
    let pipelined = req.repeat(3);
    stream.write_all(pipelined.as_bytes()).await.expect("write");
    let mut seen = Vec::new();
    let mut buf = [0_u8; 4096];
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if text.matches("HTTP/1.1 200 OK").count() == 3 && text.ends_with('}') {
            break text;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let n = tokio::time::timeout(left, stream.read(&mut buf))
            .await
            .expect("three responses in time")
            .expect("read");
        assert!(n > 0, "connection closed early: {text}");
        seen.extend_from_slice(&buf[..n]);
    };
    assert_eq!(text.matches("\"source\":\"simulator\"").count(), 3);
    drop(stream);
    engine.shutdown().await;
}

#[tokio::test]
async fn idle_clients_holding_every_connection_slot_are_shed() {
    let limits = Limits {
        max_connections: 2,
        header_read_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let engine = start_simulated_with(1.0, limits).await;
    let addr = engine.local_addr();
    // Two clients take both slots and send nothing.
    let idle_a = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let idle_b = tokio::net::TcpStream::connect(addr).await.expect("connect");
    // A third client waits in the backlog until the header timeout frees a slot, then is served.
    let reply = tokio::time::timeout(Duration::from_secs(10), get(addr, "/health"))
        .await
        .expect("served once an idle client is shed");
    assert_eq!(reply.status, 200);
    drop((idle_a, idle_b));
    engine.shutdown().await;
}
