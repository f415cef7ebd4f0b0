//! The sensor hub: where ESP32 nodes send their CSI, and the LAN-facing API about them.
//!
//! Layout:
//! - [`auth`]: the token rule (HTTP, WebSocket).
//! - [`session`]: node sessions, the key-tagged UDP envelope and its anti-replay window.
//! - [`registry`]: nodes, their measured rate and health, rate caps and drop counters.
//! - [`ingest`], [`ingest_udp`], [`ingest_ws`]: packet handling and the two transports.
//! - [`feed`]: [`feed::HubFeed`], the engine's `hub` source.
//! - [`server`]: the hyper listener and routes (`/health`, `/nodes`, `/alerts`, `/ingest`,
//!   `/ingest/session`, `/control/away`).
//! - [`emulator`]: `local-agent node-emulator`, a recording played as a node.
//!
//! [`Hub::start`] binds both sockets before it returns, so callers know the addresses.

pub mod auth;
pub mod diagnostics;
pub mod emulator;
pub mod feed;
pub mod ingest;
pub mod ingest_udp;
pub mod ingest_ws;
pub mod registry;
pub mod server;
pub mod session;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::alerts::{AlertKind, AlertLog, AwayMode, NewAlert};
use crate::engine::server::Limits;
use auth::TokenRule;
use feed::FrameSink;
use ingest::Ingest;
use registry::{Registry, RegistryConfig};
use server::HubState;
use session::Sessions;

/// Default hub (HTTP + WebSocket) port; `SERVICE_SENTINEL_PORT` overrides it.
pub const DEFAULT_PORT: u16 = 8790;
pub const PORT_ENV: &str = "SERVICE_SENTINEL_PORT";
/// Default UDP ingest port; `SERVICE_CSI_PORT` overrides it.
pub const DEFAULT_CSI_PORT: u16 = 5005;
pub const CSI_PORT_ENV: &str = "SERVICE_CSI_PORT";
/// Receive buffer requested for the UDP socket (≈ 150 ms of 25,000 frames/s).
pub const UDP_RECV_BUFFER: usize = 4 << 20;
/// The shared token remote callers must send.
pub const TOKEN_ENV: &str = "SERVICE_SENTINEL_TOKEN";
/// The removed UDP allow list; refused when set (see [`auth::refuse_allow_list`]).
pub const ALLOW_ENV: &str = "SERVICE_CSI_ALLOW";

/// How to run the hub.
#[derive(Clone)]
pub struct HubConfig {
    /// Address both listeners bind; all interfaces by default, because nodes are on the LAN.
    pub bind: IpAddr,
    /// HTTP/WebSocket port; 0 picks a free one.
    pub port: u16,
    /// UDP port; 0 picks a free one.
    pub csi_port: u16,
    pub token: TokenRule,
    pub registry: RegistryConfig,
    pub limits: Limits,
}

impl Default for HubConfig {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: DEFAULT_PORT,
            csi_port: DEFAULT_CSI_PORT,
            token: TokenRule::default(),
            registry: RegistryConfig::default(),
            limits: Limits::default(),
        }
    }
}

/// What the hub works with but does not own.
pub struct HubDeps {
    /// Where `node_offline` alerts go, and what `GET /alerts` lists.
    pub alerts: Arc<dyn AlertLog>,
    pub away: AwayMode,
    /// Where accepted frames go; `None` when the engine runs another source.
    pub sink: Option<FrameSink>,
    /// The registry; share it with [`feed::channel`] when the hub feeds the engine.
    pub registry: Arc<Registry>,
}

/// Why the hub could not start.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(
        "{what} port {port} is already in use; stop the other program or choose another port ({hint})"
    )]
    PortInUse {
        what: &'static str,
        port: u16,
        hint: &'static str,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running hub.
pub struct Hub {
    addr: SocketAddr,
    udp_addr: SocketAddr,
    registry: Arc<Registry>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

fn bind_error(
    what: &'static str,
    hint: &'static str,
    addr: SocketAddr,
    source: std::io::Error,
) -> HubError {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        HubError::PortInUse {
            what,
            port: addr.port(),
            hint,
        }
    } else {
        HubError::Bind { addr, source }
    }
}

/// How often the offline sweep runs: a fifth of the offline timeout, within 20 ms … 1 s.
fn sweep_period(offline_after: Duration) -> Duration {
    (offline_after / 5).clamp(Duration::from_millis(20), Duration::from_secs(1))
}

impl Hub {
    /// Binds the HTTP listener and the UDP socket, then starts serving. Needs a tokio runtime.
    pub async fn start(config: HubConfig, deps: HubDeps) -> Result<Self, HubError> {
        let started = Instant::now();
        let http_addr = SocketAddr::new(config.bind, config.port);
        let listener = TcpListener::bind(http_addr)
            .await
            .map_err(|e| bind_error("hub", "--hub-port or SERVICE_SENTINEL_PORT", http_addr, e))?;
        let addr = listener.local_addr().map_err(|source| HubError::Bind {
            addr: http_addr,
            source,
        })?;
        let udp_bind = SocketAddr::new(config.bind, config.csi_port);
        let socket = UdpSocket::bind(udp_bind)
            .await
            .map_err(|e| bind_error("UDP ingest", "--csi-port or SERVICE_CSI_PORT", udp_bind, e))?;
        // Nodes send in bursts and the runtime can be descheduled on a busy computer: a large
        // receive buffer rides that out instead of losing datagrams in the kernel. The kernel
        // caps it at net.core.rmem_max.
        if let Err(e) = socket2::SockRef::from(&socket).set_recv_buffer_size(UDP_RECV_BUFFER) {
            tracing::warn!(error = %e, "cannot enlarge the UDP receive buffer");
        }
        let udp_addr = socket.local_addr().map_err(|source| HubError::Bind {
            addr: udp_bind,
            source,
        })?;

        let registry = deps.registry;
        let sessions = Arc::new(Sessions::default());
        let feeding = deps.sink.is_some();
        let ingest = Arc::new(Ingest::new(
            Arc::clone(&registry),
            Arc::clone(&sessions),
            deps.sink,
        ));
        let state = Arc::new(HubState {
            registry: Arc::clone(&registry),
            ingest: Arc::clone(&ingest),
            sessions: Arc::clone(&sessions),
            udp_port: udp_addr.port(),
            rule: config.token.clone(),
            alerts: Arc::clone(&deps.alerts),
            away: deps.away,
            started,
            port: addr.port(),
            ws_permits: Arc::new(tokio::sync::Semaphore::new(ingest_ws::MAX_CONNECTIONS)),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(server::serve(
                listener,
                state,
                config.limits,
                shutdown_rx.clone(),
            )),
            tokio::spawn(ingest_udp::run(socket, ingest, shutdown_rx.clone())),
            tokio::spawn(sweep(
                Arc::clone(&registry),
                sessions,
                deps.alerts,
                shutdown_rx,
            )),
        ];
        tracing::info!(
            %addr,
            %udp_addr,
            token_configured = config.token.is_configured(),
            feeding_pipeline = feeding,
            "hub listening"
        );
        Ok(Self {
            addr,
            udp_addr,
            registry,
            shutdown,
            tasks,
        })
    }

    /// The HTTP/WebSocket address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The UDP ingest address.
    pub fn udp_addr(&self) -> SocketAddr {
        self.udp_addr
    }

    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// Stops listening, ends WebSocket connections and waits for the tasks.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "hub task failed");
            }
        }
        tracing::info!("hub stopped");
    }
}

/// Marks silent nodes offline and raises one `node_offline` alert per offline episode; forgets
/// nodes and sessions idle for too long.
async fn sweep(
    registry: Arc<Registry>,
    sessions: Arc<Sessions>,
    alerts: Arc<dyn AlertLog>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(sweep_period(registry.config().offline_after));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
        }
        let expired = sessions.sweep(Instant::now());
        if expired > 0 {
            tracing::info!(expired, "idle node sessions forgotten");
        }
        for gone in registry.sweep(Instant::now()) {
            tracing::warn!(node = %gone.id, addr = %gone.addr, "node offline");
            let alert = NewAlert::new(
                AlertKind::NodeOffline,
                format!("Sensor node {} is offline", gone.id),
                format!(
                    "Node {} ({}) has sent nothing since {}. Check its power and Wi-Fi.",
                    gone.id, gone.addr, gone.last_seen
                ),
            );
            let alerts = Arc::clone(&alerts);
            // The sink may write to SQLite: keep it off the async workers.
            if tokio::task::spawn_blocking(move || alerts.raise(alert))
                .await
                .is_err()
            {
                tracing::error!("raising a node_offline alert panicked");
            }
        }
    }
}
