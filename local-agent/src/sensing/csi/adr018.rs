//! RuView ADR-018 binary packets (UDP port 5005, little-endian; sensing notes §3.4).
//!
//! One port carries several packet kinds told apart by a leading u32 magic. Earlier parsers
//! read the wrong offsets (count as u8, frequency as u16 at 8, sequence at 10, RSSI at 14) and
//! dropped the 0xC5110006 feature-state packets; the offsets here follow the table in §3.4.

use num_complex::Complex32;

use super::{
    CsiFrame, CsiShape, FrameMeta, MAX_BUFFER_BYTES, ParseError, ParsedFrame, WireFormat,
    channel_from_freq, check_buffer_len, csi_from_buffer, plausible_rssi,
};

pub const MAGIC_RAW_CSI: u32 = 0xC511_0001;
pub const MAGIC_VITALS: u32 = 0xC511_0002;
pub const MAGIC_FEATURE_STATE: u32 = 0xC511_0006;
/// Magics the firmware sends that this crate recognises but does not decode.
pub const MAGICS_NOT_DECODED: [u32; 4] = [0xC511_0003, 0xC511_0004, 0xC511_0005, 0xC511_0007];

pub const RAW_CSI_HEADER_BYTES: usize = 20;
pub const VITALS_BYTES: usize = 32;
pub const FEATURE_STATE_BYTES: usize = 60;

/// One UDP datagram or WebSocket binary message, classified by magic.
#[derive(Debug, Clone, PartialEq)]
pub enum Datagram {
    RawCsi(RawCsiPacket),
    Vitals(VitalsPacket),
    FeatureState(FeatureState),
    /// A magic the firmware is known to send (0003–0005, 0007) but that carries nothing the
    /// engine uses; callers ignore it.
    NotDecoded {
        magic: u32,
        len: usize,
    },
    /// Any other magic: stray traffic on the port or a newer firmware. Ignored, not an error,
    /// so one unknown sender cannot fill the rejection counters.
    UnknownMagic {
        magic: u32,
        len: usize,
    },
}

/// Decodes one datagram: the entry point for the hub's UDP socket and WebSocket messages.
///
/// Errors mean a packet claimed a known magic but was malformed (wrong length, bad CRC, bad
/// sizes); unknown magics are `Ok(Datagram::UnknownMagic)`.
pub fn decode_datagram(bytes: &[u8]) -> Result<Datagram, ParseError> {
    let magic = read_magic(bytes)?;
    Ok(match magic {
        MAGIC_RAW_CSI => Datagram::RawCsi(parse_raw_csi(bytes)?),
        MAGIC_VITALS => Datagram::Vitals(parse_vitals(bytes)?),
        MAGIC_FEATURE_STATE => Datagram::FeatureState(parse_feature_state(bytes)?),
        m if MAGICS_NOT_DECODED.contains(&m) => Datagram::NotDecoded {
            magic: m,
            len: bytes.len(),
        },
        m => Datagram::UnknownMagic {
            magic: m,
            len: bytes.len(),
        },
    })
}

fn read_magic(bytes: &[u8]) -> Result<u32, ParseError> {
    let head: [u8; 4] =
        bytes
            .get(..4)
            .and_then(|s| s.try_into().ok())
            .ok_or(ParseError::Truncated {
                needed: 4,
                got: bytes.len(),
            })?;
    Ok(u32::from_le_bytes(head))
}

fn expect_magic(bytes: &[u8], expected: u32) -> Result<(), ParseError> {
    let found = read_magic(bytes)?;
    if found == expected {
        Ok(())
    } else {
        Err(ParseError::WrongMagic { expected, found })
    }
}

/// Borrows exactly `N` bytes: shorter is truncated, longer is a length mismatch (fixed-size
/// packets never grow silently).
fn exact<const N: usize>(bytes: &[u8]) -> Result<&[u8; N], ParseError> {
    if bytes.len() < N {
        return Err(ParseError::Truncated {
            needed: N,
            got: bytes.len(),
        });
    }
    bytes.try_into().map_err(|_| ParseError::LengthMismatch {
        expected: N,
        got: bytes.len(),
    })
}

fn le_u16(b: [u8; 2]) -> u16 {
    u16::from_le_bytes(b)
}
fn le_u32(b: [u8; 4]) -> u32 {
    u32::from_le_bytes(b)
}
fn le_f32(b: [u8; 4], field: &'static str) -> Result<f32, ParseError> {
    let v = f32::from_le_bytes(b);
    if v.is_finite() {
        Ok(v)
    } else {
        Err(ParseError::invalid(field, &v.to_string()))
    }
}

/// Raw CSI packet, magic 0xC5110001: 20-byte header then the (imag, real) int8 buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCsiPacket {
    pub node_id: u8,
    pub n_antennas: u8,
    /// Subcarriers per antenna.
    pub n_subcarriers: u16,
    pub freq_mhz: u32,
    pub sequence: u32,
    /// RSSI byte as sent (i8 dBm); see [`RawCsiPacket::rssi_dbm`] for the validated value.
    pub rssi: i8,
    pub noise_floor: i8,
    /// Bytes 18–19: zero in the format, PPDU type and flags in newer firmware.
    pub reserved: [u8; 2],
    /// The buffer as sent, antenna-major, `2 · n_antennas · n_subcarriers` bytes.
    pub buffer: Vec<i8>,
}

impl RawCsiPacket {
    /// RSSI in dBm, `None` for the sentinel values some firmware sends.
    pub fn rssi_dbm(&self) -> Option<i16> {
        plausible_rssi(i16::from(self.rssi))
    }

    /// Wi-Fi channel derived from `freq_mhz`.
    pub fn channel(&self) -> Option<u16> {
        channel_from_freq(self.freq_mhz)
    }

    pub fn csi(&self) -> Vec<Complex32> {
        csi_from_buffer(&self.buffer, false)
    }

    /// Builds the shared frame. The packet carries no capture time, so the receiver supplies
    /// `t_s` (typically its monotonic arrival time). `meta.layout` stays `None`: the header
    /// names neither the chip family nor the secondary channel, which the layout depends on.
    pub fn to_parsed(&self, t_s: f64) -> Result<ParsedFrame, ParseError> {
        if !t_s.is_finite() {
            return Err(ParseError::NonFiniteTimestamp);
        }
        Ok(ParsedFrame {
            frame: CsiFrame {
                node_id: self.node_id.to_string(),
                t_s,
                rssi_dbm: self.rssi_dbm(),
                channel: self.channel(),
                format: WireFormat::Adr018,
                csi: self.csi(),
                // The buffer is antenna-major: one block of subcarriers per receive antenna.
                shape: CsiShape {
                    rx: self.n_antennas.max(1),
                    tx: 1,
                    bandwidth_mhz: None,
                },
            },
            meta: FrameMeta {
                sequence: Some(self.sequence),
                noise_floor_dbm: Some(i16::from(self.noise_floor)),
                freq_mhz: Some(self.freq_mhz),
                n_antennas: Some(self.n_antennas),
                declared_len: Some(2 * usize::from(self.n_subcarriers)),
                ..FrameMeta::default()
            },
        })
    }

    /// Serialises the packet (tests, simulators and the hub's loopback use it).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RAW_CSI_HEADER_BYTES + self.buffer.len());
        out.extend_from_slice(&MAGIC_RAW_CSI.to_le_bytes());
        out.push(self.node_id);
        out.push(self.n_antennas);
        out.extend_from_slice(&self.n_subcarriers.to_le_bytes());
        out.extend_from_slice(&self.freq_mhz.to_le_bytes());
        out.extend_from_slice(&self.sequence.to_le_bytes());
        out.extend_from_slice(&self.rssi.to_le_bytes());
        out.extend_from_slice(&self.noise_floor.to_le_bytes());
        out.extend_from_slice(&self.reserved);
        out.extend(self.buffer.iter().map(|b| b.to_le_bytes()[0]));
        out
    }
}

/// Decodes a 0xC5110001 raw CSI packet. The datagram length must equal
/// `20 + 2 · n_antennas · n_subcarriers`.
pub fn parse_raw_csi(bytes: &[u8]) -> Result<RawCsiPacket, ParseError> {
    expect_magic(bytes, MAGIC_RAW_CSI)?;
    let h: &[u8; RAW_CSI_HEADER_BYTES] = bytes
        .get(..RAW_CSI_HEADER_BYTES)
        .and_then(|s| s.try_into().ok())
        .ok_or(ParseError::Truncated {
            needed: RAW_CSI_HEADER_BYTES,
            got: bytes.len(),
        })?;
    let node_id = h[4];
    let n_antennas = h[5];
    let n_subcarriers = le_u16([h[6], h[7]]);
    if n_antennas == 0 {
        return Err(ParseError::invalid("n_antennas", "0"));
    }
    let buf_len = 2 * usize::from(n_antennas) * usize::from(n_subcarriers);
    if buf_len > MAX_BUFFER_BYTES {
        return Err(ParseError::BufferTooLarge {
            len: buf_len,
            max: MAX_BUFFER_BYTES,
        });
    }
    check_buffer_len(buf_len)?;
    let payload = &bytes[RAW_CSI_HEADER_BYTES..];
    if payload.len() < buf_len {
        return Err(ParseError::Truncated {
            needed: RAW_CSI_HEADER_BYTES + buf_len,
            got: bytes.len(),
        });
    }
    if payload.len() != buf_len {
        return Err(ParseError::LengthMismatch {
            expected: RAW_CSI_HEADER_BYTES + buf_len,
            got: bytes.len(),
        });
    }
    Ok(RawCsiPacket {
        node_id,
        n_antennas,
        n_subcarriers,
        freq_mhz: le_u32([h[8], h[9], h[10], h[11]]),
        sequence: le_u32([h[12], h[13], h[14], h[15]]),
        rssi: i8::from_le_bytes([h[16]]),
        noise_floor: i8::from_le_bytes([h[17]]),
        reserved: [h[18], h[19]],
        buffer: payload.iter().map(|&b| i8::from_le_bytes([b])).collect(),
    })
}

/// Decodes a bare (imag, real) buffer, as RuView recordings store it without the header.
pub fn parse_iq_buffer(bytes: &[u8]) -> Result<Vec<Complex32>, ParseError> {
    check_buffer_len(bytes.len())?;
    let buf: Vec<i8> = bytes.iter().map(|&b| i8::from_le_bytes([b])).collect();
    Ok(csi_from_buffer(&buf, false))
}

/// Firmware vitals, magic 0xC5110002 (32 bytes). Firmware output, not a reference: the bundled
/// recording sets the motion bit without the presence bit in 230 of 236 packets.
#[derive(Debug, Clone, PartialEq)]
pub struct VitalsPacket {
    pub node_id: u8,
    /// b0 presence, b1 fall, b2 motion.
    pub flags: u8,
    pub breathing_bpm: f32,
    pub heart_bpm: f32,
    pub rssi_dbm: Option<i16>,
    pub n_persons: u8,
    pub motion_energy: f32,
    pub presence_score: f32,
    pub timestamp_ms: u32,
}

/// Decodes a 0xC5110002 vitals packet (exactly 32 bytes).
pub fn parse_vitals(bytes: &[u8]) -> Result<VitalsPacket, ParseError> {
    expect_magic(bytes, MAGIC_VITALS)?;
    let b = exact::<VITALS_BYTES>(bytes)?;
    Ok(VitalsPacket {
        node_id: b[4],
        flags: b[5],
        breathing_bpm: f32::from(le_u16([b[6], b[7]])) / 100.0,
        // u32 → f32 rounds above 2^24 (1677 BPM), far outside any heart rate.
        heart_bpm: le_u32([b[8], b[9], b[10], b[11]]) as f32 / 10_000.0,
        rssi_dbm: plausible_rssi(i16::from(i8::from_le_bytes([b[12]]))),
        n_persons: b[13],
        motion_energy: le_f32([b[16], b[17], b[18], b[19]], "motion_energy")?,
        presence_score: le_f32([b[20], b[21], b[22], b[23]], "presence_score")?,
        timestamp_ms: le_u32([b[24], b[25], b[26], b[27]]),
    })
}

/// `quality_flags` of a feature-state packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QualityFlags(pub u16);

impl QualityFlags {
    pub const PRESENCE_VALID: u16 = 1 << 0;
    pub const RESP_VALID: u16 = 1 << 1;
    pub const HB_VALID: u16 = 1 << 2;
    pub const ANOMALY: u16 = 1 << 3;
    pub const ENV_SHIFT: u16 = 1 << 4;
    pub const DEGRADED: u16 = 1 << 5;
    pub const CALIBRATING: u16 = 1 << 6;
    pub const RECOMMEND_RECAL: u16 = 1 << 7;

    pub fn contains(self, bit: u16) -> bool {
        self.0 & bit == bit
    }
}

/// Node-side feature state, magic 0xC5110006 (60 bytes, CRC-32 protected), sent at 1–10 Hz by
/// default firmware. Scores are the node's own estimate; check `quality_flags` before use.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureState {
    pub node_id: u8,
    pub mode: u8,
    pub seq: u16,
    pub ts_us: u64,
    pub motion_score: f32,
    pub presence_score: f32,
    pub respiration_bpm: f32,
    pub respiration_conf: f32,
    pub heartbeat_bpm: f32,
    pub heartbeat_conf: f32,
    pub anomaly_score: f32,
    pub env_shift_score: f32,
    pub node_coherence: f32,
    pub quality_flags: QualityFlags,
}

impl FeatureState {
    /// Serialises the packet with a valid CRC (tests and simulators use it).
    pub fn to_bytes(&self) -> [u8; FEATURE_STATE_BYTES] {
        let mut b = [0u8; FEATURE_STATE_BYTES];
        b[0..4].copy_from_slice(&MAGIC_FEATURE_STATE.to_le_bytes());
        b[4] = self.node_id;
        b[5] = self.mode;
        b[6..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.ts_us.to_le_bytes());
        let floats = [
            self.motion_score,
            self.presence_score,
            self.respiration_bpm,
            self.respiration_conf,
            self.heartbeat_bpm,
            self.heartbeat_conf,
            self.anomaly_score,
            self.env_shift_score,
            self.node_coherence,
        ];
        for (i, v) in floats.iter().enumerate() {
            let off = 16 + 4 * i;
            b[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[52..54].copy_from_slice(&self.quality_flags.0.to_le_bytes());
        let crc = crc32fast::hash(&b[..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
        b
    }
}

/// Decodes a 0xC5110006 feature-state packet: exactly 60 bytes, CRC-32 (IEEE) of bytes 0..56
/// stored little-endian at 56. Non-finite scores are rejected so they cannot reach fusion.
pub fn parse_feature_state(bytes: &[u8]) -> Result<FeatureState, ParseError> {
    expect_magic(bytes, MAGIC_FEATURE_STATE)?;
    let b = exact::<FEATURE_STATE_BYTES>(bytes)?;
    let stored = le_u32([b[56], b[57], b[58], b[59]]);
    let computed = crc32fast::hash(&b[..56]);
    if stored != computed {
        return Err(ParseError::BadCrc { stored, computed });
    }
    let f = |off: usize, name: &'static str| -> Result<f32, ParseError> {
        let w: [u8; 4] =
            b.get(off..off + 4)
                .and_then(|s| s.try_into().ok())
                .ok_or(ParseError::Truncated {
                    needed: off + 4,
                    got: b.len(),
                })?;
        le_f32(w, name)
    };
    Ok(FeatureState {
        node_id: b[4],
        mode: b[5],
        seq: le_u16([b[6], b[7]]),
        ts_us: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        motion_score: f(16, "motion_score")?,
        presence_score: f(20, "presence_score")?,
        respiration_bpm: f(24, "respiration_bpm")?,
        respiration_conf: f(28, "respiration_conf")?,
        heartbeat_bpm: f(32, "heartbeat_bpm")?,
        heartbeat_conf: f(36, "heartbeat_conf")?,
        anomaly_score: f(40, "anomaly_score")?,
        env_shift_score: f(44, "env_shift_score")?,
        node_coherence: f(48, "node_coherence")?,
        quality_flags: QualityFlags(le_u16([b[52], b[53]])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_csi_offsets_follow_the_table() {
        let mut b = vec![0u8; 24];
        b[..4].copy_from_slice(&MAGIC_RAW_CSI.to_le_bytes());
        b[4] = 3; // node
        b[5] = 1; // antennas
        b[6..8].copy_from_slice(&2u16.to_le_bytes());
        b[8..12].copy_from_slice(&2437u32.to_le_bytes());
        b[12..16].copy_from_slice(&0x0102_0304u32.to_le_bytes());
        b[16] = (-55i8).to_le_bytes()[0];
        b[17] = (-95i8).to_le_bytes()[0];
        b[20..24].copy_from_slice(&[1, 2, 0xFF, 4]);
        let p = parse_raw_csi(&b).unwrap();
        assert_eq!(p.node_id, 3);
        assert_eq!(p.n_subcarriers, 2);
        assert_eq!(p.freq_mhz, 2437);
        assert_eq!(p.channel(), Some(6));
        assert_eq!(p.sequence, 0x0102_0304);
        assert_eq!(p.rssi_dbm(), Some(-55));
        assert_eq!(p.noise_floor, -95);
        let csi = p.csi();
        assert_eq!((csi[0].re, csi[0].im), (2.0, 1.0));
        assert_eq!((csi[1].re, csi[1].im), (4.0, -1.0));
        assert_eq!(p.to_bytes(), b);
    }

    #[test]
    fn channel_from_freq_covers_both_bands() {
        assert_eq!(channel_from_freq(2412), Some(1));
        assert_eq!(channel_from_freq(2484), Some(14));
        assert_eq!(channel_from_freq(5180), Some(36));
        assert_eq!(channel_from_freq(0), None);
        assert_eq!(channel_from_freq(2413), None);
    }
}
