//! The CSI frame type shared by every source, parser and estimator, and the parsers that
//! produce it from each wire and file format.
//!
//! Entry points: [`decode_datagram`] for UDP/WebSocket binary messages (ADR-018),
//! [`parse_text_line`] for any line of a text recording (it dispatches to
//! [`parse_esp_csi_line`], [`parse_csi_tool_line`] and [`parse_jsonl_line`]) and [`parse_npz`]
//! for ESPectre captures. Each returns the frame with a [`FrameMeta`] of the extra fields the
//! format carries, or a [`ParseError`] whose [`ParseError::reason`] is a stable key for counting.

use num_complex::Complex32;

/// The wire or file format a frame was decoded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WireFormat {
    /// esp-csi `CSI_DATA` serial lines.
    EspCsi,
    /// ESP32-CSI-Tool CSV lines.
    Esp32CsiTool,
    /// ADR-018 binary UDP frame (magic 0xC5110001), also inside RuView JSONL recordings.
    Adr018,
    /// ESPectre `.npz` captures.
    Npz,
    /// The embedded simulator.
    Simulator,
    /// Atheros CSI Tool (ath9k) captures: the binary log and the published CSV export.
    AtherosCsiTool,
}

/// How a frame's buffer is organised: receive chains, transmit streams (space-time streams the
/// sounding PPDU carried) and the channel bandwidth it was measured over.
///
/// `csi` holds `rx · tx` blocks of equal length, receive-chain major: block `r · tx + t` is the
/// channel from transmit stream `t` to receive chain `r`, tones in buffer order. A frame whose
/// length is not a multiple of `rx · tx` is read as one block. Chains of one receiver share its
/// oscillator, so the product of two chains on a tone, `h_r · conj(h_s)`, cancels the per-packet
/// phase offsets every packet carries; single-chain radios (the ESP32) offer no such pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CsiShape {
    pub rx: u8,
    pub tx: u8,
    /// Bandwidth the tones span, MHz, when the format says (20, 40, 80).
    pub bandwidth_mhz: Option<u16>,
}

impl Default for CsiShape {
    fn default() -> Self {
        Self::SINGLE
    }
}

impl CsiShape {
    /// One chain, one stream, bandwidth unknown.
    pub const SINGLE: Self = Self {
        rx: 1,
        tx: 1,
        bandwidth_mhz: None,
    };

    /// One chain and stream over a known bandwidth.
    pub fn single(bandwidth_mhz: Option<u16>) -> Self {
        Self {
            bandwidth_mhz,
            ..Self::SINGLE
        }
    }

    /// Blocks (chain-stream links) in a buffer of `len` values: `rx · tx` when it divides `len`,
    /// else 1.
    pub fn blocks(&self, len: usize) -> usize {
        let b = usize::from(self.rx.max(1)) * usize::from(self.tx.max(1));
        if b > 1 && len >= b && len.is_multiple_of(b) {
            b
        } else {
            1
        }
    }
}

/// One channel-state measurement from one node.
///
/// `csi` holds the complex subcarrier values in buffer order (LLTF first). Subcarriers that the
/// radio reports as invalid (the classic ESP32's first word, null, guard and DC subcarriers) are
/// exactly `0 + 0i`; estimators exclude subcarriers that stay zero.
#[derive(Debug, Clone, PartialEq)]
pub struct CsiFrame {
    /// Node identifier as reported by the node (or derived from its MAC address).
    pub node_id: String,
    /// Capture time in seconds on the source's own clock. Only differences are meaningful.
    pub t_s: f64,
    /// Received signal strength, dBm, when the format carries a real value.
    pub rssi_dbm: Option<i16>,
    /// Wi-Fi primary channel, when known.
    pub channel: Option<u16>,
    pub format: WireFormat,
    pub csi: Vec<Complex32>,
    /// Chains, streams and bandwidth of `csi`.
    pub shape: CsiShape,
}

pub mod adr018;
pub mod atheros;
pub mod csi_tool;
pub mod error;
pub mod esp_csi;
pub mod jsonl;
pub mod layout;
mod line;
pub mod npz;
mod text;

pub use adr018::{
    Datagram, FeatureState, QualityFlags, RawCsiPacket, VitalsPacket, decode_datagram,
    parse_feature_state, parse_iq_buffer, parse_raw_csi, parse_vitals,
};
pub use csi_tool::parse_csi_tool_line;
pub use error::ParseError;
pub use esp_csi::parse_esp_csi_line;
pub use jsonl::parse_jsonl_line;
pub use layout::{
    ChipFamily, LtfField, PpduKind, SecondaryChannel, SubcarrierLayout, ZeroSubcarrierTracker,
    layout_for, zero_subcarriers,
};
pub use line::parse_text_line;
pub use npz::{NpzMeta, NpzRecording, parse_npz};
pub use text::{Record, SkipKind};

/// Largest CSI buffer accepted, in subcarriers. The biggest real layout is 612 bytes (306
/// subcarriers, HT40 STBC) and 4 antennas × 256 in ADR-018; anything beyond this is corrupt or
/// hostile and would only cost memory.
pub const MAX_SUBCARRIERS: usize = 1024;

/// Largest CSI buffer accepted, in bytes (two bytes per subcarrier).
pub const MAX_BUFFER_BYTES: usize = 2 * MAX_SUBCARRIERS;

/// Longest text record accepted, in bytes. A full-size buffer printed as `-128,` is about
/// 10 KiB, so 32 KiB leaves room for headers without letting one corrupt line (a serial port
/// that lost its newlines) grow without bound.
pub const MAX_LINE_BYTES: usize = 32 * 1024;

/// A decoded frame plus the format-specific metadata that does not belong in [`CsiFrame`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedFrame {
    pub frame: CsiFrame,
    pub meta: FrameMeta,
}

/// Metadata some formats carry beside the buffer. Every field is optional because no format
/// carries all of them; absent means "not in this format", never a default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameMeta {
    /// Transmitter MAC as printed by the node, lowercase `aa:bb:cc:dd:ee:ff`.
    pub mac: Option<String>,
    /// Per-node packet counter (esp-csi `id`/`seq`, ADR-018 `seq`).
    pub sequence: Option<u32>,
    /// Noise floor as reported by the radio (dBm on most chips).
    pub noise_floor_dbm: Option<i16>,
    /// PHY rate code as reported by the radio.
    pub rate: Option<u16>,
    /// 0 = non-HT, 1 = HT, 3 = VHT (classic ESP32 `sig_mode`).
    pub sig_mode: Option<u8>,
    pub mcs: Option<u8>,
    /// Channel bandwidth of the received PPDU, 20 or 40 MHz.
    pub bandwidth_mhz: Option<u16>,
    pub secondary_channel: Option<SecondaryChannel>,
    pub stbc: Option<bool>,
    /// Whether the first 4 buffer bytes were invalid and have been zeroed.
    pub first_word_invalid: bool,
    /// The `len` the record declares. It can disagree with the real buffer (ESP32-CSI-Tool
    /// LLTF-only builds), so the buffer is always sized by counting values.
    pub declared_len: Option<usize>,
    /// Buffer layout, when the length and secondary channel identify one.
    pub layout: Option<SubcarrierLayout>,
    /// Centre frequency, MHz (ADR-018).
    pub freq_mhz: Option<u32>,
    /// Antennas concatenated in the buffer (ADR-018); the buffer is antenna-major.
    pub n_antennas: Option<u8>,
    /// Wall-clock time the node attached, Unix or node-relative seconds (ESP32-CSI-Tool).
    pub real_timestamp_s: Option<f64>,
    /// ESP32-CSI-Tool role (`AP`, `STA`, `PASSIVE`).
    pub role: Option<String>,
    /// (AGC gain, FFT gain) as the radio reports them (esp-csi lines of C5/C6 chips). A node
    /// whose gain changes is not gain-locked.
    pub gain: Option<(i32, i32)>,
}

/// Converts an (imag, real) int8 buffer into subcarriers: `k = real buf[2k+1] + i·buf[2k]`.
///
/// When `first_word_invalid` is set, the first 4 bytes become zero so the first two subcarriers
/// read as null and estimators drop them with the other always-zero subcarriers.
pub(crate) fn csi_from_buffer(buf: &[i8], first_word_invalid: bool) -> Vec<Complex32> {
    buf.chunks_exact(2)
        .enumerate()
        .map(|(k, pair)| {
            if first_word_invalid && k < 2 {
                Complex32::new(0.0, 0.0)
            } else {
                Complex32::new(f32::from(pair[1]), f32::from(pair[0]))
            }
        })
        .collect()
}

/// The shape of a single-chain ESP32 buffer: the bandwidth its tones span follows from the
/// layout (the LLTF and HT20 blocks span 20 MHz; HT40 adds a 40 MHz HT-LTF).
pub(crate) fn shape_for_layout(layout: Option<SubcarrierLayout>) -> CsiShape {
    CsiShape::single(layout.map(|l| match l.ppdu {
        PpduKind::Ht40 | PpduKind::Ht40Stbc => 40,
        _ => 20,
    }))
}

/// Checks a buffer's byte count before it is used: non-empty, even and bounded.
pub(crate) fn check_buffer_len(len: usize) -> Result<(), ParseError> {
    if len == 0 {
        return Err(ParseError::EmptyBuffer);
    }
    if len > MAX_BUFFER_BYTES {
        return Err(ParseError::BufferTooLarge {
            len,
            max: MAX_BUFFER_BYTES,
        });
    }
    if !len.is_multiple_of(2) {
        return Err(ParseError::OddBuffer(len));
    }
    Ok(())
}

/// RSSI as a real dBm value, or `None` for the sentinels formats use instead of a reading
/// (RuView writes `1` in every raw_csi record and `-1`/`-2` in vitals). No receiver reports
/// ≥ -2 dBm, so those values are never real.
pub(crate) fn plausible_rssi(v: i16) -> Option<i16> {
    (v <= -3).then_some(v)
}

/// Wi-Fi channel number from a centre frequency, for the 2.4 and 5 GHz bands.
pub(crate) fn channel_from_freq(freq_mhz: u32) -> Option<u16> {
    match freq_mhz {
        2484 => Some(14),
        2412..=2472 if (freq_mhz - 2407).is_multiple_of(5) => {
            u16::try_from((freq_mhz - 2407) / 5).ok()
        }
        5005..=5895 if freq_mhz.is_multiple_of(5) => u16::try_from((freq_mhz - 5000) / 5).ok(),
        _ => None,
    }
}
