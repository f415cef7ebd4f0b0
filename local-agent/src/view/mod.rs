//! The live view: a page on its own loopback port that shows what the agent sees and why.
//!
//! The engine's port keeps refusing every request that carries `Origin` or `Referer` (it serves
//! scripts, not pages), so the view has its own listener on 127.0.0.1 (`SERVICE_VIEW_PORT`,
//! default 8798), a per-start token ([`auth`]), and everything it needs embedded in the binary:
//! the page, its script and styles (`assets/`), drawn with canvas by our own code. No request
//! leaves the computer.
//!
//! - [`crate::engine::history`]: the 1 Hz recorder behind the timelines (runs whether or not
//!   anyone watches).
//! - [`adapter`]: the page's state, built from the engine's snapshot, the hub and the alert log.
//! - [`server`]: routes, Server-Sent Events, the away switch, the doctor's findings.
//! - [`crate::runtime`]: the runtime file `open` and `doctor` read, which the view writes.

pub mod adapter;
pub mod auth;
pub mod server;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::alerts::schedule::AwaySchedule;
use crate::alerts::{AlertLog, AwayMode};
use crate::doctor;
use crate::engine::server::Limits;
use crate::runtime;
use auth::Token;
use server::ViewState;

/// Default port of the live view.
pub const DEFAULT_PORT: u16 = 8798;
/// Environment variable naming the view's port.
pub const PORT_ENV: &str = "SERVICE_VIEW_PORT";

/// Why the view could not start.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(
        "live view port {port} on 127.0.0.1 is already in use; stop the other program or choose another port with --view-port or {PORT_ENV}"
    )]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}

/// What the view shows and changes.
pub struct ViewDeps {
    /// The doctor's context with the running agent's live state.
    pub doctor: doctor::Context,
    pub alerts: Arc<dyn AlertLog>,
    pub away: AwayMode,
    pub schedule: AwaySchedule,
    pub started: Instant,
    /// Where to write the runtime file (`None`: no file, for tests).
    pub runtime_dir: Option<PathBuf>,
}

/// A running view.
pub struct View {
    addr: SocketAddr,
    token: Token,
    runtime_dir: Option<PathBuf>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl View {
    /// Binds 127.0.0.1:`port` (0 picks a free one) and serves. Needs a tokio runtime.
    pub async fn start(port: u16, mut deps: ViewDeps) -> Result<Self, ViewError> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::AddrInUse {
                    ViewError::PortInUse { port }
                } else {
                    ViewError::Bind { port, source }
                }
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ViewError::Bind { port, source })?;
        if let Some(live) = deps.doctor.live.as_mut() {
            live.view_addr = Some(addr);
        }
        deps.doctor.ports.view = addr.port();
        let token = Token::random();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let state = Arc::new(ViewState::new(
            addr.port(),
            token.clone(),
            deps.doctor,
            deps.alerts,
            deps.away,
            deps.schedule,
            deps.started,
            shutdown_rx.clone(),
        ));
        let limits = Limits {
            max_connections: 32,
            ..Limits::default()
        };
        let task = tokio::spawn(server::serve(listener, state, limits, shutdown_rx));
        let view = Self {
            addr,
            token,
            runtime_dir: deps.runtime_dir,
            shutdown,
            task,
        };
        if let Some(dir) = &view.runtime_dir {
            let info = runtime::RuntimeInfo {
                url: view.url(),
                port: addr.port(),
                token: view.token.as_str().to_string(),
                pid: std::process::id(),
            };
            if let Err(e) = runtime::write(dir, &info) {
                tracing::warn!(error = %e, "cannot write the runtime file; `local-agent open` and `doctor` will not find this agent");
            }
        }
        tracing::info!(%addr, "live view listening");
        Ok(view)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address with this start's token.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token.as_str())
    }

    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Ends open pages' event streams, stops listening and removes the runtime file.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "live view task failed");
        }
        if let Some(dir) = &self.runtime_dir {
            runtime::remove_own(dir);
        }
    }
}
