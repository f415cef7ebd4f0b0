//! UDP ingest on `SERVICE_CSI_PORT`: one socket for every ADR-018 packet kind.
//!
//! A remote datagram is checked before any decoding ([`Ingest::udp`]): an untagged one costs one
//! comparison, one naming an unknown session one lookup, a forged tag one HMAC. A datagram
//! naming an unknown session is answered with a rate-limited 12-byte rekey notice (see
//! [`super::session`]). After each wake-up the socket is drained with non-blocking
//! reads, which keeps the per-datagram overhead low at high packet rates.

use std::sync::Arc;
use std::time::Instant;

use tokio::net::UdpSocket;
use tokio::sync::watch;

use super::ingest::Ingest;
use super::session::rekey_notice;

/// Datagrams handled per wake-up before yielding to other tasks.
const DRAIN_BATCH: usize = 256;

/// Receives until `shutdown` turns true.
pub async fn run(socket: UdpSocket, ingest: Arc<Ingest>, mut shutdown: watch::Receiver<bool>) {
    // Room for the largest possible datagram, so an oversized one is measured, not truncated
    // into something that might parse.
    let mut buf = vec![0_u8; 65_536];
    loop {
        tokio::select! {
            ready = socket.readable() => {
                if let Err(e) = ready {
                    tracing::warn!(error = %e, "UDP socket not readable");
                    continue;
                }
            }
            _ = shutdown.changed() => break,
        }
        for _ in 0..DRAIN_BATCH {
            match socket.try_recv_from(&mut buf) {
                Ok((len, peer)) => {
                    let now = Instant::now();
                    if let Some(session) = ingest.udp(&buf[..len], peer.ip(), now)
                        && ingest.sessions.may_send_rekey(now)
                    {
                        // Best effort: a full send buffer only delays the node's rekey.
                        let _ = socket.try_send_to(&rekey_notice(session), peer);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // ICMP errors surface as ConnectionReset on some platforms; they concern a
                // previous send, not this socket.
                Err(e) => {
                    tracing::debug!(error = %e, "UDP receive error");
                    break;
                }
            }
        }
        tokio::task::yield_now().await;
    }
    tracing::debug!("UDP ingest stopped");
}
