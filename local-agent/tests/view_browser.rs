//! The live view in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver) against the built agent playing the simulator's `demo` scene, with a node
//! emulator sending to its hub. Screenshots go to `<target dir>/view-screenshots/`.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian's `chromium` and
//! `chromium-driver`; `.ci/test` installs them). A missing browser fails the test: it is not
//! skipped.

mod engine_support;
mod view_support;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use view_support::{Agent, Emulator, LineSpec};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

fn screenshots() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|p| p.join("view-screenshots"))
        .unwrap_or_else(|| PathBuf::from("view-screenshots"));
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

struct Driver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl Driver {
    fn start() -> Self {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(bin).exists(),
                "{bin} is missing: install Debian's chromium and chromium-driver (`.ci/test` does)"
            );
        }
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = view_support::temp_dir("chromium-profile");
        Self {
            child,
            port,
            profile,
        }
    }

    async fn session(&self, width: u32, height: u32) -> Client {
        let mut caps = Capabilities::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", self.profile.join(format!("{width}x{height}")).display()),
                    format!("--window-size={width},{height}"),
                ],
            }),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"performance": "ALL"}));
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// chromedriver's performance log (DevTools events), which lists every request the page made.
#[derive(Debug)]
struct PerformanceLog;

impl WebDriverCompatibleCommand for PerformanceLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or("")))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"performance"}"#.into()))
    }
}

/// The URLs of every request the browser sent since the last call.
async fn requests(client: &Client) -> Vec<String> {
    let log = client
        .issue_cmd(PerformanceLog)
        .await
        .expect("performance log");
    log.as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["message"].as_str())
        .filter_map(|m| serde_json::from_str::<Value>(m).ok())
        .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
        .filter_map(|m| {
            m["message"]["params"]["request"]["url"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

async fn text(client: &Client, css: &str) -> String {
    match client.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn js(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.expect("script runs")
}

#[derive(Debug, Default)]
struct Seen {
    presence: BTreeSet<String>,
    motion: BTreeSet<String>,
    breathing: BTreeSet<String>,
    reasons: BTreeSet<String>,
    waveform: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_shows_the_demo_scene_and_a_node_in_a_real_browser() {
    let agent = Agent::start(&["--speed", "6"], &[]);
    let recording = agent.dir.join("node.txt");
    view_support::write_lines(
        &recording,
        &LineSpec {
            seconds: 600.0,
            ..LineSpec::default()
        },
    );
    let _node = Emulator::start(
        &recording,
        &format!("ws://127.0.0.1:{}/ingest", agent.hub.expect("hub").port()),
        1.0,
    );
    let driver = Driver::start();
    let client = driver.session(1280, 2200).await;
    let shots = screenshots();
    let origin = format!("http://127.0.0.1:{}", agent.view.port());

    // The browser's own start page is not the view's doing.
    let _ = requests(&client).await;
    client
        .goto(&agent.url)
        .await
        .expect("the printed address opens");
    assert_eq!(
        client.current_url().await.unwrap().as_str(),
        format!("{origin}/"),
        "the token leaves the address bar"
    );
    assert_eq!(client.title().await.unwrap(), "Presence agent");

    // Watch a full loop of the scene (30 s at 6x): presence, motion and breathing must change.
    let mut seen = Seen::default();
    let mut shot_taken = false;
    let deadline = Instant::now() + Duration::from_secs(150);
    while Instant::now() < deadline {
        seen.presence.insert(text(&client, "#presence").await);
        seen.motion.insert(text(&client, "#motion").await);
        let bpm = text(&client, "#breathing-bpm").await;
        seen.breathing.insert(bpm.clone());
        seen.reasons.insert(
            js(
                &client,
                "return document.getElementById('breathing-reason').dataset.why",
            )
            .await
            .as_str()
            .unwrap_or("")
            .to_string(),
        );
        let wave = js(
            &client,
            "return document.getElementById('wave-empty').textContent === ''",
        )
        .await;
        seen.waveform |= wave == Value::Bool(true);
        if bpm != "—" && !bpm.is_empty() && wave == Value::Bool(true) && !shot_taken {
            // A moment with a breathing rate and its waveform: the README's screenshot.
            tokio::time::sleep(Duration::from_millis(700)).await;
            let png = client.screenshot().await.expect("screenshot");
            std::fs::write(shots.join("desktop.png"), png).unwrap();
            shot_taken = true;
        }
        let done = seen.presence.contains("Someone is here")
            && seen.presence.contains("Nobody")
            && seen.motion.len() > 5
            && seen.breathing.iter().any(|b| b.parse::<f64>().is_ok())
            && seen.reasons.contains("moving")
            && shot_taken;
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        seen.presence.contains("Someone is here") && seen.presence.contains("Nobody"),
        "presence changes as the scene plays: {seen:?}"
    );
    assert!(seen.motion.len() > 5, "motion changes: {seen:?}");
    let rates: Vec<f64> = seen
        .breathing
        .iter()
        .filter_map(|b| b.parse().ok())
        .collect();
    assert!(
        rates.iter().any(|r| (12.0..=18.0).contains(r)),
        "a breathing rate near the scene's 15 br/min appears: {seen:?}"
    );
    assert!(
        seen.reasons.contains("moving"),
        "null breathing says why: {seen:?}"
    );
    assert!(seen.waveform, "the waveform is drawn: {seen:?}");
    assert!(shot_taken);

    // The node from the emulator, with its rate. The page rebuilds the table on every update,
    // so a row handle can go stale between two WebDriver calls: read the row in one script.
    let deadline = Instant::now() + Duration::from_secs(30);
    let row = loop {
        let row = js(
            &client,
            "const r = document.getElementById('node-node-aa:bb:cc:00:00:01'); \
             return r ? { rate: r.dataset.rate, text: r.innerText } : null",
        )
        .await;
        if !row.is_null() {
            break row;
        }
        assert!(Instant::now() < deadline, "the emulated node is listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let rate: f64 = row["rate"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0.0);
    assert!(
        (35.0..=65.0).contains(&rate),
        "the node's rate ~50/s: {rate}"
    );
    let row_text = row["text"].as_str().unwrap_or_default();
    assert!(
        row_text.contains("online") && row_text.contains("esp-csi"),
        "{row_text}"
    );
    // The doctor's findings appear in the page too.
    client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("#doctor li[data-check='nodes']"))
        .await
        .expect("doctor findings are shown");

    // The away switch, by mouse and by keyboard.
    let hub_port = agent.hub.unwrap().port().to_string();
    let away = |agent: &Agent| {
        String::from_utf8_lossy(&agent.cli(&["away", "status", "--port", &hub_port]).stdout)
            .trim()
            .to_string()
    };
    assert_eq!(away(&agent), "away mode is off");
    let switch = client.find(Locator::Id("away-switch")).await.unwrap();
    switch.click().await.unwrap();
    wait_until(
        &client,
        "return document.getElementById('away-switch').getAttribute('aria-checked') === 'true'",
    )
    .await;
    assert_eq!(away(&agent), "away mode is on");
    let png = client.screenshot().await.unwrap();
    std::fs::write(shots.join("desktop-away.png"), png).unwrap();
    switch.send_keys(" ").await.unwrap();
    wait_until(
        &client,
        "return document.getElementById('away-switch').getAttribute('aria-checked') === 'false'",
    )
    .await;
    assert_eq!(away(&agent), "away mode is off");

    // Every request the page made went to this view's origin.
    let urls = requests(&client).await;
    assert!(urls.iter().any(|u| u.ends_with("/api/events")), "{urls:?}");
    let outside: Vec<&String> = urls
        .iter()
        .filter(|u| leaves_the_page(u) && !u.starts_with(&format!("{origin}/")))
        .collect();
    assert!(
        outside.is_empty(),
        "requests outside the view's origin: {outside:?}"
    );

    // A phone-sized window.
    client.set_window_size(390, 844).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let png = client.screenshot().await.unwrap();
    std::fs::write(shots.join("phone.png"), png).unwrap();
    let overflow = js(
        &client,
        "return document.documentElement.scrollWidth <= window.innerWidth + 1",
    )
    .await;
    assert_eq!(
        overflow,
        Value::Bool(true),
        "no sideways scrolling on a phone"
    );

    // Without the cookie, or with a wrong token: nothing.
    client.delete_all_cookies().await.unwrap();
    client.goto(&format!("{origin}/")).await.unwrap();
    assert_eq!(client.title().await.unwrap(), "Presence agent: locked");
    assert!(client.find(Locator::Id("presence")).await.is_err());
    client
        .goto(&format!("{origin}/?token={}x", agent.token))
        .await
        .unwrap();
    assert_eq!(client.title().await.unwrap(), "Presence agent: locked");
    let status = client
        .execute_async(
            "const done = arguments[0]; fetch('/api/state').then(r => done(r.status));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(status, json!(401));
    let png = client.screenshot().await.unwrap();
    std::fs::write(shots.join("locked.png"), png).unwrap();
    let leaked = requests(&client).await;
    assert!(
        leaked
            .iter()
            .all(|u| !leaves_the_page(u) || u.starts_with(&format!("{origin}/"))),
        "{leaked:?}"
    );
    client.close().await.unwrap();
    agent.stop();
}

/// A request that goes over a network at all (`data:` and the browser's own `chrome:` pages do
/// not).
fn leaves_the_page(url: &str) -> bool {
    !(url.starts_with("data:") || url.starts_with("chrome:") || url.starts_with("about:"))
}

async fn wait_until(client: &Client, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while js(client, script).await != Value::Bool(true) {
        assert!(Instant::now() < deadline, "timed out: {script}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
