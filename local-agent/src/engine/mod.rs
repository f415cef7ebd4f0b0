//! The loopback-only engine API (GET /health /frame /anomaly /fall /baseline).
//!
//! Layout:
//! - [`source`]: frame feeds (simulator, replay; the hub plugs in through [`source::FrameFeed`]).
//! - [`runner`]: the thread that owns the pipeline and publishes [`runner::Snapshot`]s.
//! - [`records`]: the JSON records of the contract, including the fall and routine state structs
//!   that the fall monitor and routine learner fill.
//! - [`routes`], [`host_guard`], [`error`]: request handling as pure functions.
//! - [`server`]: the hyper listener with its limits.
//! - [`report`]: the offline `replay --report` evaluation.
//!
//! [`Engine::start`] binds before it serves, so callers (and tests) know the address as soon as
//! it returns.

pub mod error;
pub mod history;
pub mod host_guard;
pub mod records;
pub mod report;
pub mod routes;
pub mod runner;
pub mod server;
pub mod source;
pub mod watchers;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::alerts::{AlertSink, LogSink};
use crate::sensing::fall::FallConfig;
use crate::sensing::pipeline::PipelineConfig;
use crate::sensing::routine::RoutineConfig;
use crate::store::routine::{FILE as ROUTINE_FILE, RoutineStore};
use runner::{Runner, SnapshotReceiver};
use server::Limits;
use source::{FeedHandle, FrameFeed};

/// Default engine port; `SERVICE_ENGINE_PORT` overrides it.
pub const DEFAULT_PORT: u16 = 8799;

/// Environment variable naming the engine port.
pub const PORT_ENV: &str = "SERVICE_ENGINE_PORT";

/// How to run the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    pub pipeline: PipelineConfig,
    pub limits: Limits,
    pub fall: FallConfig,
    /// Run the fall monitor on simulated or replayed data, for demonstrations. Never learns.
    pub demo_fall: bool,
    pub routine: RoutineConfig,
    /// Where `routine.db` lives; `None` resolves `SERVICE_DATA_DIR` or the platform default.
    pub data_dir: Option<PathBuf>,
    /// Where fall, no-breathing and anomaly alerts go.
    pub alerts: SharedSink,
    /// The MQTT link `/health` reports (off unless the MQTT publisher shares its status).
    pub mqtt: crate::link::LinkStatus,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            pipeline: PipelineConfig::default(),
            limits: Limits::default(),
            fall: FallConfig::default(),
            demo_fall: false,
            routine: RoutineConfig::default(),
            data_dir: None,
            alerts: SharedSink::default(),
            mqtt: crate::link::LinkStatus::off(),
        }
    }
}

/// An alert sink shared by the watchers ([`LogSink`] by default).
#[derive(Clone)]
pub struct SharedSink(pub Arc<dyn AlertSink>);

impl Default for SharedSink {
    fn default() -> Self {
        Self(Arc::new(LogSink))
    }
}

impl std::fmt::Debug for SharedSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSink")
    }
}

/// Opens the routine store, or logs why the engine runs without one.
fn open_routine_store(dir: Option<PathBuf>) -> Option<RoutineStore> {
    let dir = match dir {
        Some(d) => d,
        None => match crate::store::data_dir() {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "no data directory; the routine will not be saved");
                return None;
            }
        },
    };
    match RoutineStore::open(&dir.join(ROUTINE_FILE)) {
        Ok((store, _)) => Some(store),
        Err(e) => {
            tracing::error!(error = %e, "cannot open the routine store; it will not be saved");
            None
        }
    }
}

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(
        "port {port} on 127.0.0.1 is already in use; stop the other program or choose another port with --port or {PORT_ENV}"
    )]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start a worker thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// A running engine: listener, runner and source.
pub struct Engine {
    addr: SocketAddr,
    snapshots: SnapshotReceiver,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
    runner: Runner,
}

impl Engine {
    /// Binds 127.0.0.1:`config.port`, starts the source and runner, and begins serving.
    /// Must be called inside a tokio runtime.
    pub async fn start(
        config: EngineConfig,
        feed: Box<dyn FrameFeed>,
    ) -> Result<Self, EngineError> {
        let started = Instant::now();
        let listener = server::bind(config.port).await.map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                EngineError::PortInUse { port: config.port }
            } else {
                EngineError::Bind {
                    port: config.port,
                    source,
                }
            }
        })?;
        let addr = listener.local_addr().map_err(|source| EngineError::Bind {
            port: config.port,
            source,
        })?;
        let kind = feed.kind();
        let feed = FeedHandle::spawn(feed).map_err(EngineError::Thread)?;
        let watch = watchers::Watch::new(watchers::WatchConfig {
            source: kind,
            fall: config.fall,
            demo_fall: config.demo_fall,
            routine: config.routine,
            store: open_routine_store(config.data_dir),
            sink: config.alerts.0,
        });
        let runner = Runner::spawn(feed, config.pipeline, watch).map_err(EngineError::Thread)?;
        let snapshots = runner.snapshots();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let server = tokio::spawn(server::serve(
            listener,
            runner.snapshots(),
            config.limits,
            started,
            config.mqtt,
            shutdown_rx,
        ));
        tracing::info!(%addr, source = %kind, "engine listening");
        Ok(Self {
            addr,
            snapshots,
            shutdown,
            server,
            runner,
        })
    }

    /// The bound address (always 127.0.0.1).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The published snapshots, for in-process readers.
    pub fn snapshots(&self) -> SnapshotReceiver {
        self.snapshots.clone()
    }

    /// Stops accepting, drains in-flight requests, then stops the runner and source.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Err(e) = self.server.await {
            tracing::error!(error = %e, "server task failed");
        }
        let runner = self.runner;
        // Joining threads blocks; keep it off the async workers.
        if tokio::task::spawn_blocking(move || runner.stop())
            .await
            .is_err()
        {
            tracing::error!("runner did not stop cleanly");
        }
        tracing::info!("engine stopped");
    }
}
