//! Shared helpers for the hub tests: a hub (+ engine on the hub source) on free ports, a LAN
//! node simulated by a network namespace with a veth pair, and small JSON getters.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use local_agent::alerts::memory::MemoryAlertLog;
use local_agent::alerts::{AlertLog, AwayMode};
use local_agent::engine::{Engine, EngineConfig};
use local_agent::hub::auth::TokenRule;
use local_agent::hub::emulator::{self, EmulatorError, EmulatorOptions, EmulatorStats, Target};
use local_agent::hub::registry::{Registry, RegistryConfig};
use local_agent::hub::{Hub, HubConfig, HubDeps, feed};
use serde_json::Value;

use crate::engine_support::get;

pub const BIN: &str = env!("CARGO_BIN_EXE_local-agent");

/// How to start a rig.
#[derive(Clone)]
pub struct RigOptions {
    pub token: Option<&'static str>,
    pub registry: RegistryConfig,
    /// Start an engine on the hub source.
    pub engine: bool,
}

impl Default for RigOptions {
    fn default() -> Self {
        Self {
            token: None,
            registry: RegistryConfig::default(),
            engine: true,
        }
    }
}

/// A hub on 0.0.0.0 with free ports, optionally feeding an engine.
pub struct Rig {
    pub hub: Hub,
    pub engine: Option<Engine>,
    pub alerts: Arc<MemoryAlertLog>,
    pub away: AwayMode,
}

impl Rig {
    pub async fn start(options: RigOptions) -> Self {
        let registry = Arc::new(Registry::new(options.registry));
        let alerts = Arc::new(MemoryAlertLog::new());
        let away = AwayMode::default();
        let (sink, engine) = if options.engine {
            let (sink, feed) = feed::channel(Arc::clone(&registry));
            let config = EngineConfig {
                port: 0,
                ..EngineConfig::default()
            };
            let engine = Engine::start(config, Box::new(feed))
                .await
                .expect("engine starts");
            (Some(sink), Some(engine))
        } else {
            (None, None)
        };
        let config = HubConfig {
            port: 0,
            csi_port: 0,
            token: TokenRule::new(options.token),
            registry: options.registry,
            ..HubConfig::default()
        };
        let log: Arc<dyn AlertLog> = alerts.clone();
        let hub = Hub::start(
            config,
            HubDeps {
                alerts: log,
                away: away.clone(),
                sink,
                registry,
            },
        )
        .await
        .expect("hub starts on free ports");
        Self {
            hub,
            engine,
            alerts,
            away,
        }
    }

    /// The hub's HTTP address on loopback.
    pub fn http(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.hub.local_addr().port()))
    }

    /// The UDP ingest address on loopback.
    pub fn udp(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.hub.udp_addr().port()))
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/ingest", self.hub.local_addr().port())
    }

    pub async fn json(&self, path: &str) -> Value {
        let reply = get(self.http(), path).await;
        assert_eq!(
            reply.status,
            200,
            "GET {path}: {:?}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()
    }

    pub async fn frame(&self) -> Value {
        let engine = self.engine.as_ref().expect("rig has an engine");
        let reply = get(engine.local_addr(), "/frame").await;
        assert_eq!(reply.status, 200);
        reply.json()
    }

    /// The node with `id` from `/nodes`, if listed.
    pub async fn node(&self, id: &str) -> Option<Value> {
        let nodes = self.json("/nodes").await;
        nodes["nodes"]
            .as_array()
            .and_then(|a| a.iter().find(|n| n["id"] == id).cloned())
    }

    pub async fn stop(self) {
        self.hub.shutdown().await;
        if let Some(engine) = self.engine {
            engine.shutdown().await;
        }
    }
}

/// A recording in the shared data set.
pub fn data(relative: &str) -> std::path::PathBuf {
    crate::engine_support::csi_data(relative)
}

/// Starts the in-process node emulator on its own thread.
pub fn emulate(
    file: std::path::PathBuf,
    target: Target,
    speed: f64,
    token: Option<&str>,
) -> Emulation {
    let (stop, handle) = emulator::spawn(EmulatorOptions {
        file,
        target,
        speed: Some(speed),
        token: token.map(str::to_string),
        node_id: None,
        hub: None,
    });
    Emulation {
        stop,
        handle: Some(handle),
    }
}

/// A running emulator; stopped on drop.
pub struct Emulation {
    stop: Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<EmulatorStats, EmulatorError>>>,
}

impl Emulation {
    pub fn stop(mut self) -> EmulatorStats {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take().expect("not joined yet");
        handle
            .join()
            .expect("emulator thread")
            .expect("emulator ran")
    }

    /// Waits for the recording to play out.
    pub fn finish(mut self) -> EmulatorStats {
        let handle = self.handle.take().expect("not joined yet");
        handle
            .join()
            .expect("emulator thread")
            .expect("emulator ran")
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

static NEXT_NS: AtomicU32 = AtomicU32::new(0);

/// A network namespace joined to the host by a veth pair: a "LAN node" at `ns_ip` that reaches
/// the host at `host_ip`. Removed on drop.
pub struct Netns {
    pub name: String,
    pub host_ip: String,
    pub ns_ip: String,
    veth_host: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates the namespace; panics (fails the test) with the reason when it cannot.
    pub fn create() -> Self {
        let n = NEXT_NS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // One /24 per namespace: unique within this process by the counter, and spread by pid
        // across concurrently running test binaries.
        let subnet = 1 + (pid.wrapping_mul(7).wrapping_add(n * 13)) % 250;
        let name = format!("hubtest-{pid}-{n}");
        let veth_host = format!("hh{}x{n}", pid % 100_000);
        let veth_ns = format!("hn{}x{n}", pid % 100_000);
        let host_ip = format!("10.200.{subnet}.1");
        let ns_ip = format!("10.200.{subnet}.2");
        let guard = Self {
            name: name.clone(),
            host_ip: host_ip.clone(),
            ns_ip: ns_ip.clone(),
            veth_host: veth_host.clone(),
        };
        let steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), name.clone()],
            vec![
                "link".into(),
                "add".into(),
                veth_host.clone(),
                "type".into(),
                "veth".into(),
                "peer".into(),
                "name".into(),
                veth_ns.clone(),
            ],
            vec![
                "link".into(),
                "set".into(),
                veth_ns.clone(),
                "netns".into(),
                name.clone(),
            ],
            vec![
                "addr".into(),
                "add".into(),
                format!("{host_ip}/24"),
                "dev".into(),
                veth_host.clone(),
            ],
            vec!["link".into(), "set".into(), veth_host.clone(), "up".into()],
            vec![
                "-n".into(),
                name.clone(),
                "addr".into(),
                "add".into(),
                format!("{ns_ip}/24"),
                "dev".into(),
                veth_ns.clone(),
            ],
            vec![
                "-n".into(),
                name.clone(),
                "link".into(),
                "set".into(),
                veth_ns,
                "up".into(),
            ],
            vec![
                "-n".into(),
                name.clone(),
                "link".into(),
                "set".into(),
                "lo".into(),
                "up".into(),
            ],
        ];
        for step in steps {
            let args: Vec<&str> = step.iter().map(String::as_str).collect();
            if let Err(e) = ip(&args) {
                panic!(
                    "cannot create the network namespace that plays a LAN node (these tests need root and `ip netns`): {e}"
                );
            }
        }
        guard
    }

    /// Runs a command inside the namespace.
    pub fn exec(&self, program: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program} in {}: {e}", self.name))
    }

    /// `curl` from the namespace; returns (status, JSON body).
    pub fn curl(&self, method: &str, url: &str, headers: &[&str]) -> (u16, Value) {
        let mut args = vec!["-s", "-m", "10", "-X", method, "-w", "\n%{http_code}"];
        for h in headers {
            args.push("-H");
            args.push(h);
        }
        args.push(url);
        let out = self.exec("curl", &args);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
        let status: u16 = status.trim().parse().unwrap_or_else(|_| {
            panic!(
                "curl from {} failed: {text:?} {:?}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let json = serde_json::from_str(body).unwrap_or(Value::Null);
        (status, json)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair; the link delete covers a half-built one.
        let _ = ip(&["netns", "del", &self.name]);
        let _ = ip(&["link", "del", &self.veth_host]);
    }
}

/// A deadline for polls that depend on real-time streaming on a loaded machine.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(30);
