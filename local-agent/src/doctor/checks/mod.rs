//! The checks. Each returns findings with the fix in one sentence.
//!
//! - [`host`]: this computer's ports and the UDP ingest path.
//! - [`nodes`]: the sensor nodes' rates, timing, channel, RSSI, gain and clocks.
//! - [`setup`]: calibration, the alert address, the data directory and its stores.
//! - [`mqtt`]: the Home Assistant (MQTT) link.

mod common;
pub mod host;
pub mod mqtt;
pub mod nodes;
pub mod setup;

pub use host::{PROBE_DATAGRAM, PortsCheck, UdpIngestCheck};
pub use mqtt::MqttCheck;
pub use nodes::{
    BURST_RATIO, ChannelCheck, ClockCheck, GainCheck, NodesCheck, RssiCheck, TimingCheck,
    assess_node, timing_verdict,
};
pub use setup::{
    AlertsCheck, CALIBRATION_STUCK_ENV, CALIBRATION_STUCK_S, CalibrationCheck, DataDirCheck,
    StoresCheck, calibration_stuck_s, hold_sentence, store_health, write_probe,
};

use super::Check;

/// Every check, in the order a support person would go (ports, ingest, nodes, signal,
/// calibration, then alerts, Home Assistant and storage).
pub fn all() -> Vec<Box<dyn Check>> {
    vec![
        Box::new(PortsCheck),
        Box::new(UdpIngestCheck),
        Box::new(NodesCheck),
        Box::new(TimingCheck),
        Box::new(ChannelCheck),
        Box::new(RssiCheck),
        Box::new(GainCheck),
        Box::new(ClockCheck),
        Box::new(CalibrationCheck),
        Box::new(AlertsCheck),
        Box::new(MqttCheck),
        Box::new(DataDirCheck),
        Box::new(StoresCheck),
    ]
}
