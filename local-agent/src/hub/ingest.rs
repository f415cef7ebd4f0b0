//! What both transports share: size limits, decoding, registration and forwarding of one
//! packet or line. Every outcome is counted; nothing here can panic on input or block.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use super::auth::{UdpTrust, canonical};
use super::feed::{FrameSink, Rejected};
use super::registry::{Admission, Arrival, Counters, Registry, Transport};
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
    pub trust: Arc<UdpTrust>,
    /// `None` when the engine runs another source: nodes are still registered, frames are
    /// counted as `not_fed`.
    sink: Option<FrameSink>,
    /// Zero of the arrival clock that stamps ADR-018 frames (they carry no capture time).
    epoch: Instant,
}

impl Ingest {
    pub fn new(registry: Arc<Registry>, trust: Arc<UdpTrust>, sink: Option<FrameSink>) -> Self {
        Self {
            registry,
            trust,
            sink,
            epoch: Instant::now(),
        }
    }

    pub fn feeds_pipeline(&self) -> bool {
        self.sink.is_some()
    }

    /// One binary packet (UDP datagram or WebSocket binary message) from `peer`.
    pub fn datagram(&self, bytes: &[u8], peer: IpAddr, transport: Transport, now: Instant) {
        let c = &self.registry.counters;
        if bytes.len() > MAX_DATAGRAM_BYTES {
            Counters::bump(&c.oversized);
            return;
        }
        let peer = canonical(peer);
        match decode_datagram(bytes) {
            Ok(Datagram::RawCsi(packet)) => {
                let reported = packet.node_id.to_string();
                let arrival = Arrival {
                    addr: peer,
                    transport,
                    format: WireFormat::Adr018,
                    reported_id: &reported,
                    rssi_dbm: packet.rssi_dbm(),
                };
                if let Admission::Accepted { id } = self.registry.admit(arrival, now) {
                    let t_s = now.saturating_duration_since(self.epoch).as_secs_f64();
                    match packet.to_parsed(t_s) {
                        Ok(parsed) => self.forward(id, parsed.frame),
                        Err(e) => {
                            tracing::debug!(%peer, reason = e.reason(), "raw CSI packet unusable");
                            Counters::bump(&c.malformed);
                        }
                    }
                }
            }
            // Feature state carries no CSI: it keeps the node registered and online, nothing more.
            Ok(Datagram::FeatureState(state)) => {
                let reported = state.node_id.to_string();
                let arrival = Arrival {
                    addr: peer,
                    transport,
                    format: WireFormat::Adr018,
                    reported_id: &reported,
                    rssi_dbm: None,
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
                };
                if let Admission::Accepted { id } = self.registry.admit(arrival, now) {
                    self.forward(id, frame);
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

    fn forward(&self, id: String, mut frame: CsiFrame) {
        let c = &self.registry.counters;
        let Some(sink) = &self.sink else {
            Counters::bump(&c.not_fed);
            return;
        };
        frame.node_id.clone_from(&id);
        match sink.offer(frame) {
            Ok(()) => {}
            Err(Rejected::Full) => {
                Counters::bump(&c.queue_full);
                self.registry.count_dropped(&id);
            }
            Err(Rejected::Closed) => Counters::bump(&c.not_fed),
        }
    }
}
