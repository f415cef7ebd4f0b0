//! Node ingest over real sockets: recordings streamed by the node emulator over UDP and
//! WebSocket, the registry's measured rates, the engine fed by the hub, offline detection and
//! its alert, and hostile input that must be dropped and counted while good frames flow.
//!
//! Rate tolerance: the hub's rate is an EWMA of inter-arrival times (about 30 packets), and the
//! emulator sleeps between frames on a machine shared with other builds. A uniform recording
//! (ESPectre `.npz`) is compared sample by sample within ±15 %; a bursty one (RuView: 13–50 ms
//! steps) is compared as the mean of samples taken while streaming, within ±15 % of the
//! recording's own per-node rate × speed.

mod engine_support;
mod hub_support;

use std::collections::HashMap;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use engine_support::{Contract, wait_for};
use futures_util::SinkExt;
use hub_support::{Rig, RigOptions, STREAM_TIMEOUT, data, emulate};
use local_agent::hub::emulator::Target;
use local_agent::hub::registry::RegistryConfig;
use local_agent::sensing::csi::{FeatureState, QualityFlags, RawCsiPacket};
use local_agent::sensing::source::replay::ReplaySource;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

const NPZ: &str = "espectre/baseline/baseline_c3_64sc_20260329_130303.npz";
const LONG_NPZ: &str = "espectre/test/test_c3_64sc_20260329_130804.npz";
const RUVIEW: &str = "ruview/pretrain-1775182186.csi.jsonl";

fn short_offline() -> RegistryConfig {
    RegistryConfig {
        offline_after: Duration::from_millis(1500),
        ..RegistryConfig::default()
    }
}

fn within(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance * expected
}

/// Per node: frames per second of recording time (count − 1 over the span).
fn recorded_rates(path: &std::path::Path) -> HashMap<String, f64> {
    let mut source = ReplaySource::open(path).expect("recording opens");
    let mut spans: HashMap<String, (f64, f64, u64)> = HashMap::new();
    while let Some(frame) = source.next_frame() {
        let e = spans
            .entry(frame.node_id.clone())
            .or_insert((frame.t_s, frame.t_s, 0));
        e.0 = e.0.min(frame.t_s);
        e.1 = e.1.max(frame.t_s);
        e.2 += 1;
    }
    spans
        .into_iter()
        .map(|(k, (a, b, n))| (k, (n - 1) as f64 / (b - a)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_recording_reaches_the_engine_at_its_rate_and_goes_offline_with_one_alert() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions {
        registry: short_offline(),
        ..RigOptions::default()
    })
    .await;
    let path = data(NPZ);
    let expected = ReplaySource::open(&path)
        .expect("npz opens")
        .npz_meta()
        .expect("npz meta")
        .rate_hz;
    let before = rig.frame().await;
    assert_eq!(before["source"], "hub");
    assert_eq!(before["live"], true);
    assert_eq!(before["csi_connected"], false, "no node yet");

    let emulation = emulate(path, Target::Udp(rig.udp().to_string()), 1.0, None);
    // Past the EWMA's settling (≈30 packets), the measured rate must match the recording's.
    let node = wait_for("node-1 with 300 frames", STREAM_TIMEOUT, || async {
        rig.node("node-1")
            .await
            .filter(|n| n["frames"].as_u64() >= Some(300))
    })
    .await;
    contract.check("Node", &node);
    assert_eq!(node["transport"], "udp");
    assert_eq!(node["format"], "adr018");
    assert_eq!(node["addr"], "127.0.0.1");
    assert_eq!(node["online"], true);
    let rate = node["rate_hz"].as_f64().expect("rate");
    eprintln!("npz over UDP: measured {rate} Hz, recording {expected:.2} Hz");
    assert!(
        within(rate, expected, 0.15),
        "measured {rate} Hz, recording {expected} Hz"
    );

    let frame = rig.frame().await;
    assert_eq!(frame["source"], "hub");
    assert_eq!(frame["live"], true);
    assert_eq!(frame["csi_connected"], true, "{frame}");
    assert!(frame["csi_frames"].as_u64() > Some(0));
    let health = rig.json("/health").await;
    contract.check("HubHealth", &health);
    assert_eq!(health["nodes_online"], 1);
    // The engine's own /health carries the hub's fleet.
    let engine = rig.engine.as_ref().expect("engine").local_addr();
    let engine_health = engine_support::get(engine, "/health").await.json();
    assert_eq!(engine_health["source"], "hub");
    assert_eq!(
        engine_health["fleet"],
        serde_json::json!({"nodes_online": 1, "nodes_total": 1})
    );
    assert_eq!(health["feeding_pipeline"], true);

    // Silence: the node goes offline, the engine drops csi_connected, one alert is raised.
    emulation.stop();
    wait_for("csi_connected false", STREAM_TIMEOUT, || async {
        let f = rig.frame().await;
        (f["csi_connected"] == false).then_some(())
    })
    .await;
    let node = rig.node("node-1").await.expect("node still listed");
    assert_eq!(node["online"], false);
    assert_eq!(node["rate_hz"], 0.0);
    let alerts = wait_for("a node_offline alert", STREAM_TIMEOUT, || async {
        let a = rig.json("/alerts?hours=1").await;
        (a["alerts"].as_array().map(Vec::len) == Some(1)).then_some(a)
    })
    .await;
    contract.check("Alerts", &alerts);
    assert_eq!(alerts["alerts"][0]["kind"], "node_offline");
    assert!(
        alerts["alerts"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("node-1"))
    );
    // One alert per offline episode (the registry's unit test covers repeated sweeps).
    assert_eq!(
        rig.json("/alerts").await["alerts"].as_array().map(Vec::len),
        Some(1)
    );
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_binary_recording_shows_both_nodes_at_the_recorded_rate() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions::default()).await;
    let path = data(RUVIEW);
    let recorded = recorded_rates(&path);
    let speed = 4.0;
    let emulation = emulate(path, Target::Ws(rig.ws_url()), speed, None);
    let mut samples: HashMap<&str, Vec<f64>> = HashMap::new();
    let started = Instant::now();
    // Sample for 12 s of wall time (48 s of recording), after 2 s of settling.
    while started.elapsed() < Duration::from_secs(14) {
        if started.elapsed() > Duration::from_secs(2) {
            for id in ["node-1", "node-2"] {
                if let Some(n) = rig.node(id).await
                    && let Some(r) = n["rate_hz"].as_f64()
                    && r > 0.0
                {
                    samples.entry(id).or_default().push(r);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    emulation.stop();
    let nodes = rig.json("/nodes").await;
    contract.check("Nodes", &nodes);
    for (id, reported) in [("node-1", "1"), ("node-2", "2")] {
        let node = rig.node(id).await.expect("node listed");
        assert_eq!(node["transport"], "websocket");
        assert_eq!(node["format"], "adr018");
        let s = &samples[id];
        assert!(s.len() > 20, "{id}: too few samples {}", s.len());
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        let expected = recorded[reported] * speed;
        eprintln!(
            "{id} over WebSocket: mean of {} samples {mean:.2} Hz, recording × speed {expected:.2} Hz",
            s.len()
        );
        assert!(
            within(mean, expected, 0.15),
            "{id}: measured mean {mean:.1} Hz, recording {expected:.1} Hz"
        );
    }
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_text_lines_register_an_esp32_csi_tool_node() {
    let rig = Rig::start(RigOptions::default()).await;
    let stats = emulate(
        data("esp32-csi-tool/example_csi.csv"),
        Target::Ws(rig.ws_url()),
        1.0,
        None,
    )
    .finish();
    assert_eq!(stats.sent, 13);
    let node = wait_for("13 lines", Duration::from_secs(10), || async {
        rig.node("node-3c:71:bf:6d:2a:78")
            .await
            .filter(|n| n["frames"] == 13)
    })
    .await;
    assert_eq!(node["transport"], "websocket");
    assert_eq!(node["format"], "esp32-csi-tool");
    assert!(node["rssi_dbm"].as_i64().is_some_and(|r| r < 0));
    wait_for(
        "the engine counted the frames",
        Duration::from_secs(10),
        || async {
            let f = rig.frame().await;
            (f["csi_frames"] == 13).then_some(())
        },
    )
    .await;
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_esp_csi_lines_are_sent_as_text_and_measured_at_their_rate() {
    // No esp-csi serial capture ships in the shared data, so write one: 250 classic 25-field
    // lines, 20 ms apart on the node's µs clock (50 Hz).
    let dir = std::env::temp_dir().join(format!("hub-esp-csi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("serial.txt");
    let mut text = String::from("I (312) wifi: boot message the hub ignores\n");
    for i in 0..250_u64 {
        let data: Vec<String> = (0..128).map(|k| ((k * 3 + i) % 40).to_string()).collect();
        text.push_str(&format!(
            "CSI_DATA,{i},AA:BB:cc:dd:ee:01,-61,11,1,4,0,0,0,1,0,0,0,-94,0,6,0,{},0,60,0,128,0,\"[{}]\"\n",
            1_500_000 + i * 20_000,
            data.join(",")
        ));
    }
    std::fs::write(&file, text).expect("write");
    let rig = Rig::start(RigOptions::default()).await;
    let emulation = emulate(file, Target::Ws(rig.ws_url()), 1.0, None);
    let node = wait_for("150 esp-csi lines", STREAM_TIMEOUT, || async {
        rig.node("node-aa:bb:cc:dd:ee:01")
            .await
            .filter(|n| n["frames"].as_u64() >= Some(150))
    })
    .await;
    assert_eq!(node["transport"], "websocket");
    assert_eq!(node["format"], "esp-csi");
    assert_eq!(node["rssi_dbm"], -61);
    let rate = node["rate_hz"].as_f64().expect("rate");
    eprintln!("esp-csi over WebSocket: measured {rate} Hz, recording 50 Hz");
    assert!(
        within(rate, 50.0, 0.15),
        "measured {rate} Hz, recording 50 Hz"
    );
    let stats = emulation.finish();
    assert_eq!(stats.sent, 250);
    assert_eq!(stats.skipped, 1, "the boot line is not sent");
    let _ = std::fs::remove_dir_all(&dir);
    rig.stop().await;
}

fn counter(health: &Value, name: &str) -> u64 {
    health["ingest"][name].as_u64().unwrap_or(0)
}

fn raw_packet(node_id: u8, sequence: u32) -> Vec<u8> {
    RawCsiPacket {
        node_id,
        n_antennas: 1,
        n_subcarriers: 64,
        freq_mhz: 2437,
        sequence,
        rssi: -55,
        noise_floor: -95,
        reserved: [0, 0],
        buffer: (0..128).map(|i| (i % 50) as i8 - 25).collect(),
    }
    .to_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_is_dropped_and_counted_while_good_frames_keep_flowing() {
    let contract = Contract::load_file("hub-openapi.json");
    let rig = Rig::start(RigOptions::default()).await;
    // The 60 s capture, so the good node outlasts the whole attack.
    let good = emulate(
        data(LONG_NPZ),
        Target::Udp(rig.udp().to_string()),
        1.0,
        None,
    );
    wait_for("the good node streaming", STREAM_TIMEOUT, || async {
        rig.node("node-1")
            .await
            .filter(|n| n["frames"].as_u64() >= Some(50))
    })
    .await;
    let attacker = UdpSocket::bind("127.0.0.1:0").expect("bind");
    attacker.connect(rig.udp()).expect("connect");

    // Malformed: truncated raw CSI, wrong length, feature state with a bad CRC, too short.
    let mut truncated = raw_packet(5, 0);
    truncated.truncate(60);
    let mut longer = raw_packet(5, 0);
    longer.extend_from_slice(&[1, 2, 3, 4]);
    let state = FeatureState {
        node_id: 6,
        mode: 1,
        seq: 1,
        ts_us: 1_000_000,
        motion_score: 0.1,
        presence_score: 0.9,
        respiration_bpm: 14.0,
        respiration_conf: 0.8,
        heartbeat_bpm: 60.0,
        heartbeat_conf: 0.5,
        anomaly_score: 0.0,
        env_shift_score: 0.0,
        node_coherence: 1.0,
        quality_flags: QualityFlags(1),
    };
    let mut bad_crc = state.to_bytes().to_vec();
    bad_crc[20] ^= 0xFF;
    let malformed: Vec<Vec<u8>> = vec![truncated, longer, bad_crc, vec![0x01, 0x00]];
    for round in 0..5 {
        for m in &malformed {
            attacker.send(m).expect("send");
        }
        let want = 4 * (round + 1);
        wait_for("malformed counted", Duration::from_secs(10), || async {
            (counter(&rig.json("/health").await, "malformed") >= want).then_some(())
        })
        .await;
    }
    // Oversized: a 5,000-byte datagram with a valid magic in front.
    let mut oversized = raw_packet(5, 0);
    oversized.resize(5000, 0);
    for _ in 0..5 {
        attacker.send(&oversized).expect("send");
    }
    // A valid feature-state packet registers its node without feeding the pipeline.
    attacker.send(&state.to_bytes()).expect("send");
    wait_for(
        "oversized counted and node-6 registered",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            (counter(&h, "oversized") >= 5 && rig.node("node-6").await.is_some()).then_some(())
        },
    )
    .await;

    // Flood: one node far above its 500/s cap.
    for seq in 0..3000 {
        let _ = attacker.send(&raw_packet(9, seq));
    }
    let flooder = wait_for(
        "the flood rate-limited",
        Duration::from_secs(10),
        || async {
            rig.node("node-9")
                .await
                .filter(|n| n["dropped"].as_u64() > Some(0))
        },
    )
    .await;
    contract.check("Node", &flooder);
    assert!(counter(&rig.json("/health").await, "rate_limited") > 0);

    // WebSocket garbage: a bad line, a bad binary message, then a message over 32 KiB, which
    // closes that connection only.
    let (mut ws, _) = tokio_tungstenite::connect_async(rig.ws_url())
        .await
        .expect("ws connects");
    ws.send(Message::Text("CSI_DATA,not,a,real,line".into()))
        .await
        .expect("send");
    ws.send(Message::Binary(malformed[0].clone().into()))
        .await
        .expect("send");
    let _ = ws.send(Message::Text("x".repeat(40 * 1024).into())).await;
    wait_for(
        "the WebSocket abuse counted",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            (counter(&h, "oversized") >= 6 && counter(&h, "malformed") >= 22).then_some(())
        },
    )
    .await;

    // The good node kept flowing through all of it, into the engine.
    let frames_then = rig.node("node-1").await.expect("node-1")["frames"]
        .as_u64()
        .expect("frames");
    let engine_then = rig.frame().await["csi_frames"]
        .as_u64()
        .expect("csi_frames");
    wait_for("good frames still flowing", STREAM_TIMEOUT, || async {
        let n = rig.node("node-1").await?;
        let f = rig.frame().await;
        (n["frames"].as_u64()? > frames_then + 50
            && f["csi_frames"].as_u64()? > engine_then + 50
            && n["online"] == true)
            .then_some(())
    })
    .await;
    let health = rig.json("/health").await;
    contract.check("HubHealth", &health);
    assert_eq!(health["nodes_total"], 3, "node-1, node-6, node-9: {health}");
    good.stop();
    rig.stop().await;
}
