//! The built `local-agent` binary: exit codes, messages, SERVICE_ENGINE_PORT and graceful
//! shutdown on SIGTERM.

mod engine_support;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use engine_support::{Contract, raw};

const BIN: &str = env!("CARGO_BIN_EXE_local-agent");

fn run_to_end(args: &[&str]) -> Output {
    engine_support::agent_command(BIN)
        .args(args)
        .env_remove("SERVICE_ENGINE_PORT")
        // The hub starts with `run` too; free ports keep parallel tests apart.
        .env("SERVICE_SENTINEL_PORT", "0")
        .env("SERVICE_CSI_PORT", "0")
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs")
}

/// A port that was free a moment ago (the OS hands out ephemeral ports in sequence, so a reuse
/// race is very unlikely).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Waits for a child to exit, killing it after `limit`.
fn wait_with_timeout(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the engine did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn replay_of_a_missing_file_fails_clearly() {
    let out = run_to_end(&["replay", "/definitely/not/here.jsonl", "--report"]);
    assert!(!out.status.success());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/definitely/not/here.jsonl"), "{stderr}");
    assert!(stderr.contains("cannot be read"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn fall_delays_outside_their_range_are_refused_before_starting() {
    for args in [
        ["run", "--fall-stillness-s", "0"],
        ["run", "--no-breath-s", "NaN"],
        ["run", "--fall-stillness-s", "100000"],
    ] {
        let out = run_to_end(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(args[1]), "{stderr}");
        assert!(stderr.contains("between 5 and 3600 seconds"), "{stderr}");
    }
}

#[test]
fn run_with_replay_source_and_missing_file_fails_clearly() {
    let out = run_to_end(&["run", "--source", "replay", "--file", "/nope/rec.npz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nope/rec.npz"));

    let out = run_to_end(&["run", "--source", "replay"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--file"));
}

#[test]
fn bad_usage_fails_clearly() {
    let out = run_to_end(&["run", "--scene", "no-such-scene"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such-scene") && stderr.contains("demo"),
        "{stderr}"
    );

    let out = run_to_end(&["run", "--speed", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("speed"));

    let out = run_to_end(&["run", "--port", "99999"]);
    assert_eq!(out.status.code(), Some(2));

    // An unknown fall rule names the ones there are.
    let out = run_to_end(&["run", "--fall-rule", "sometimes"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("burst") && stderr.contains("fast-motion"),
        "{stderr}"
    );

    let out = run_to_end(&["replay", "x", "--window-s", "0"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_port_in_use_is_reported() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = run_to_end(&["run", "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already in use") && stderr.contains(&port),
        "{stderr}"
    );
    drop(taken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_engine_port_is_honoured_and_sigterm_stops_cleanly() {
    let contract = Contract::load();
    let port = free_port();
    // No arguments at all: `local-agent` is `local-agent run` on the demo scene.
    let mut child = engine_support::agent_command(BIN)
        .env("SERVICE_ENGINE_PORT", port.to_string())
        .env("SERVICE_SENTINEL_PORT", "0")
        .env("SERVICE_CSI_PORT", "0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("the engine exited early: {status}");
        }
        if let Ok(reply) = raw(
            addr,
            &format!("GET /health HTTP/1.1\r\nHost: localhost:{port}"),
        )
        .await
            && reply.status == 200
        {
            break reply.json();
        }
        assert!(
            Instant::now() < deadline,
            "the engine never answered on SERVICE_ENGINE_PORT={port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    contract.check("Health", &health);
    assert_eq!(health["source"], "simulator");

    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status =
        tokio::task::block_in_place(|| wait_with_timeout(&mut child, Duration::from_secs(15)));
    assert!(status.success(), "exit after SIGTERM: {status}");
}
