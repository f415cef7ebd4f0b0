//! The CSI frame type shared by every source, parser and estimator.

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
}
