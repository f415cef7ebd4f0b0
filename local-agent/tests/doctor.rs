//! `local-agent doctor`: every check named by a real cause. The built binary, real ports, real
//! node emulators sending generated or recorded CSI to a running agent, a real TLS receiver.

mod alerts_support;
mod engine_support;
mod view_support;

use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use view_support::{Agent, Emulator, LineSpec, command, doctor_until, findings, has, temp_dir};

const LIVE_TIMEOUT: Duration = Duration::from_secs(90);

fn free_tcp() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn free_udp() -> u16 {
    UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `doctor --json` with no agent running, on free ports unless `env` sets them.
fn offline(dir: &Path, env: &[(&str, String)]) -> (Value, Option<i32>) {
    let mut cmd = command(dir);
    cmd.args(["doctor", "--json"])
        .env("SERVICE_ENGINE_PORT", free_tcp().to_string())
        .env("SERVICE_SENTINEL_PORT", free_tcp().to_string())
        .env("SERVICE_CSI_PORT", free_udp().to_string())
        .env("SERVICE_VIEW_PORT", free_tcp().to_string());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("doctor runs");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code())
}

#[test]
fn a_clean_set_up_without_an_agent_has_no_problem() {
    let dir = temp_dir("doctor-clean");
    let (report, code) = offline(&dir, &[]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["agent_running"], false);
    assert!(has(&report, "agent", "warning", "not running"));
    assert!(has(&report, "data_dir", "ok", "writable"));
    assert!(has(&report, "alerts", "warning", "No alert address"));
    // Text mode says the same, one finding a line, fixes indented.
    let out = command(&dir)
        .arg("doctor")
        .env("SERVICE_ENGINE_PORT", free_tcp().to_string())
        .env("SERVICE_SENTINEL_PORT", free_tcp().to_string())
        .env("SERVICE_CSI_PORT", free_udp().to_string())
        .env("SERVICE_VIEW_PORT", free_tcp().to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warning  alerts"), "{text}");
    assert!(text.contains("fix: Set SERVICE_ALERT_WEBHOOK"), "{text}");
    assert!(text.contains("0 problem(s)"), "{text}");
}

#[test]
fn ports_taken_by_another_program_are_problems() {
    let dir = temp_dir("doctor-ports");
    let engine = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let udp = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let ep = engine.local_addr().unwrap().port();
    let up = udp.local_addr().unwrap().port();
    let (report, code) = offline(
        &dir,
        &[
            ("SERVICE_ENGINE_PORT", ep.to_string()),
            ("SERVICE_CSI_PORT", up.to_string()),
        ],
    );
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        has(
            &report,
            "ports",
            "problem",
            &format!("engine port {ep} is held by another program")
        ),
        "{report:#}"
    );
    assert!(
        has(
            &report,
            "ports",
            "problem",
            &format!("UDP ingest port {up}")
        ),
        "{report:#}"
    );
    assert!(has(&report, "ports", "ok", "hub port"));
}

#[test]
fn an_unwritable_data_directory_is_a_problem() {
    let dir = temp_dir("doctor-unwritable");
    // A file where the directory should be: nobody, root included, can create it.
    let blocker = dir.join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let data = blocker.join("data");
    let (report, code) = offline(&dir, &[("SERVICE_DATA_DIR", data.display().to_string())]);
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        has(&report, "data_dir", "problem", "cannot be written"),
        "{report:#}"
    );
    let fix = findings(&report, "data_dir")[0]["fix"]
        .as_str()
        .unwrap_or("");
    assert!(fix.contains("SERVICE_DATA_DIR"), "{fix}");
}

#[test]
fn a_damaged_store_is_a_problem_and_is_left_in_place() {
    let dir = temp_dir("doctor-store");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let junk = "this is not an SQLite database\n".repeat(200);
    std::fs::write(data.join("alerts.db"), &junk).unwrap();
    let (report, code) = offline(&dir, &[]);
    assert_eq!(code, Some(1), "{report:#}");
    assert!(has(&report, "stores", "problem", "alerts.db"), "{report:#}");
    assert!(has(&report, "stores", "ok", "routine.db"), "{report:#}");
    assert_eq!(
        std::fs::read_to_string(data.join("alerts.db")).unwrap(),
        junk,
        "the doctor only reads"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alert_address_is_probed_by_a_handshake_without_sending() {
    let dir = temp_dir("doctor-alerts");
    let ca = alerts_support::TestCa::new("doctor test CA");
    let receiver = alerts_support::Receiver::https(ca.server_config(), &[], 200);
    let pem = ca.write_pem(&dir);
    let url = receiver.url("https", "/my-topic");
    let d = dir.clone();
    let (report, code) = tokio::task::spawn_blocking(move || {
        offline(
            &d,
            &[
                ("SERVICE_ALERT_WEBHOOK", url),
                ("SERVICE_ALERT_CA", pem.display().to_string()),
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{report:#}");
    assert!(has(&report, "alerts", "ok", "handshake"), "{report:#}");
    assert!(has(&report, "alerts", "ok", "no alert was sent"));
    assert!(
        receiver.received().is_empty(),
        "the doctor sent a request: {:?}",
        receiver.received()
    );
    // The same receiver without its CA: the handshake fails, and says why.
    let url = receiver.url("https", "/my-topic");
    let d = dir.clone();
    let (report, code) =
        tokio::task::spawn_blocking(move || offline(&d, &[("SERVICE_ALERT_WEBHOOK", url)]))
            .await
            .unwrap();
    assert_eq!(code, Some(1));
    assert!(
        has(&report, "alerts", "problem", "TLS handshake"),
        "{report:#}"
    );
    // Nothing listening.
    let url = format!("https://127.0.0.1:{}/topic", alerts_support::closed_port());
    let (report, code) = offline(&dir, &[("SERVICE_ALERT_WEBHOOK", url)]);
    assert_eq!(code, Some(1));
    assert!(
        has(&report, "alerts", "problem", "cannot connect"),
        "{report:#}"
    );
    assert!(receiver.received().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Live checks: a running agent and node emulators.

fn ws(agent: &Agent) -> String {
    format!("ws://127.0.0.1:{}/ingest", agent.hub.expect("hub").port())
}

fn play(agent: &Agent, name: &str, spec: &LineSpec, speed: f64) -> Emulator {
    let file = agent.dir.join(format!("{name}.txt"));
    view_support::write_lines(&file, spec);
    Emulator::start(&file, &ws(agent), speed)
}

#[test]
fn a_node_at_5_hz_is_named_with_its_rate() {
    let agent = Agent::start(&["--source", "hub"], &[]);
    let _node = play(
        &agent,
        "slow",
        &LineSpec {
            hz: 5.0,
            seconds: 300.0,
            ..LineSpec::default()
        },
        1.0,
    );
    let (report, code) = doctor_until(&agent, LIVE_TIMEOUT, |r| {
        has(r, "nodes", "problem", "need at least 20 packets/s")
    });
    assert_eq!(code, Some(1));
    let detail = findings(&report, "nodes")
        .iter()
        .find(|f| f["level"] == "problem")
        .and_then(|f| f["detail"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(detail.contains("node-aa:bb:cc:00:00:01"), "{detail}");
    let rate: f64 = detail
        .split(" sends ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    assert!((4.0..6.0).contains(&rate), "{detail}");
    assert!(
        has(&report, "udp_ingest", "ok", "reached the hub"),
        "{report:#}"
    );
    agent.stop();
}

#[test]
fn nodes_sending_to_an_agent_on_the_simulator_are_a_problem() {
    let agent = Agent::start(&["--speed", "2"], &[]);
    let _node = play(&agent, "ok", &LineSpec::default(), 1.0);
    let (_, code) = doctor_until(&agent, LIVE_TIMEOUT, |r| {
        has(r, "nodes", "problem", "the engine runs another source")
    });
    assert_eq!(code, Some(1));
    agent.stop();
}

#[test]
fn a_channel_change_in_a_replay_is_named() {
    let agent = Agent::start(&["--source", "hub"], &[]);
    let mut channels = vec![6; 4];
    channels.push(11);
    let _node = play(
        &agent,
        "hop",
        &LineSpec {
            channels,
            seconds: 120.0,
            ..LineSpec::default()
        },
        1.0,
    );
    let (report, _) = doctor_until(&agent, LIVE_TIMEOUT, |r| {
        has(r, "channel", "warning", "channel changed 1 time(s)")
    });
    let f = &findings(&report, "channel")[0];
    assert!(
        f["detail"]
            .as_str()
            .is_some_and(|d| d.contains("from 6 to 11")),
        "{f}"
    );
    assert!(f["fix"].as_str().is_some_and(|x| x.contains("restart")));
    agent.stop();
}

#[test]
fn bursts_gaps_weak_or_saturating_signal_and_clock_skew_are_named() {
    let agent = Agent::start(&["--source", "hub"], &[]);
    let long = 300.0;
    let specs = [
        (
            "bursty",
            LineSpec {
                burst: 10,
                mac: "aa:bb:cc:00:00:0a",
                seconds: long,
                ..LineSpec::default()
            },
            1.0,
        ),
        (
            "gappy",
            LineSpec {
                gap: Some((3.0, 2.5)),
                mac: "aa:bb:cc:00:00:0b",
                seconds: long,
                ..LineSpec::default()
            },
            1.0,
        ),
        (
            "weak",
            LineSpec {
                rssi: -91,
                mac: "aa:bb:cc:00:00:0c",
                seconds: long,
                ..LineSpec::default()
            },
            1.0,
        ),
        (
            "loud",
            LineSpec {
                rssi: -18,
                mac: "aa:bb:cc:00:00:0d",
                seconds: long,
                ..LineSpec::default()
            },
            1.0,
        ),
        // Played 10% fast: the node's timestamps run ahead of arrival time.
        (
            "skewed",
            LineSpec {
                mac: "aa:bb:cc:00:00:0e",
                seconds: long,
                ..LineSpec::default()
            },
            1.1,
        ),
    ];
    let _nodes: Vec<Emulator> = specs
        .iter()
        .map(|(name, spec, speed)| play(&agent, name, spec, *speed))
        .collect();
    let expect = |r: &Value| {
        has(
            r,
            "timing",
            "warning",
            "node-aa:bb:cc:00:00:0a sends in bursts",
        ) && has(
            r,
            "timing",
            "warning",
            "node-aa:bb:cc:00:00:0b had 1 gap(s)",
        ) && has(
            r,
            "rssi",
            "warning",
            "node-aa:bb:cc:00:00:0c's signal is weak",
        ) && has(
            r,
            "rssi",
            "warning",
            "node-aa:bb:cc:00:00:0d's signal is saturating",
        ) && has(
            r,
            "clock",
            "warning",
            "node-aa:bb:cc:00:00:0e's timestamps run",
        )
    };
    let (report, _) = doctor_until(&agent, LIVE_TIMEOUT, expect);
    // Each cause is named for its own node only.
    for (check, node) in [
        ("timing", "0c"),
        ("rssi", "0a"),
        ("rssi", "0e"),
        ("clock", "0a"),
        ("clock", "0b"),
    ] {
        assert!(
            !findings(&report, check).iter().any(|f| f["level"] != "ok"
                && f["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains(&format!("node-aa:bb:cc:00:00:{node}")))),
            "{check} blamed node {node}: {report:#}"
        );
    }
    let skew = findings(&report, "clock")[0]["detail"]
        .as_str()
        .unwrap_or("");
    assert!(skew.contains("10.0% faster"), "{skew}");
    agent.stop();
}

#[test]
fn gain_that_is_not_locked_is_named_on_real_captures() {
    let agent = Agent::start(&["--source", "hub"], &[]);
    let udp = format!("udp://{}", agent.udp.expect("udp"));
    let unlocked =
        engine_support::csi_data("espectre/baseline/baseline_esp32_64sc_20260214_183059.npz");
    let locked = engine_support::csi_data("espectre/baseline/baseline_c3_64sc_20260329_130303.npz");
    let run = |file: &Path, id: &str| {
        Emulator(
            std::process::Command::new(view_support::BIN)
                .args(["node-emulator", "--file"])
                .arg(file)
                .args(["--to", &udp, "--node-id", id])
                .env("RUST_LOG", "error")
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("emulator"),
        )
    };
    let _a = run(&unlocked, "7");
    let _b = run(&locked, "8");
    let (report, _) = doctor_until(&agent, LIVE_TIMEOUT, |r| {
        has(r, "gain", "warning", "node-7's receive gain is not locked")
            && findings(r, "nodes").len() >= 2
    });
    assert!(
        !has(&report, "gain", "warning", "node-8"),
        "the gain-locked capture is not blamed: {report:#}"
    );
    agent.stop();
}

#[test]
fn calibration_that_never_finishes_says_why() {
    // A person walking about from the first frame: a calibration never learns motion as the
    // empty room, so it keeps starting over.
    let agent = Agent::start(
        &["--scene", "walk", "--speed", "4"],
        &[("SERVICE_DOCTOR_CALIBRATION_STUCK_S", "5")],
    );
    let (report, code) = doctor_until(&agent, LIVE_TIMEOUT, |r| {
        has(r, "calibration", "warning", "moving")
    });
    assert_eq!(
        code,
        Some(0),
        "a stuck calibration is a warning: {report:#}"
    );
    let fix = findings(&report, "calibration")[0]["fix"]
        .as_str()
        .unwrap_or("");
    assert!(fix.contains("Leave the room"), "{fix}");
    agent.stop();
}

#[test]
fn a_hub_port_held_by_another_program_is_a_problem_in_the_running_agent() {
    let taken = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let agent = Agent::start(
        &["--speed", "2"],
        &[("SERVICE_SENTINEL_PORT", &port), ("EXPECT_NO_HUB", "1")],
    );
    assert!(agent.hub.is_none());
    let (report, code) = doctor_until(&agent, LIVE_TIMEOUT, |r| r["agent_running"] == true);
    assert_eq!(code, Some(1));
    assert!(
        has(
            &report,
            "ports",
            "problem",
            &format!("hub port {port} is held by another program")
        ),
        "{report:#}"
    );
    agent.stop();
}
