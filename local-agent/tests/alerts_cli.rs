//! The built binary and Away Alerts: `alert test`, startup refusal of a bad address, `away`
//! against a stopped agent, and delivery across a SIGKILL and restart.

mod alerts_support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use alerts_support::{Receiver, TempDir, TestCa, closed_port, wait_until};
use local_agent::alerts::config::RetryPolicy;
use local_agent::alerts::outbox::Outbox;
use local_agent::alerts::{AlertKind, AlertLog, DeliveryState};

const BIN: &str = env!("CARGO_BIN_EXE_local-agent");

/// A command with a private data dir and config file, and no inherited alert settings.
fn agent(dir: &Path) -> Command {
    let config = dir.join("config.toml");
    if !config.exists() {
        std::fs::write(&config, "# empty: everything comes from the environment\n").unwrap();
    }
    let mut cmd = Command::new(BIN);
    for var in [
        "SERVICE_ALERT_WEBHOOK",
        "SERVICE_ALERT_CA",
        "SERVICE_ALERT_RETRY_BASE_MS",
        "SERVICE_ALERT_RETRY_CAP_MS",
        "SERVICE_ALERT_RETRY_WINDOW_S",
        "SERVICE_ENGINE_PORT",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("SERVICE_DATA_DIR", dir.join("data"))
        .env("SERVICE_CONFIG", &config)
        // Nothing this test starts may take a shared port: the hub's listeners pick free ones.
        .env("SERVICE_SENTINEL_PORT", "0")
        .env("SERVICE_CSI_PORT", "0")
        .env("RUST_LOG", "info");
    cmd
}

fn output(mut cmd: Command) -> Output {
    cmd.output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn outbox(dir: &Path) -> Outbox {
    Outbox::open_in(&dir.join("data"), true, RetryPolicy::default()).unwrap()
}

#[test]
fn alert_test_reports_a_2xx_and_exits_0() {
    let dir = TempDir::new("cli-ok");
    let ca = TestCa::new("cli CA");
    let receiver = Receiver::https(ca.server_config(), &[], 200);
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"])
        .env(
            "SERVICE_ALERT_WEBHOOK",
            receiver.url("https", "/secret-topic"),
        )
        .env("SERVICE_ALERT_CA", ca.write_pem(dir.path()));
    let out = output(cmd);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("delivered") && stdout.contains("200"),
        "{stdout}"
    );
    assert!(!stdout.contains("secret-topic"), "{stdout}");
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let log = outbox(dir.path()).recent(1).unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].kind, AlertKind::Test);
    assert_eq!(log[0].id, got[0].key());
    assert_eq!(log[0].delivery.state, DeliveryState::Delivered);
    assert_eq!(log[0].delivery.attempts, 1);
}

#[test]
fn the_address_and_a_relative_ca_path_can_come_from_the_config_file() {
    let dir = TempDir::new("cli-file");
    let ca = TestCa::new("file CA");
    let receiver = Receiver::https(ca.server_config(), &[], 202);
    let ca_path = ca.write_pem(dir.path());
    let ca_name = ca_path.file_name().unwrap().to_str().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "alert_webhook = \"{}\"\nalert_ca = \"{ca_name}\"\n",
            receiver.url("https", "/from-file")
        ),
    )
    .unwrap();
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("202"));
    assert_eq!(receiver.received()[0].path, "/from-file");

    // A typo in the file is refused with its name, not silently ignored.
    std::fs::write(
        dir.path().join("config.toml"),
        "alert_webhock = \"https://example.com/x\"\n",
    )
    .unwrap();
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"]);
    let out = output(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("alert_webhock"), "{stderr}");
}

#[test]
fn alert_test_over_loopback_http_reports_a_refusal_and_leaves_the_alert_queued() {
    let dir = TempDir::new("cli-503");
    let receiver = Receiver::http(&[], 503);
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"])
        .env("SERVICE_ALERT_WEBHOOK", receiver.url("http", "/hook"));
    let out = output(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("503") && stderr.contains("retries"),
        "{stderr}"
    );
    let log = outbox(dir.path()).recent(1).unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].delivery.state, DeliveryState::Pending);
    assert_eq!(log[0].delivery.attempts, 1);
    assert_eq!(log[0].delivery.last_status, Some(503));
    assert_eq!(receiver.received().len(), 1);
}

#[test]
fn plain_http_to_a_remote_host_is_refused_before_anything_is_sent() {
    let dir = TempDir::new("cli-http");
    // TEST-NET-1: never routed; nothing may be sent there anyway.
    let address = "http://192.0.2.10/hook/secret-topic";
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"])
        .env("SERVICE_ALERT_WEBHOOK", address);
    let out = output(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("SERVICE_ALERT_WEBHOOK") && stderr.contains("loopback"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret-topic"), "{stderr}");

    // `run` refuses to start with it too, before binding anything.
    let mut cmd = agent(dir.path());
    cmd.args(["run", "--port", "0"])
        .env("SERVICE_ALERT_WEBHOOK", address)
        .stdin(Stdio::null());
    let out = output(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
}

#[test]
fn a_missing_extra_ca_file_is_a_clear_startup_error() {
    let dir = TempDir::new("cli-ca");
    let mut cmd = agent(dir.path());
    cmd.args(["alert", "test"])
        .env("SERVICE_ALERT_WEBHOOK", "https://127.0.0.1:9/hook")
        .env("SERVICE_ALERT_CA", dir.path().join("nope.pem"));
    let out = output(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nope.pem") && stderr.contains("SERVICE_ALERT_CA"),
        "{stderr}"
    );
}

#[test]
fn away_commands_say_clearly_when_the_agent_is_not_running() {
    let dir = TempDir::new("cli-away");
    for state in ["on", "off", "status"] {
        let mut cmd = agent(dir.path());
        cmd.args(["away", state, "--port", &closed_port().to_string()]);
        let out = output(cmd);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("not running"), "{stderr}");
    }
}

#[test]
fn away_on_off_and_status_use_the_control_route() {
    let dir = TempDir::new("cli-away-route");
    let route = alerts_support::ControlRoute::start();
    let run = |state: &str| {
        let mut cmd = agent(dir.path());
        cmd.args(["away", state])
            .env("SERVICE_SENTINEL_PORT", route.port.to_string());
        output(cmd)
    };
    let out = run("on");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "away mode is on");
    assert!(route.away.is_on());
    let out = run("status");
    assert_eq!(text(&out.stdout).trim(), "away mode is on");
    let out = run("off");
    assert_eq!(text(&out.stdout).trim(), "away mode is off");
    assert!(!route.away.is_on());
    let requests = route.requests.lock().unwrap().clone();
    let bodies: Vec<serde_json::Value> = requests
        .iter()
        .filter(|(line, _)| line == "POST /control/away")
        .map(|(_, b)| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(
        bodies,
        vec![
            serde_json::json!({"on": true}),
            serde_json::json!({"on": false})
        ]
    );
    assert!(requests.iter().any(|(l, _)| l == "GET /control/away"));
}

/// Kills the child if a test panics half-way.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_agent(dir: &Path, env: &[(&str, String)], log: &str) -> Agent {
    let mut cmd = agent(dir);
    cmd.args(["run", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(log)).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Agent(cmd.spawn().expect("the agent starts"))
}

#[test]
fn alerts_pending_when_the_agent_is_killed_are_delivered_once_after_restart() {
    let dir = TempDir::new("sigkill");
    let ca = TestCa::new("sigkill CA");
    // Down (500) until the test says otherwise.
    let receiver = Receiver::https(ca.server_config(), &[], 500);
    let env = vec![
        (
            "SERVICE_ALERT_WEBHOOK",
            receiver.url("https", "/hook/secret"),
        ),
        (
            "SERVICE_ALERT_CA",
            ca.write_pem(dir.path()).display().to_string(),
        ),
        ("SERVICE_ALERT_RETRY_BASE_MS", "100".to_string()),
        ("SERVICE_ALERT_RETRY_CAP_MS", "400".to_string()),
    ];
    let mut first = start_agent(dir.path(), &env, "first.log");

    // Queue alerts from another process, as a user would.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut cmd = agent(dir.path());
        cmd.args(["alert", "test"]);
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let out = output(cmd);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("500"), "{stderr}");
        // The id from the CLI's own message: the agent may be retrying other alerts meanwhile.
        let id = stderr
            .split_whitespace()
            .find(|w| w.starts_with("alert_"))
            .expect("the message names the alert")
            .to_string();
        ids.push(id);
    }
    // The running agent retries every one of them (it reads rows other processes wrote).
    let retried = wait_until(Duration::from_secs(30), || {
        let got = receiver.received();
        ids.iter()
            .all(|id| got.iter().filter(|r| &r.key() == id).count() >= 2)
    });
    assert!(
        retried,
        "agent log:\n{}",
        std::fs::read_to_string(dir.path().join("first.log")).unwrap_or_default()
    );

    first.0.kill().unwrap(); // SIGKILL: no shutdown code runs.
    first.0.wait().unwrap();
    let pending = outbox(dir.path()).recent(1).unwrap();
    assert!(
        pending
            .iter()
            .all(|a| a.delivery.state == DeliveryState::Pending)
    );

    receiver.answer_from_now_on(200);
    let mut second = start_agent(dir.path(), &env, "second.log");
    let store = outbox(dir.path());
    let delivered = wait_until(Duration::from_secs(60), || {
        let log = store.recent(1).unwrap();
        log.len() == 3
            && log
                .iter()
                .all(|a| a.delivery.state == DeliveryState::Delivered)
    });
    assert!(
        delivered,
        "{:?}\nagent log:\n{}",
        store.recent(1).unwrap(),
        std::fs::read_to_string(dir.path().join("second.log")).unwrap_or_default()
    );
    // Stop gracefully and look at what the receiver got: each key accepted exactly once.
    let pid = second.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let exited = wait_until(Duration::from_secs(20), || {
        second.0.try_wait().unwrap().is_some()
    });
    assert!(exited, "the agent stops on SIGTERM");
    let mut accepted: HashMap<String, usize> = HashMap::new();
    for r in receiver.received() {
        if (200..300).contains(&r.answered) {
            *accepted.entry(r.key()).or_default() += 1;
        }
    }
    assert_eq!(accepted.len(), 3, "{accepted:?}");
    assert!(accepted.values().all(|&n| n == 1), "{accepted:?}");
    for id in &ids {
        assert_eq!(accepted.get(id), Some(&1));
    }
    // Recorded attempts: the CLI's own and the second agent's at least. The first agent's retry
    // reached the receiver (asserted above), but SIGKILL can land between that request and the
    // write of its attempt count: an attempt in flight when the process dies is not recorded
    // (CI, 2026-11-27: one alert of three read 2 attempts after three requests).
    let log = store.recent(1).unwrap();
    assert!(log.iter().all(|a| a.delivery.attempts >= 2), "{log:?}");
}
