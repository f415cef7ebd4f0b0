//! The hub's token rule and UDP trust model, with remote callers played by a real LAN peer: a
//! network namespace joined to the host by a veth pair. These tests need root and `ip netns`;
//! without them they fail (never skip).

mod engine_support;
mod hub_support;

use std::time::Duration;

use engine_support::{Contract, get, wait_for};
use hub_support::{BIN, Netns, Rig, RigOptions, data};

fn block<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_callers_need_the_right_token_and_local_callers_are_trusted() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        token: Some("lan-secret-42"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    let base = format!("http://{}:{}", ns.host_ip, rig.hub.local_addr().port());

    let (status, body) = block(|| ns.curl("GET", &format!("{base}/health"), &[]));
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], "unauthorized");
    contract.check("Error", &body);

    let (status, body) = block(|| {
        ns.curl(
            "GET",
            &format!("{base}/nodes"),
            &["X-Service-Token: lan-secret-41"],
        )
    });
    assert_eq!(status, 401, "{body}");
    contract.check("Error", &body);

    // Same length, different last byte, and a prefix: both wrong.
    for wrong in ["lan-secret-4", "lan-secret-42x", ""] {
        let header = format!("X-Service-Token: {wrong}");
        let (status, _) = block(|| ns.curl("GET", &format!("{base}/health"), &[&header]));
        assert_eq!(status, 401, "token {wrong:?}");
    }

    let right = ["X-Service-Token: lan-secret-42"];
    let (status, health) = block(|| ns.curl("GET", &format!("{base}/health"), &right));
    assert_eq!(status, 200, "{health}");
    contract.check("HubHealth", &health);
    assert_eq!(health["token_configured"], true);
    let (status, nodes) = block(|| ns.curl("GET", &format!("{base}/nodes"), &right));
    assert_eq!(status, 200);
    contract.check("Nodes", &nodes);
    let (status, alerts) = block(|| ns.curl("GET", &format!("{base}/alerts?hours=3"), &right));
    assert_eq!(status, 200);
    contract.check("Alerts", &alerts);
    assert_eq!(alerts["hours"], 3);

    // Control is local only, token or not.
    let (status, body) = block(|| ns.curl("GET", &format!("{base}/control/away"), &right));
    assert_eq!(status, 403, "{body}");
    contract.check("Error", &body);
    let post = [
        "X-Service-Token: lan-secret-42",
        "Content-Type: application/json",
    ];
    let out = block(|| {
        ns.exec(
            "curl",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                "POST",
                "-H",
                post[0],
                "-H",
                post[1],
                "-d",
                r#"{"on": true}"#,
                &format!("{base}/control/away"),
            ],
        )
    });
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
    assert!(!rig.away.is_on(), "a remote caller switched away mode");

    // The same hub on loopback, without any token.
    let local = get(rig.http(), "/health").await;
    assert_eq!(local.status, 200);
    contract.check("HubHealth", &local.json());
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_token_every_remote_call_is_refused() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        token: None,
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    let base = format!("http://{}:{}", ns.host_ip, rig.hub.local_addr().port());
    for path in ["/health", "/nodes", "/alerts", "/ingest", "/nope"] {
        for headers in [
            &[][..],
            &["X-Service-Token: anything"][..],
            &["X-Service-Token:"][..],
        ] {
            let (status, body) = block(|| ns.curl("GET", &format!("{base}{path}"), headers));
            assert_eq!(status, 401, "{path} {headers:?}: {body}");
            contract.check("Error", &body);
            assert!(
                body["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("no token is configured")),
                "{body}"
            );
        }
    }
    let local = get(rig.http(), "/health").await;
    assert_eq!(local.status, 200);
    assert_eq!(local.json()["token_configured"], false);
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_udp_needs_a_session_even_from_an_address_that_proved_the_token() {
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    let csv = data("esp32-csi-tool/example_csi.csv");
    let csv = csv.to_str().expect("utf-8 path");
    let udp = format!("udp://{}:{}", ns.host_ip, rig.hub.udp_addr().port());
    let ws = format!("ws://{}:{}/ingest", ns.host_ip, rig.hub.local_addr().port());
    let hub = format!("http://{}:{}", ns.host_ip, rig.hub.local_addr().port());

    // 1. Plain UDP from a LAN address: dropped and counted, no node.
    let out = block(|| {
        ns.exec(
            BIN,
            &["node-emulator", "--file", csv, "--to", &udp, "--speed", "4"],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(
        "13 datagrams counted as unknown_sender",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            (h["ingest"]["unknown_sender"] == 13).then_some(())
        },
    )
    .await;
    assert_eq!(rig.json("/nodes").await["nodes"], serde_json::json!([]));

    // 2. WebSocket without the token: refused and counted.
    let out = block(|| {
        std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.name,
                BIN,
                "node-emulator",
                "--file",
                csv,
                "--to",
                &ws,
            ])
            .env_remove("SERVICE_SENTINEL_TOKEN")
            .output()
            .expect("runs")
    });
    assert!(
        !out.status.success(),
        "a WebSocket without the token was accepted"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
    assert_eq!(rig.json("/health").await["ingest"]["unauthorized"], 1);

    // 3. WebSocket with the token: lines accepted.
    let out = block(|| {
        ns.exec(
            BIN,
            &[
                "node-emulator",
                "--file",
                csv,
                "--to",
                &ws,
                "--token",
                "node-token",
                "--speed",
                "4",
            ],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node = wait_for("the WebSocket node", Duration::from_secs(10), || async {
        rig.node("node-3c:71:bf:6d:2a:78")
            .await
            .filter(|n| n["frames"] == 13)
    })
    .await;
    assert_eq!(node["transport"], "websocket");
    assert_eq!(node["format"], "esp32-csi-tool");
    assert_eq!(node["addr"], ns.ns_ip);

    // 4. The address proved the token, but a datagram's source address proves nothing: plain
    //    UDP from it is still dropped.
    let out = block(|| {
        ns.exec(
            BIN,
            &["node-emulator", "--file", csv, "--to", &udp, "--speed", "4"],
        )
    });
    assert!(out.status.success());
    wait_for("26 unknown_sender", Duration::from_secs(10), || async {
        let h = rig.json("/health").await;
        (h["ingest"]["unknown_sender"] == 26).then_some(())
    })
    .await;
    assert!(rig.node("node-1").await.is_none());

    // 5. With a node session (token → key, every datagram tagged): accepted.
    let out = block(|| {
        ns.exec(
            BIN,
            &[
                "node-emulator",
                "--file",
                csv,
                "--to",
                &udp,
                "--token",
                "node-token",
                "--hub",
                &hub,
                "--speed",
                "4",
            ],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node = wait_for(
        "the UDP node with a session",
        Duration::from_secs(10),
        || async { rig.node("node-1").await.filter(|n| n["frames"] == 13) },
    )
    .await;
    assert_eq!(node["transport"], "udp");
    assert_eq!(node["format"], "adr018");
    assert_eq!(node["addr"], ns.ns_ip);
    let health = rig.json("/health").await;
    assert_eq!(health["ingest"]["unknown_sender"], 26);
    assert_eq!(health["ingest"]["unauthenticated"], 0);
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_needs_the_token_from_another_machine_and_a_valid_body() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    let url = format!(
        "http://{}:{}/ingest/session",
        ns.host_ip,
        rig.hub.local_addr().port()
    );
    let post = |headers: &[&str], body: &str| {
        let mut args = vec![
            "-s",
            "-m",
            "10",
            "-X",
            "POST",
            "-w",
            "\n%{http_code}",
            "-d",
            body,
        ];
        for h in headers {
            args.push("-H");
            args.push(h);
        }
        args.push(&url);
        let out = ns.exec("curl", &args);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
        (
            status.trim().parse::<u16>().unwrap_or(0),
            serde_json::from_str::<serde_json::Value>(body).unwrap_or_default(),
        )
    };
    let json = "Content-Type: application/json";
    let (status, body) = block(|| post(&[json], r#"{"node_id": 1}"#));
    assert_eq!(status, 401, "{body}");
    contract.check("Error", &body);
    let token = "X-Service-Token: node-token";
    for bad in [
        r#"{"node_id": 256}"#,
        r#"{"node_id": -1}"#,
        r#"{"node": 1}"#,
        "[]",
        "x",
    ] {
        let (status, body) = block(|| post(&[json, token], bad));
        assert_eq!(status, 400, "{bad}: {body}");
        contract.check("Error", &body);
    }
    let (status, body) = block(|| post(&[token], r#"{"node_id": 1}"#));
    assert_eq!(status, 400, "without a JSON content type: {body}");
    let (status, session) = block(|| post(&[json, token], r#"{"node_id": 9}"#));
    assert_eq!(status, 201, "{session}");
    contract.check("Session", &session);
    assert_eq!(session["node_id"], 9);
    assert_eq!(session["udp_port"], rig.hub.udp_addr().port());
    rig.stop().await;
}
