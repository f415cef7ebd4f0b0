//! Home Assistant over MQTT, end to end: the agent binary against a real Mosquitto broker
//! (started per test on free loopback ports, with a password file and a TLS listener whose
//! certificate comes from a per-test CA). Discovery configs are checked with Home Assistant's own
//! discovery code (`tests/ha/validate_discovery.py`, run with the Python that `HA_PYTHON` names;
//! `.ci/test` installs it).

mod engine_support;
mod mqtt_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use mqtt_support::{Agent, Broker, Observer, PASSWORD, USER, eventually, mqtt_config, retained};
use serde_json::Value;

/// What `mqtt_config` + client id give as topics.
struct Names {
    base: String,
    prefix: &'static str,
}

fn names(client_id: &str) -> Names {
    Names {
        base: format!("presence-agent/{client_id}"),
        prefix: "homeassistant",
    }
}

fn mqtt_state(h: &Value) -> &str {
    h["mqtt"]["state"].as_str().unwrap_or("")
}

fn ha_python() -> String {
    std::env::var("HA_PYTHON").unwrap_or_else(|_| {
        panic!(
            "HA_PYTHON must name a Python with Home Assistant's MQTT code \
             (local-agent/tests/ha/requirements.txt); the test command .ci/test sets it up"
        )
    })
}

/// Runs Home Assistant's discovery validation over the broker's retained messages.
async fn validate_with_home_assistant(broker: &Broker, base: &str, dir: &std::path::Path) -> Value {
    let messages = retained(broker, &["homeassistant/#", &format!("{base}/#")]).await;
    let json: Vec<Value> = messages
        .iter()
        .map(|(t, p)| serde_json::json!({"topic": t, "payload": p}))
        .collect();
    let file = dir.join("retained.json");
    std::fs::write(&file, serde_json::to_vec(&json).unwrap()).unwrap();
    let script = format!(
        "{}/tests/ha/validate_discovery.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::process::Command::new(ha_python())
        .arg(&script)
        .arg("homeassistant")
        .arg(&file)
        .stderr(Stdio::piped())
        .output()
        .expect("the Home Assistant validator runs");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the validator printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && report["errors"].as_array().is_some_and(|e| e.is_empty()),
        "Home Assistant rejects our discovery: {:#}\nstderr: {}",
        report["errors"],
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

fn entity<'a>(report: &'a Value, object_id: &str) -> &'a Value {
    report["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["object_id"] == object_id)
        .unwrap_or_else(|| panic!("no entity {object_id} in {report:#}"))
}

fn numeric(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_accepts_every_config_and_states_follow_the_demo_scene() {
    let broker = Broker::start("demo");
    let observer = Observer::start(&broker).await;
    let id = "pa-demo";
    let n = names(id);
    // Over TLS, with the test CA as the extra CA.
    let mut agent = Agent::new(
        "demo",
        &mqtt_config(&broker.tls_url(), id, Some(&broker.pki.ca)),
    );
    agent.spawn(
        &["--scene", "demo", "--speed", "6"],
        Some(USER),
        Some(PASSWORD),
    );
    let started = Instant::now();
    let health = agent
        .health_until(Duration::from_secs(30), |h| mqtt_state(h) == "connected")
        .await;
    assert_eq!(
        health["mqtt"]["broker"],
        format!("mqtts://127.0.0.1:{}", broker.tls_port)
    );
    engine_support::Contract::load().check("Health", &health);

    // Two real sensor nodes (the RuView recording has nodes 1 and 2) reach the hub.
    let mut emulator = agent
        .command(&[
            "node-emulator",
            "--file",
            engine_support::csi_data("ruview/pretrain-1775182186.csi.jsonl")
                .to_str()
                .unwrap(),
            "--to",
            &format!("udp://127.0.0.1:{}", agent.csi_port),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node-emulator starts");

    // One loop of the 180 s scene is 30 s at × 6: empty, walk in, sit and breathe, leave.
    let occupancy = format!("{}/occupancy/state", n.base);
    let breathing = format!("{}/breathing_rate/state", n.base);
    let saw_scene = eventually(Duration::from_secs(75), || {
        let occ: Vec<String> = observer
            .history(&occupancy)
            .into_iter()
            .map(|s| s.payload)
            .collect();
        let on = occ.iter().position(|p| p == "ON");
        let off_after = on.is_some_and(|i| occ[i..].iter().any(|p| p == "OFF"));
        let rate = observer
            .history(&breathing)
            .iter()
            .any(|s| numeric(&s.payload).is_some_and(|r| (12.0..=18.0).contains(&r)));
        off_after && rate
    })
    .await;
    let history = |topic: &str| -> Vec<String> {
        observer
            .history(topic)
            .into_iter()
            .map(|s| s.payload)
            .collect()
    };
    assert!(
        saw_scene,
        "after {:?}: occupancy {:?}, breathing {:?}\nagent log:\n{}",
        started.elapsed(),
        history(&occupancy),
        history(&breathing),
        agent.log()
    );
    // Someone walking shows as motion; an empty room reads low. Breathing is unknown, never 0,
    // when nobody is there.
    let motion: Vec<f64> = history(&format!("{}/motion/state", n.base))
        .iter()
        .filter_map(|p| numeric(p))
        .collect();
    let max = motion.iter().cloned().fold(0.0, f64::max);
    let min = motion.iter().cloned().fold(100.0, f64::min);
    assert!(max >= 30.0 && min <= 10.0, "motion {motion:?}");
    assert!(motion.iter().all(|m| (0.0..=100.0).contains(m)));
    let rates = history(&breathing);
    assert!(rates.iter().any(|p| p == "None"), "{rates:?}");
    assert!(!rates.iter().any(|p| numeric(p) == Some(0.0)), "{rates:?}");
    assert!(
        history(&format!("{}/breathing_rate/attributes", n.base))
            .iter()
            .any(|p| serde_json::from_str::<Value>(p).unwrap()["strength"].is_number())
    );

    // At most one message per second per entity (motion changes on every frame).
    for topic in [format!("{}/motion/state", n.base), occupancy.clone()] {
        let seen = observer.history(&topic);
        for pair in seen.windows(2) {
            let gap = pair[1].at.duration_since(pair[0].at);
            assert!(gap >= Duration::from_millis(800), "{topic}: {gap:?} apart");
        }
    }
    // QoS 1 for the routine (anomaly) and fall entities, 0 for the chatty ones. (Retained is
    // checked below: Home Assistant's view is built from the broker's retained messages only.)
    let routine = observer.history(&format!("{}/routine/state", n.base));
    assert!(!routine.is_empty() && routine.iter().all(|s| s.qos == 1));
    let fall = observer.history(&format!("{}/fall/state", n.base));
    assert!(!fall.is_empty() && fall.iter().all(|s| s.qos == 1));
    assert!(observer.history(&occupancy).iter().all(|s| s.qos == 0));

    // Both nodes are announced and connected before the recording (120 s) runs out.
    let nodes_up = eventually(Duration::from_secs(30), || {
        ["node-1", "node-2"].iter().all(|node| {
            observer.last(&format!("{}/nodes/{node}/connectivity/state", n.base))
                == Some("ON".into())
        })
    })
    .await;
    assert!(nodes_up, "agent log:\n{}", agent.log());

    let report = validate_with_home_assistant(&broker, &n.base, agent.dir.path()).await;
    let _ = emulator.kill();
    let _ = emulator.wait();

    // Every entity the issue names, with the device classes, units and state classes chosen.
    let expect = [
        ("occupancy", "binary_sensor", Some("occupancy"), None),
        ("motion", "sensor", None, Some("%")),
        ("breathing_rate", "sensor", None, Some("breaths/min")),
        ("heart_rate", "sensor", None, Some("bpm")),
        ("fall", "binary_sensor", Some("safety"), None),
        ("routine", "sensor", Some("enum"), None),
        ("away_mode", "switch", None, None),
    ];
    for (object, component, class, unit) in expect {
        let e = entity(&report, object);
        assert_eq!(e["component"], component, "{object}");
        assert_eq!(e["device_class"].as_str(), class, "{object}");
        assert_eq!(e["unit"].as_str(), unit, "{object}");
        assert_eq!(e["node_id"], id);
        assert_eq!(e["device_identifiers"][0], id);
        assert_eq!(e["availability"], "online");
        if unit.is_some() {
            assert_eq!(e["state_class"], "measurement", "{object}");
        }
    }
    assert_eq!(entity(&report, "routine")["state"], "learning_baseline");
    assert_eq!(
        entity(&report, "fall")["state"],
        "None",
        "not monitoring simulated data: unknown, not OFF"
    );
    assert_eq!(entity(&report, "fall")["attributes"]["monitoring"], false);
    assert_eq!(entity(&report, "away_mode")["state"], "OFF");
    assert_eq!(
        entity(&report, "away_mode")["command_topic"],
        format!("{}/away/set", n.base)
    );
    for node in ["node-1", "node-2"] {
        let c = entity(&report, &format!("{node}_connectivity"));
        assert_eq!(c["device_class"], "connectivity");
        assert_eq!(c["entity_category"], "diagnostic");
        assert_eq!(c["via_device"], id);
        assert_eq!(c["attributes"]["node_id"], node);
        let rate = entity(&report, &format!("{node}_packet_rate"));
        assert_eq!(rate["unit"], "packets/s");
        assert_eq!(rate["via_device"], id);
    }
    assert_eq!(report["entities"].as_array().unwrap().len(), 7 + 2 * 2);

    // SIGTERM: the agent says goodbye itself (retained `offline`) and exits 0.
    let status = agent.terminate().expect("was running");
    assert!(status.success(), "{status}");
    assert!(
        observer
            .wait_for(
                &format!("{}/availability", n.base),
                "offline",
                Duration::from_secs(5)
            )
            .await
    );
    assert!(!agent.log().contains(PASSWORD), "the password was logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_away_switch_works_from_mqtt_and_follows_the_cli() {
    let broker = Broker::start("away");
    let observer = Observer::start(&broker).await;
    let id = "pa-away";
    let n = names(id);
    let mut agent = Agent::new("away", &mqtt_config(&broker.url(), id, None));
    agent.spawn(&["--scene", "empty"], Some(USER), Some(PASSWORD));
    let state = format!("{}/away_mode/state", n.base);
    assert!(
        observer
            .wait_for(&state, "OFF", Duration::from_secs(30))
            .await,
        "{}",
        agent.log()
    );

    // Home Assistant's command, sent with Mosquitto's own client.
    broker.mosquitto_pub(&format!("{}/away/set", n.base), "ON", false);
    assert!(
        observer
            .wait_for(&state, "ON", Duration::from_secs(10))
            .await
    );
    let away = |args: &[&str]| {
        let out = agent
            .command(&[&["away"], args, &["--port", &agent.hub_port.to_string()]].concat())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // The same away mode as the CLI's.
    assert_eq!(away(&["status"]), "away mode is on");
    assert_eq!(away(&["off"]), "away mode is off");
    assert!(
        observer
            .wait_for(&state, "OFF", Duration::from_secs(10))
            .await
    );
    // Anything but ON/OFF is ignored.
    broker.mosquitto_pub(&format!("{}/away/set", n.base), "maybe", false);
    broker.mosquitto_pub(&format!("{}/away/set", n.base), "on", false);
    assert!(
        observer
            .wait_for(&state, "ON", Duration::from_secs(10))
            .await
    );
    assert_eq!(away(&["status"]), "away mode is on");
    assert!(
        agent.log().contains("neither ON nor OFF"),
        "{}",
        agent.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_coming_online_gets_discovery_and_states_again() {
    let broker = Broker::start("birth");
    let observer = Observer::start(&broker).await;
    let id = "pa-birth";
    let n = names(id);
    let mut agent = Agent::new("birth", &mqtt_config(&broker.url(), id, None));
    agent.spawn(&["--scene", "empty"], Some(USER), Some(PASSWORD));
    let config = format!("{}/binary_sensor/{id}/occupancy/config", n.prefix);
    let away = format!("{}/away_mode/state", n.base);
    assert!(
        eventually(Duration::from_secs(30), || {
            !observer.history(&config).is_empty() && !observer.history(&away).is_empty()
        })
        .await,
        "{}",
        agent.log()
    );
    // Discovery goes out once per connection, and the away state only when it changes ...
    assert_eq!(observer.history(&config).len(), 1);
    assert_eq!(observer.history(&away).len(), 1);
    // ... until Home Assistant (re)starts and sends its birth message.
    broker.mosquitto_pub(&format!("{}/status", n.prefix), "online", false);
    assert!(
        eventually(Duration::from_secs(10), || {
            observer.history(&config).len() == 2 && observer.history(&away).len() == 2
        })
        .await
    );
    // Its last will (`offline`) changes nothing.
    broker.mosquitto_pub(&format!("{}/status", n.prefix), "offline", false);
    let h = agent
        .health_until(Duration::from_secs(5), |h| mqtt_state(h) == "connected")
        .await;
    assert_eq!(h["mqtt"]["dropped"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_is_survived_and_everything_is_published_again() {
    let mut broker = Broker::start("restart");
    let id = "pa-restart";
    let n = names(id);
    let mut agent = Agent::new("restart", &mqtt_config(&broker.url(), id, None));
    agent.spawn(&["--scene", "walk"], Some(USER), Some(PASSWORD));
    agent
        .health_until(Duration::from_secs(30), |h| mqtt_state(h) == "connected")
        .await;
    let topics_of = |msgs: &[(String, String)]| -> Vec<String> {
        msgs.iter().map(|(t, _)| t.clone()).collect()
    };
    let filters = ["homeassistant/#".to_string(), format!("{}/#", n.base)];
    let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
    let before = eventually_retained(&broker, &filters, 16).await;

    broker.stop();
    let down = agent
        .health_until(Duration::from_secs(15), |h| mqtt_state(h) == "disconnected")
        .await;
    assert!(
        down["mqtt"]["last_error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{down}"
    );
    engine_support::Contract::load().check("Health", &down);
    // Sensing and serving go on without the broker.
    let tick = |f: &Value| f["tick"].as_u64().unwrap_or(0);
    let t1 = tick(&agent.get("/frame").await.expect("/frame answers"));
    let moved = eventually_async_frame(&agent, t1 + 50).await;
    assert!(moved, "the engine stopped while the broker was down");
    assert_eq!(agent.get("/health").await.unwrap()["ok"], true);

    // The broker comes back empty (no persistence): the agent reconnects and republishes.
    broker.restart();
    let up = agent
        .health_until(Duration::from_secs(30), |h| {
            mqtt_state(h) == "connected" && h["mqtt"]["reconnects"] == 1
        })
        .await;
    assert_eq!(up["mqtt"]["last_error"], Value::Null);
    let after = eventually_retained(&broker, &filters, before.len()).await;
    assert_eq!(topics_of(&after), topics_of(&before));
    let availability = after
        .iter()
        .find(|(t, _)| t.ends_with("/availability"))
        .unwrap();
    assert_eq!(availability.1, "online");
}

/// Waits until the broker holds at least `count` retained messages under `filters`.
async fn eventually_retained(
    broker: &Broker,
    filters: &[&str],
    count: usize,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = retained(broker, filters).await;
        if got.len() >= count {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "only {} retained messages: {got:?}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn eventually_async_frame(agent: &Agent, tick: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(f) = agent.get("/frame").await
            && f["tick"].as_u64().unwrap_or(0) >= tick
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_will_marks_the_agent_offline_when_it_is_killed() {
    let broker = Broker::start("will");
    let observer = Observer::start(&broker).await;
    let id = "pa-will";
    let n = names(id);
    let mut agent = Agent::new("will", &mqtt_config(&broker.url(), id, None));
    agent.spawn(&["--scene", "empty"], Some(USER), Some(PASSWORD));
    let availability = format!("{}/availability", n.base);
    assert!(
        observer
            .wait_for(&availability, "online", Duration::from_secs(30))
            .await,
        "{}",
        agent.log()
    );
    agent.kill();
    assert!(
        observer
            .wait_for(&availability, "offline", Duration::from_secs(10))
            .await,
        "no last will after SIGKILL:\n{}",
        broker.log()
    );
    // Retained, so Home Assistant starting later sees the agent offline too.
    let held = retained(&broker, &[&availability]).await;
    assert_eq!(held, vec![(availability.clone(), "offline".to_string())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_reported_and_the_agent_keeps_sensing() {
    let broker = Broker::start("auth");
    let mut agent = Agent::new("auth", &mqtt_config(&broker.url(), "pa-auth", None));
    let wrong = "not-the-password-7f3a";
    agent.spawn(&["--scene", "walk"], Some(USER), Some(wrong));
    let h = agent
        .health_until(Duration::from_secs(30), |h| mqtt_state(h) == "auth_failed")
        .await;
    let error = h["mqtt"]["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("refused"), "{h}");
    engine_support::Contract::load().check("Health", &h);
    let t1 = agent.get("/frame").await.unwrap()["tick"].as_u64().unwrap();
    assert!(eventually_async_frame(&agent, t1 + 50).await);
    // Full rate (the simulator's 100 frames/s) with the link refused.
    let h = agent
        .health_until(Duration::from_secs(10), |h| {
            h["ok"] == true && h["rate_hz"].as_f64().unwrap_or(0.0) > 90.0
        })
        .await;
    assert_eq!(mqtt_state(&h), "auth_failed");
    let log = agent.log();
    assert!(log.contains("refused"), "{log}");
    assert!(!log.contains(wrong), "the password was logged:\n{log}");
    // The doctor's finding for it names what to check.
    let view: local_agent::mqtt::LinkView = serde_json::from_value(h["mqtt"].clone()).unwrap();
    let d = view.diagnosis();
    assert_eq!(d.level, local_agent::mqtt::link::Severity::Problem);
    assert!(
        d.fix.unwrap().contains("SERVICE_MQTT_PASSWORD"),
        "{}",
        d.detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_never_answers_does_not_slow_the_pipeline() {
    // Accepts TCP connections and then says nothing: the worst case for a client that waits.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hole.local_addr().unwrap().port();
    let mut agent = Agent::new(
        "hole",
        &mqtt_config(&format!("mqtt://127.0.0.1:{port}"), "pa-hole", None),
    );
    agent.spawn(&["--scene", "walk", "--speed", "2"], None, None);
    let h = agent
        .health_until(Duration::from_secs(30), |h| {
            h["ok"] == true && h["rate_hz"].as_f64().unwrap_or(0.0) > 150.0
        })
        .await;
    assert_ne!(mqtt_state(&h), "connected");
    // Still at full rate well after the link attempt has started and is hanging.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let h = agent.get("/health").await.unwrap();
    assert!(h["rate_hz"].as_f64().unwrap() > 150.0, "{h}");
    assert!(
        matches!(mqtt_state(&h), "connecting" | "disconnected"),
        "{h}"
    );
    drop(hole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_clears_our_retained_topics_and_nothing_else() {
    let broker = Broker::start("purge");
    let id = "pa-purge";
    let n = names(id);
    let foreign = "homeassistant/sensor/someone_else/temperature/config";
    broker.mosquitto_pub(foreign, r#"{"state_topic":"x"}"#, true);
    let mut agent = Agent::new("purge", &mqtt_config(&broker.url(), id, None));
    agent.spawn(&["--scene", "empty"], Some(USER), Some(PASSWORD));
    agent
        .health_until(Duration::from_secs(30), |h| mqtt_state(h) == "connected")
        .await;
    let ours = [
        format!("{}/+/{id}/+/config", n.prefix),
        format!("{}/#", n.base),
    ];
    let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
    eventually_retained(&broker, &ours, 16).await;

    // Refused while the agent runs: it would publish everything again.
    let out = purge(&agent, false);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stop it first"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    agent.terminate();
    let out = purge(&agent, false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cleared 7 discovery configs"), "{stdout}");
    assert_eq!(retained(&broker, &ours).await, vec![]);
    assert_eq!(
        retained(&broker, &[foreign]).await.len(),
        1,
        "someone else's config was removed"
    );
    // A second purge finds nothing and says so.
    let out = purge(&agent, true);
    assert!(String::from_utf8_lossy(&out.stdout).contains("cleared 0 discovery configs"));
}

fn purge(agent: &Agent, force: bool) -> std::process::Output {
    let mut args = vec!["mqtt", "purge"];
    if force {
        args.push("--force");
    }
    agent
        .command(&args)
        .env("SERVICE_MQTT_USERNAME", USER)
        .env("SERVICE_MQTT_PASSWORD", PASSWORD)
        .output()
        .unwrap()
}

#[test]
fn a_bad_mqtt_setting_stops_the_start_with_a_clear_message() {
    let agent = Agent::new("badurl", "mqtt_url = \"mqtt://user:hunter2@broker.lan\"\n");
    let out = agent
        .command(&["run", "--scene", "empty"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SERVICE_MQTT_PASSWORD"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let agent = Agent::new("nouser", "mqtt_url = \"mqtt://127.0.0.1:1\"\n");
    let out = agent
        .command(&["run"])
        .env_remove("SERVICE_MQTT_USERNAME")
        .env("SERVICE_MQTT_PASSWORD", "pw")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SERVICE_MQTT_USERNAME"));
}
