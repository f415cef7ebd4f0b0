//! Replay through the engine and the offline report, on the shared real recordings.

mod engine_support;

use std::process::Command;
use std::time::Duration;

use engine_support::{Contract, csi_data, get, temp_data_dir, wait_for};
use local_agent::engine::source::ReplayFeed;
use local_agent::engine::{Engine, EngineConfig};

const RUVIEW: &str = "ruview/pretrain-1775182186.csi.jsonl";

#[tokio::test]
async fn a_fast_replay_plays_out_and_health_then_reports_not_ok() {
    let contract = Contract::load();
    let feed = ReplayFeed::open(&csi_data(RUVIEW), None).expect("recording opens");
    let config = EngineConfig {
        port: 0,
        data_dir: Some(temp_data_dir()),
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Box::new(feed))
        .await
        .expect("engine starts");
    let addr = engine.local_addr();

    // The recording holds 5309 CSI frames (RuView raw_csi lines); all reach the pipeline.
    let frame = wait_for("the whole recording", Duration::from_secs(60), || async {
        let f = get(addr, "/frame").await.json();
        (f["csi_frames"].as_u64() == Some(5309)).then_some(f)
    })
    .await;
    contract.check("Frame", &frame);
    assert_eq!(frame["source"], "replay");
    assert_eq!(frame["live"], false);
    assert_eq!(frame["csi_connected"], false);

    // No frame for 5 s once the file has ended: /health says so.
    let health = wait_for(
        "ok: false after the end",
        Duration::from_secs(15),
        || async {
            let h = get(addr, "/health").await.json();
            (h["ok"] == false).then_some(h)
        },
    )
    .await;
    contract.check("Health", &health);
    assert_eq!(health["source"], "replay");
    assert_eq!(health["rate_hz"], 0.0);
    let fall = get(addr, "/fall").await.json();
    assert_eq!(fall["active"], false);
    engine.shutdown().await;
}

#[test]
fn replay_report_json_summarises_the_recording() {
    let out = Command::new(env!("CARGO_BIN_EXE_local-agent"))
        .args(["replay", "--report", "--json", "--window-s", "30"])
        .arg(csi_data(RUVIEW))
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let summary = &report["summary"];
    assert_eq!(summary["records"], 5783);
    assert_eq!(summary["frames"], 5309);
    assert_eq!(
        summary["skipped"].as_u64().unwrap_or(0) + summary["rejected"].as_u64().unwrap_or(0),
        5783 - 5309
    );
    let windows = report["windows"].as_array().expect("windows");
    // 120 s of recording in 30 s windows.
    assert!(
        (4..=5).contains(&windows.len()),
        "{} windows",
        windows.len()
    );
    for w in windows {
        for key in [
            "t_s",
            "present",
            "motion",
            "breathing_bpm",
            "heart_bpm",
            "range_peak_m",
            "rate_hz",
        ] {
            assert!(w.get(key).is_some(), "window lacks {key}: {w}");
        }
    }

    let text = Command::new(env!("CARGO_BIN_EXE_local-agent"))
        .args(["replay", "--report"])
        .arg(csi_data(RUVIEW))
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs");
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("frames:            5309"), "{text}");
    assert!(text.contains("fraction present:"));
}
