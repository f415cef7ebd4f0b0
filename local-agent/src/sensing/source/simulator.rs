//! The embedded simulator: a seeded physical model of CSI playing a scripted scene.
//!
//! INTERFACE STUB: the simulator helper replaces the body; the public items below are what the
//! pipeline tests and the engine rely on.

use crate::sensing::csi::CsiFrame;

/// What the person in the scene is doing during one segment.
#[derive(Debug, Clone, PartialEq)]
pub enum Activity {
    /// Nobody in the room.
    Absent,
    /// Walking around the room.
    Walk,
    /// Sitting still, breathing at `breathing_bpm` with heart rate `heart_bpm`.
    SitStill { breathing_bpm: f64, heart_bpm: f64 },
}

/// One step of a scripted scene.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub duration_s: f64,
    pub activity: Activity,
}

/// Ground truth for the frame it accompanies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroundTruth {
    pub present: bool,
    pub moving: bool,
    pub breathing_bpm: Option<f64>,
    pub heart_bpm: Option<f64>,
    pub range_m: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub seed: u64,
    pub rate_hz: f64,
    pub node_id: String,
    pub script: Vec<Segment>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            rate_hz: 100.0,
            node_id: "sim-1".to_string(),
            script: vec![Segment {
                duration_s: 60.0,
                activity: Activity::Absent,
            }],
        }
    }
}

#[derive(Debug)]
pub struct Simulator {
    config: SimConfig,
    t_s: f64,
}

impl Simulator {
    pub fn new(config: SimConfig) -> Self {
        Self { config, t_s: 0.0 }
    }

    /// The next frame and its ground truth; `None` once the script has played out.
    pub fn next_frame(&mut self) -> Option<(CsiFrame, GroundTruth)> {
        let total: f64 = self.config.script.iter().map(|s| s.duration_s).sum();
        if self.t_s >= total || self.config.rate_hz <= 0.0 {
            return None;
        }
        let frame = CsiFrame {
            node_id: self.config.node_id.clone(),
            t_s: self.t_s,
            rssi_dbm: None,
            channel: None,
            format: crate::sensing::csi::WireFormat::Simulator,
            csi: Vec::new(),
        };
        self.t_s += 1.0 / self.config.rate_hz;
        Some((frame, GroundTruth::default()))
    }
}
