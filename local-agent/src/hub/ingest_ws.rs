//! WebSocket ingest: `GET /ingest` on the hub port, upgraded by hyper and spoken by
//! tokio-tungstenite. Text messages are esp-csi / ESP32-CSI-Tool lines, binary messages are
//! ADR-018 packets. The token rule has already been applied by the server when this runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::ingest::{Ingest, MAX_TEXT_BYTES};
use super::registry::{Counters, Transport};

/// Most `/ingest` WebSockets open at once (one per node is the norm).
pub const MAX_CONNECTIONS: usize = 64;

/// A node WebSocket with no message (not even a ping) for this long is closed: nodes send CSI
/// at 1 Hz or more, so silence this long is a dead link holding a connection slot.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why an `/ingest` request is not a valid WebSocket handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error(
        "/ingest is a WebSocket endpoint: send Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key"
    )]
    NotUpgrade,
}

fn header_has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// Checks the handshake headers and returns the accept key.
pub fn accept_key(headers: &HeaderMap) -> Result<String, HandshakeError> {
    let upgrade = header_has_token(headers, CONNECTION, "upgrade")
        && header_has_token(headers, UPGRADE, "websocket")
        && headers
            .get(SEC_WEBSOCKET_VERSION)
            .is_some_and(|v| v.as_bytes() == b"13");
    let key = headers.get(SEC_WEBSOCKET_KEY).filter(|_| upgrade);
    key.map(|k| derive_accept_key(k.as_bytes()))
        .ok_or(HandshakeError::NotUpgrade)
}

/// Answers the handshake with 101 and spawns the connection's reader.
pub fn upgrade(
    mut req: http::Request<Incoming>,
    accept: String,
    permit: OwnedSemaphorePermit,
    peer: SocketAddr,
    ingest: Arc<Ingest>,
    shutdown: watch::Receiver<bool>,
) -> Response<Full<Bytes>> {
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        // Held for the connection's lifetime.
        let _permit = permit;
        match on_upgrade.await {
            Ok(upgraded) => {
                let config = WebSocketConfig::default()
                    .max_message_size(Some(MAX_TEXT_BYTES))
                    .max_frame_size(Some(MAX_TEXT_BYTES));
                let ws = WebSocketStream::from_raw_socket(
                    TokioIo::new(upgraded),
                    Role::Server,
                    Some(config),
                )
                .await;
                read_messages(ws, peer, ingest, shutdown).await;
            }
            Err(e) => tracing::debug!(%peer, error = %e, "WebSocket upgrade failed"),
        }
    });
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(SEC_WEBSOCKET_ACCEPT, v);
    }
    response
}

async fn read_messages<S>(
    mut ws: WebSocketStream<S>,
    peer: SocketAddr,
    ingest: Arc<Ingest>,
    mut shutdown: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    tracing::info!(%peer, "node connected over WebSocket");
    loop {
        let message = tokio::select! {
            m = tokio::time::timeout(IDLE_TIMEOUT, ws.next()) => match m {
                Ok(m) => m,
                Err(_) => {
                    tracing::info!(%peer, idle_s = IDLE_TIMEOUT.as_secs(), "node WebSocket idle; closing");
                    break;
                }
            },
            _ = shutdown.changed() => break,
        };
        let now = Instant::now();
        match message {
            Some(Ok(Message::Text(text))) => ingest.line(text.as_str(), peer.ip(), now),
            Some(Ok(Message::Binary(bytes))) => {
                ingest.datagram(&bytes, peer.ip(), Transport::Websocket, now);
            }
            // Pings are answered by tungstenite on the next read; pongs and raw frames carry
            // nothing for us.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(_))) | None => break,
            Some(Err(WsError::Capacity(e))) => {
                // A message above the limit: the protocol requires closing the connection.
                tracing::info!(%peer, error = %e, "WebSocket message too large; closing");
                Counters::bump(&ingest.registry.counters.oversized);
                break;
            }
            Some(Err(e @ (WsError::Protocol(_) | WsError::Utf8(_)))) => {
                tracing::info!(%peer, error = %e, "WebSocket protocol violation; closing");
                Counters::bump(&ingest.registry.counters.malformed);
                break;
            }
            Some(Err(e)) => {
                tracing::debug!(%peer, error = %e, "WebSocket connection ended");
                break;
            }
        }
    }
    let _ = ws.close(None).await;
    tracing::info!(%peer, "node WebSocket closed");
}
