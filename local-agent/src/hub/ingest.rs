//! What both transports share: size limits, authentication of UDP datagrams, decoding,
//! registration and forwarding of one packet or line. Every outcome is counted; nothing here can
//! panic on input or block.
//!
//! Which node input is accepted:
//! - a UDP datagram in a session envelope whose tag verifies under a live session, whose counter
//!   is fresh, and whose packet reports the session's node id (from any address);
//! - a plain UDP datagram from a loopback address (this computer);
//! - any message on a WebSocket that passed the token rule (the TCP connection is the proof).
//!
//! Everything else is dropped before it can touch the registry: a plain datagram from another
//! address (`unknown_sender`), an envelope that does not authenticate (`unauthenticated`), a
//! replayed one (`replayed`).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use super::auth::{canonical, is_loopback};
use super::diagnostics::{Csi, Probe};
use super::feed::{FrameSink, Rejected};
use super::registry::{Admission, Arrival, Counters, Registry, Transport};
use super::session::{self, Sessions, Verdict};
use crate::sensing::csi::{
    CsiFrame, Datagram, MAX_LINE_BYTES, Record, WireFormat, decode_datagram, parse_text_line,
};

/// Largest UDP datagram or WebSocket binary message accepted. The largest ADR-018 raw frame is
/// a 20-byte header plus a 2,048-byte buffer; anything bigger is not a frame.
pub const MAX_DATAGRAM_BYTES: usize = 4096;

/// Largest WebSocket text message (one esp-csi or ESP32-CSI-Tool line).
pub const MAX_TEXT_BYTES: usize = MAX_LINE_BYTES;

/// Shared ingest state.
#[derive(Debug)]
pub struct Ingest {
    pub registry: Arc<Registry>,
    pub sessions: Arc<Sessions>,
    /// `None` when the engine runs another source: nodes are still registered, frames are
    /// counted as `not_fed`.
    sink: Option<FrameSink>,
    /// Zero of the arrival clock that stamps ADR-018 frames (they carry no capture time).
    epoch: Instant,
}

impl Ingest {
    pub fn new(registry: Arc<Registry>, sessions: Arc<Sessions>, sink: Option<FrameSink>) -> Self {
        Self {
            registry,
            sessions,
            sink,
            epoch: Instant::now(),
        }
    }

    pub fn feeds_pipeline(&self) -> bool {
        self.sink.is_some()
    }

    /// One UDP datagram from `peer`. Returns the session id to send a rekey notice for when the
    /// datagram named a session the hub does not know.
    pub fn udp(&self, bytes: &[u8], peer: IpAddr, now: Instant) -> Option<u64> {
        let c = &self.registry.counters;
        let peer = canonical(peer);
        let envelope = session::parse_envelope(bytes);
        if envelope.is_none() && !is_loopback(peer) {
            Counters::bump(&c.unknown_sender);
            tracing::debug!(%peer, "untagged datagram from a remote sender dropped");
            return None;
        }
        if bytes.len() > MAX_DATAGRAM_BYTES {
            Counters::bump(&c.oversized);
            return None;
        }
        match envelope {
            None => self.packet(bytes, peer, Transport::Udp, now, None),
            Some(Err(())) => Counters::bump(&c.malformed),
            Some(Ok(env)) => match self.sessions.verify(&env, now) {
                Verdict::Accepted { node_id } => {
                    self.packet(env.inner, peer, Transport::Udp, now, Some(node_id));
                }
                Verdict::UnknownSession => {
                    Counters::bump(&c.unauthenticated);
                    return Some(env.session_id);
                }
                Verdict::BadTag => {
                    tracing::debug!(%peer, "datagram with a bad session tag dropped");
                    Counters::bump(&c.unauthenticated);
                }
                Verdict::Replayed => Counters::bump(&c.replayed),
            },
        }
        None
    }

    /// One WebSocket binary message from `peer` (the connection passed the token rule).
    pub fn datagram(&self, bytes: &[u8], peer: IpAddr, transport: Transport, now: Instant) {
        if bytes.len() > MAX_DATAGRAM_BYTES {
            Counters::bump(&self.registry.counters.oversized);
            return;
        }
        self.packet(bytes, canonical(peer), transport, now, None);
    }

    /// One authenticated ADR-018 packet. `bound` is the node id of the session it came under:
    /// a packet reporting another id is refused.
    fn packet(
        &self,
        bytes: &[u8],
        peer: IpAddr,
        transport: Transport,
        now: Instant,
        bound: Option<u8>,
    ) {
        let c = &self.registry.counters;
        let claims = |node_id: u8| {
            let ok = bound.is_none_or(|b| b == node_id);
            if !ok {
                tracing::debug!(%peer, node_id, "packet claims another node id than its session");
                Counters::bump(&c.unauthenticated);
            }
            ok
        };
        match decode_datagram(bytes) {
            Ok(Datagram::RawCsi(packet)) => {
                if !claims(packet.node_id) {
                    return;
                }
                let reported = packet.node_id.to_string();
                let arrival = Arrival {
                    addr: peer,
                    transport,
                    format: WireFormat::Adr018,
                    reported_id: &reported,
                    rssi_dbm: packet.rssi_dbm(),
                    probe: Probe {
                        channel: packet.channel(),
                        csi: Csi::Iq(&packet.buffer),
                        ..Probe::default()
                    },
                };
                if let Admission::Accepted { id, queued } = self.registry.admit(arrival, now) {
                    let t_s = now.saturating_duration_since(self.epoch).as_secs_f64();
                    match packet.to_parsed(t_s) {
                        Ok(parsed) => self.forward(id, &queued, parsed.frame),
                        Err(e) => {
                            tracing::debug!(%peer, reason = e.reason(), "raw CSI packet unusable");
                            Counters::bump(&c.malformed);
                        }
                    }
                }
            }
            // Feature state carries no CSI: it keeps the node registered and online, nothing more.
            Ok(Datagram::FeatureState(state)) => {
                if !claims(state.node_id) {
                    return;
                }
                let reported = state.node_id.to_string();
                let arrival = Arrival {
                    addr: peer,
                    transport,
                    format: WireFormat::Adr018,
                    reported_id: &reported,
                    rssi_dbm: None,
                    probe: Probe::default(),
                };
                let _ = self.registry.admit(arrival, now);
            }
            Ok(
                Datagram::Vitals(_) | Datagram::NotDecoded { .. } | Datagram::UnknownMagic { .. },
            ) => Counters::bump(&c.ignored),
            Err(e) => {
                tracing::debug!(%peer, reason = e.reason(), "malformed datagram");
                Counters::bump(&c.malformed);
            }
        }
    }

    /// One text line (WebSocket text message): esp-csi `CSI_DATA` or ESP32-CSI-Tool CSV.
    pub fn line(&self, text: &str, peer: IpAddr, now: Instant) {
        let c = &self.registry.counters;
        if text.len() > MAX_TEXT_BYTES {
            Counters::bump(&c.oversized);
            return;
        }
        let peer = canonical(peer);
        // RuView JSONL is a recording format, not something a node sends.
        if text.trim_start().starts_with('{') {
            Counters::bump(&c.malformed);
            return;
        }
        match parse_text_line(text) {
            Ok(Record::Frame(parsed)) => {
                let frame = parsed.frame;
                let arrival = Arrival {
                    addr: peer,
                    transport: Transport::Websocket,
                    format: frame.format,
                    reported_id: &frame.node_id,
                    rssi_dbm: frame.rssi_dbm,
                    probe: Probe {
                        node_t_s: Some(frame.t_s),
                        channel: frame.channel,
                        csi: Csi::Complex(&frame.csi),
                        reported_gain: parsed.meta.gain,
                    },
                };
                if let Admission::Accepted { id, queued } = self.registry.admit(arrival, now) {
                    self.forward(id, &queued, frame);
                }
            }
            // Boot messages and header rows that serial bridges forward with the data.
            Ok(Record::Skipped(_)) => Counters::bump(&c.ignored),
            Err(e) => {
                tracing::debug!(%peer, reason = e.reason(), "malformed line");
                Counters::bump(&c.malformed);
            }
        }
    }

    fn forward(&self, id: String, queued: &Arc<AtomicU32>, mut frame: CsiFrame) {
        let c = &self.registry.counters;
        let Some(sink) = &self.sink else {
            Counters::bump(&c.not_fed);
            return;
        };
        frame.node_id.clone_from(&id);
        match sink.offer(frame, queued, self.registry.fleet().nodes_online) {
            Ok(()) => {}
            Err(Rejected::Full) => {
                Counters::bump(&c.queue_full);
                self.registry.count_dropped(&id);
            }
            Err(Rejected::Closed) => Counters::bump(&c.not_fed),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::hub::feed;
    use crate::hub::registry::RegistryConfig;
    use crate::sensing::csi::RawCsiPacket;

    fn outcomes(registry: &Registry) -> u64 {
        let c = &registry.counters;
        let frames: u64 = registry.view().iter().map(|n| n.frames).sum();
        frames
            + c.rate_limited.load(Ordering::Relaxed)
            + c.too_many_nodes.load(Ordering::Relaxed)
            + c.oversized.load(Ordering::Relaxed)
            + c.malformed.load(Ordering::Relaxed)
            + c.ignored.load(Ordering::Relaxed)
    }

    #[test]
    fn every_input_has_exactly_one_outcome_and_frames_carry_the_node_id() {
        let registry = Arc::new(Registry::new(RegistryConfig::default()));
        let (sink, feed) = feed::channel(Arc::clone(&registry));
        let ingest = Ingest::new(
            Arc::clone(&registry),
            Arc::new(Sessions::default()),
            Some(sink),
        );
        let peer: IpAddr = "192.0.2.7".parse().unwrap();
        let now = Instant::now();
        let raw = RawCsiPacket {
            node_id: 3,
            n_antennas: 1,
            n_subcarriers: 4,
            freq_mhz: 2437,
            sequence: 1,
            rssi: -40,
            noise_floor: -90,
            reserved: [0, 0],
            buffer: vec![1, 2, 3, 4, 5, 6, 7, 8],
        }
        .to_bytes();
        let mut vitals = 0xC511_0002_u32.to_le_bytes().to_vec();
        vitals.resize(32, 0);
        let inputs: Vec<Vec<u8>> = vec![
            raw.clone(),
            raw[..10].to_vec(),
            vec![],
            vec![0xAB; 5000],
            vitals,
            0xDEAD_BEEF_u32.to_le_bytes().to_vec(),
        ];
        for (i, input) in inputs.iter().enumerate() {
            ingest.datagram(input, peer, Transport::Udp, now);
            assert_eq!(outcomes(&registry), i as u64 + 1, "datagram {i}");
        }
        let base = outcomes(&registry);
        let lines = [
            "CSI_DATA,1,aa:bb:cc:dd:ee:ff,-50,11,1,0,0,0,0,0,0,0,0,-90,0,6,0,1000,0,0,0,8,1,\"[1,2,3,4,5,6,7,8]\"",
            "I (312) boot: not CSI",
            "{\"type\":\"raw_csi\"}",
            "CSI_DATA,garbage",
        ];
        for (i, line) in lines.iter().enumerate() {
            ingest.line(line, peer, now);
            assert_eq!(outcomes(&registry), base + i as u64 + 1, "line {i}");
        }
        let ids: Vec<String> = registry.view().into_iter().map(|n| n.id).collect();
        assert_eq!(ids, ["node-3", "node-aa:bb:cc:dd:ee:ff"]);
        // The forwarded frames carry the hub's node id, so the pipeline keeps nodes apart.
        drop(ingest);
        let queued: Vec<String> = std::iter::from_fn(|| feed.try_recv_for_test())
            .map(|f| f.node_id)
            .collect();
        assert_eq!(queued, ["node-3", "node-aa:bb:cc:dd:ee:ff"]);
    }

    #[test]
    fn remote_udp_is_accepted_only_under_a_session() {
        let registry = Arc::new(Registry::new(RegistryConfig::default()));
        let sessions = Arc::new(Sessions::default());
        let ingest = Ingest::new(Arc::clone(&registry), Arc::clone(&sessions), None);
        let remote: IpAddr = "192.0.2.7".parse().unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let now = Instant::now();
        let packet = |node_id: u8| {
            RawCsiPacket {
                node_id,
                n_antennas: 1,
                n_subcarriers: 4,
                freq_mhz: 2437,
                sequence: 1,
                rssi: -40,
                noise_floor: -90,
                reserved: [0, 0],
                buffer: vec![1, 2, 3, 4, 5, 6, 7, 8],
            }
            .to_bytes()
        };
        let c = &registry.counters;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!(ingest.udp(&packet(1), remote, now), None);
        assert_eq!(load(&c.unknown_sender), 1);
        assert_eq!(ingest.udp(&packet(1), local, now), None);
        let grant = sessions.open(remote, 2, now);
        let good = session::seal(&grant.key, grant.session_id, 1, &packet(2));
        assert_eq!(ingest.udp(&good, remote, now), None);
        assert_eq!(ingest.udp(&good, remote, now), None);
        assert_eq!(load(&c.replayed), 1);
        let other_node = session::seal(&grant.key, grant.session_id, 2, &packet(3));
        assert_eq!(ingest.udp(&other_node, remote, now), None);
        let forged = session::seal(&[1; 32], grant.session_id, 3, &packet(2));
        assert_eq!(ingest.udp(&forged, remote, now), None);
        let unknown = session::seal(&grant.key, 77, 1, &packet(2));
        assert_eq!(ingest.udp(&unknown, remote, now), Some(77));
        assert_eq!(load(&c.unauthenticated), 3);
        let ids: Vec<String> = registry.view().into_iter().map(|n| n.id).collect();
        assert_eq!(
            ids,
            ["node-1", "node-2"],
            "loopback node 1 and the session's node 2"
        );
    }
}
