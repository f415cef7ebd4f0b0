//! The hyper listener: loopback-only, bounded, and shut down gracefully.
//!
//! Limits exist because the engine runs on a user's computer next to a browser: a stuck or
//! hostile local client must not exhaust memory, file descriptors or the runtime's threads.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::routes::{self, RequestHead, RouteContext};
use super::runner::SnapshotReceiver;

/// Limits of the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections at once; further clients wait in the kernel's accept backlog.
    pub max_connections: usize,
    /// Time allowed to send a complete request head (also ends idle keep-alive connections).
    pub header_read_timeout: Duration,
    /// Largest request head accepted, bytes; bigger heads get `431` from hyper.
    pub max_header_bytes: usize,
    /// Most header fields in one request.
    pub max_headers: usize,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Binds the engine's listener on 127.0.0.1 only. Port 0 picks a free port.
pub async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
}

/// Serves until `shutdown` turns true, then drains in-flight requests for up to the grace period.
/// Waits for a connection slot and the next connection, with Nagle off. `None` once shutdown is
/// requested. Accept errors (usually EMFILE or a reset during the handshake) are logged and
/// retried after a short pause rather than ending the server. Shared by the engine and the hub.
pub(crate) async fn accept_next(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<(OwnedSemaphorePermit, tokio::net::TcpStream, SocketAddr)> {
    let permit = tokio::select! {
        permit = Arc::clone(permits).acquire_owned() => permit.ok()?,
        _ = shutdown.changed() => return None,
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return Some((permit, stream, peer));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return None,
        }
    }
}

pub async fn serve(
    listener: TcpListener,
    snapshots: SnapshotReceiver,
    limits: Limits,
    started: Instant,
    mqtt: crate::link::LinkStatus,
    mut shutdown: watch::Receiver<bool>,
) {
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(e) => {
            tracing::error!(error = %e, "listener has no local address");
            return;
        }
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();

    loop {
        let Some((permit, stream, peer)) = accept_next(&listener, &permits, &mut shutdown).await
        else {
            break;
        };
        let snapshots = snapshots.clone();
        let mqtt = mqtt.clone();
        let service = service_fn(move |req: Request<Incoming>| {
            let snapshot = Arc::clone(&snapshots.borrow());
            let mqtt = mqtt.clone();
            async move {
                let started_req = Instant::now();
                let has_body = !req.body().is_end_stream();
                let head = RequestHead {
                    method: req.method(),
                    uri: req.uri(),
                    headers: req.headers(),
                    has_body,
                };
                let ctx = RouteContext {
                    port,
                    started,
                    now: started_req,
                    snapshot: &snapshot,
                    mqtt: &mqtt,
                };
                let response = routes::respond(head, ctx);
                let status = response.status().as_u16();
                if status >= 400 {
                    tracing::info!(%peer, method = %req.method(), path = %req.uri().path(), status, "request refused");
                } else {
                    tracing::debug!(%peer, method = %req.method(), path = %req.uri().path(), status, "request");
                }
                Ok::<Response<_>, Infallible>(response)
            }
        });
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections closed"),
        _ = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!(grace_s = limits.shutdown_grace.as_secs(), "connections still open after the grace period; closing");
        }
    }
}
