//! Shared helpers for the live-view and doctor tests: the real `local-agent` binary on free ports
//! with a private data directory, the addresses it prints, and generated node recordings.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::engine_support::{Reply, raw};

pub const BIN: &str = env!("CARGO_BIN_EXE_local-agent");

/// A running agent started from the binary.
pub struct Agent {
    pub child: Child,
    pub engine: SocketAddr,
    pub hub: Option<SocketAddr>,
    pub udp: Option<SocketAddr>,
    pub view: SocketAddr,
    /// The printed address, token included.
    pub url: String,
    pub token: String,
    pub dir: PathBuf,
    lines: mpsc::Receiver<String>,
}

/// A fresh directory for one agent (data and config).
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = crate::engine_support::temp_data_dir().join(tag);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The binary with a private data directory and config file under `dir`, no inherited alert or
/// port settings, and free ports unless the test sets them.
pub fn command(dir: &Path) -> Command {
    let config = dir.join("config.toml");
    if !config.exists() {
        std::fs::write(&config, "# empty\n").expect("config");
    }
    let mut cmd = Command::new(BIN);
    for var in [
        "SERVICE_ALERT_WEBHOOK",
        "SERVICE_ALERT_CA",
        "SERVICE_SENTINEL_TOKEN",
        "SERVICE_CSI_ALLOW",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("SERVICE_DATA_DIR", dir.join("data"))
        .env("SERVICE_CONFIG", config)
        .env("SERVICE_ENGINE_PORT", "0")
        .env("SERVICE_SENTINEL_PORT", "0")
        .env("SERVICE_CSI_PORT", "0")
        .env("SERVICE_VIEW_PORT", "0")
        .env("RUST_LOG", "error");
    cmd
}

fn addr_after(line: &str, prefix: &str) -> Option<SocketAddr> {
    let rest = line.split(prefix).nth(1)?;
    let end = rest.find(['/', ' ', ')', ';']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl Agent {
    /// Starts `local-agent run ARGS` and waits for its engine, hub and view lines.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_in(temp_dir("agent"), args, env)
    }

    pub fn start_in(dir: PathBuf, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = command(&dir);
        cmd.arg("run").args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the agent starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut engine, mut hub, mut udp, mut view, mut url) = (None, None, None, None, None);
        let expect_hub = !env.iter().any(|(k, _)| *k == "EXPECT_NO_HUB");
        while engine.is_none() || view.is_none() || (expect_hub && hub.is_none()) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match lines.recv_timeout(left) {
                Ok(l) => l,
                Err(_) => {
                    let _ = child.kill();
                    panic!("the agent did not print its addresses in time");
                }
            };
            if line.starts_with("local-agent engine on ") {
                engine = addr_after(&line, "http://");
            } else if line.starts_with("local-agent hub on ") {
                hub = addr_after(&line, "http://");
                udp = addr_after(&line, "UDP ingest on ");
            } else if line.starts_with("local-agent live view on ") {
                view = addr_after(&line, "http://");
                url = line.split(" on ").nth(1).map(str::to_string);
            }
        }
        let url = url.expect("view url");
        let token = url.split("token=").nth(1).expect("token").to_string();
        let loopback = |a: SocketAddr| SocketAddr::from(([127, 0, 0, 1], a.port()));
        Self {
            child,
            engine: engine.expect("engine"),
            hub: hub.map(loopback),
            udp: udp.map(loopback),
            view: view.expect("view"),
            url,
            token,
            dir,
            lines,
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `local-agent ARGS` with this agent's data directory and config.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        command(&self.dir)
            .args(args)
            .output()
            .expect("the CLI runs")
    }

    /// A cookie header for this view.
    pub fn cookie(&self) -> String {
        format!("presence_view_{}={}", self.view.port(), self.token)
    }

    /// GET `path` on the view with the session cookie.
    pub async fn view_get(&self, path: &str) -> Reply {
        raw(
            self.view,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {}",
                self.view.port(),
                self.cookie()
            ),
        )
        .await
        .expect("view answers")
    }

    /// Stops with SIGTERM and waits.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a generated esp-csi recording looks.
#[derive(Clone)]
pub struct LineSpec {
    pub hz: f64,
    pub seconds: f64,
    pub rssi: i16,
    /// Channel at each second (index = second), last one repeats.
    pub channels: Vec<u16>,
    /// Packets per burst (1 = evenly paced): each burst shares one timestamp.
    pub burst: usize,
    /// (start s, length s) with no packets.
    pub gap: Option<(f64, f64)>,
    pub mac: &'static str,
}

impl Default for LineSpec {
    fn default() -> Self {
        Self {
            hz: 50.0,
            seconds: 60.0,
            rssi: -55,
            channels: vec![6],
            burst: 1,
            gap: None,
            mac: "aa:bb:cc:00:00:01",
        }
    }
}

/// Writes esp-csi `CSI_DATA` lines (the classic 25-field form) as a node would print them: the
/// node's microsecond clock, its channel and RSSI, and a 64-subcarrier buffer whose amplitudes
/// follow a slow breathing-like wave.
pub fn write_lines(path: &Path, spec: &LineSpec) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("recording"));
    let n = (spec.hz * spec.seconds) as usize;
    let mut seq = 0u32;
    let mut i = 0usize;
    while i < n {
        let t = i as f64 / spec.hz;
        if let Some((g0, len)) = spec.gap
            && t >= g0
            && t < g0 + len
        {
            i += 1;
            continue;
        }
        let ch = spec
            .channels
            .get(t as usize)
            .or(spec.channels.last())
            .copied()
            .unwrap_or(6);
        // A burst shares the timestamp of its first packet, so the emulator sends it at once.
        let burst_t = (i - i % spec.burst.max(1)) as f64 / spec.hz;
        let us = 1_000_000 + (burst_t * 1e6) as u64;
        let wave = (2.0 * std::f64::consts::PI * 0.25 * t).sin();
        let buf: Vec<String> = (0..64)
            .flat_map(|k| {
                let a = 20.0 + 3.0 * ((k * 7) % 11) as f64 + wave * (k % 5) as f64 * 0.6;
                let im = (a * 0.3).round() as i32;
                let re = a.round() as i32;
                [im.to_string(), re.to_string()]
            })
            .collect();
        writeln!(
            f,
            "CSI_DATA,{seq},{},{},11,1,0,0,0,0,0,0,0,0,-92,0,{ch},0,{us},0,0,0,128,0,\"[{}]\"",
            spec.mac,
            spec.rssi,
            buf.join(",")
        )
        .expect("write");
        seq += 1;
        i += 1;
    }
    f.flush().expect("flush");
}

/// Starts `local-agent node-emulator` for `file` towards `to`; killed on drop.
pub struct Emulator(pub Child);

impl Emulator {
    pub fn start(file: &Path, to: &str, speed: f64) -> Self {
        let child = Command::new(BIN)
            .args(["node-emulator", "--file"])
            .arg(file)
            .args(["--to", to, "--speed", &speed.to_string()])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("emulator starts");
        Self(child)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `doctor --json` against this agent until `pred` holds for the report, or panics with the
/// last report after `timeout`.
pub fn doctor_until(
    agent: &Agent,
    timeout: Duration,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> (serde_json::Value, Option<i32>) {
    let deadline = Instant::now() + timeout;
    loop {
        let out = agent.cli(&["doctor", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json printed no JSON ({e}): {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        if pred(&report) {
            return (report, out.status.code());
        }
        assert!(
            Instant::now() < deadline,
            "doctor never reported what was expected; last report: {report:#}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The findings of `check` in a report.
pub fn findings<'a>(report: &'a serde_json::Value, check: &str) -> Vec<&'a serde_json::Value> {
    report["findings"]
        .as_array()
        .map(|a| a.iter().filter(|f| f["check"] == check).collect())
        .unwrap_or_default()
}

/// True when some finding of `check` has `level` and mentions `text`.
pub fn has(report: &serde_json::Value, check: &str, level: &str, text: &str) -> bool {
    findings(report, check)
        .iter()
        .any(|f| f["level"] == level && f["detail"].as_str().is_some_and(|d| d.contains(text)))
}
