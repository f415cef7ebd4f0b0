//! The fall monitor inside the engine: a `--demo-fall` run of the simulator's fall scene reaches
//! `fallen`, raises exactly one `fall` alert through the configured sink, and every /fall,
//! /anomaly and /baseline body on the way validates against openapi.json. Without the demo flag
//! the simulator never activates the monitor.

mod engine_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine_support::{Contract, get, temp_data_dir, wait_for};
use local_agent::alerts::{AlertKind, AlertSink, NewAlert};
use local_agent::engine::source::SimulatorFeed;
use local_agent::engine::{Engine, EngineConfig, SharedSink};

#[derive(Default)]
struct Collect(Mutex<Vec<NewAlert>>);

impl AlertSink for Collect {
    fn raise(&self, alert: NewAlert) {
        self.0.lock().unwrap().push(alert);
    }
}

async fn start(scene: &str, demo_fall: bool, sink: Arc<Collect>) -> Engine {
    // Seed 1 of the fall scene is one of the 9 of 10 the accuracy suite detects.
    let feed = SimulatorFeed::new(scene, 1, 40.0).unwrap();
    let config = EngineConfig {
        port: 0,
        demo_fall,
        data_dir: Some(temp_data_dir()),
        alerts: SharedSink(sink),
        ..EngineConfig::default()
    };
    Engine::start(config, Box::new(feed)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demonstrated_fall_is_reported_and_alerted_once() {
    let contract = Contract::load();
    let sink = Arc::new(Collect::default());
    let engine = start("fall", true, Arc::clone(&sink)).await;
    let addr = engine.local_addr();
    let c = &contract;
    let fallen = wait_for("the fall state", Duration::from_secs(240), || async move {
        let fall = get(addr, "/fall").await.json();
        c.check("Fall", &fall);
        (fall["state"] == "fallen").then_some(fall)
    })
    .await;
    assert_eq!(fallen["active"], true);
    let alert = &fallen["alert"];
    assert_eq!(alert["kind"], "fall");
    assert!(fallen["seconds_since_motion"].as_f64().unwrap() >= 44.0);
    let raised = sink.0.lock().unwrap().clone();
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0].kind, AlertKind::Fall);
    assert_eq!(
        alert["id"],
        raised[0].id.as_str(),
        "/fall shows the raised alert"
    );
    contract.check("Anomaly", &get(addr, "/anomaly").await.json());
    contract.check("Baseline", &get(addr, "/baseline").await.json());
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_never_activates_the_fall_monitor_by_itself() {
    let contract = Contract::load();
    let sink = Arc::new(Collect::default());
    let engine = start("fall", false, Arc::clone(&sink)).await;
    let addr = engine.local_addr();
    // Play well past the fall's impact (scene time ~26 s) in simulator time.
    wait_for(
        "frames past the impact",
        Duration::from_secs(120),
        || async {
            let f = get(addr, "/frame").await.json();
            (f["csi_frames"].as_u64().unwrap_or(0) > 4000).then_some(())
        },
    )
    .await;
    let fall = get(addr, "/fall").await.json();
    contract.check("Fall", &fall);
    assert_eq!(fall["active"], false);
    assert_eq!(fall["alert"], serde_json::Value::Null);
    let anomaly = get(addr, "/anomaly").await.json();
    contract.check("Anomaly", &anomaly);
    assert_eq!(anomaly["status"], "learning_baseline");
    assert!(sink.0.lock().unwrap().is_empty());
    engine.shutdown().await;
}
