//! Per-node estimators fused into one view of the room.
//!
//! INTERFACE STUB: the pipeline helper replaces the body; the public types and method signatures
//! below are what the engine and sources rely on.

use super::csi::CsiFrame;

/// Tunables of the pipeline. `Default` gives the production settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Seconds of data used for the empty-room calibration after start or `recalibrate`.
    pub calibration_s: f64,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            calibration_s: 20.0,
        }
    }
}

/// The fused estimates at one instant. `None` means "no honest estimate", never zero.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Estimates {
    /// Someone is in the room (motion implies presence; a still breathing person is present).
    pub present: bool,
    /// Motion level, 0..1; an empty, still room reads below 0.05.
    pub motion: f64,
    pub breathing_bpm: Option<f64>,
    /// SNR of the best breathing-band peak while someone is present, else `None`.
    pub breathing_strength: Option<f64>,
    pub heart_bpm: Option<f64>,
    pub heart_strength: Option<f64>,
    pub range_peak_m: Option<f64>,
    pub range_strength: Option<f64>,
    /// Measured frame rate over all nodes, Hz.
    pub rate_hz: Option<f64>,
    /// True while the background model is still being learned.
    pub calibrating: bool,
    /// Frames accepted into the pipeline since start.
    pub frames: u64,
    /// Source time (`CsiFrame::t_s`) of the newest frame.
    pub last_t_s: Option<f64>,
}

/// The sensing pipeline. Not thread-safe by itself; the engine owns it behind one task.
#[derive(Debug, Default)]
pub struct Pipeline {
    config: PipelineConfig,
    estimates: Estimates,
}

impl Pipeline {
    pub fn new(config: PipelineConfig) -> Self {
        Self {
            config,
            estimates: Estimates::default(),
        }
    }

    /// Feeds one frame. Never panics, whatever the frame holds.
    pub fn push(&mut self, frame: &CsiFrame) {
        self.estimates.frames += 1;
        self.estimates.last_t_s = Some(frame.t_s);
    }

    /// The current fused estimates.
    pub fn estimates(&self) -> Estimates {
        self.estimates.clone()
    }

    /// Forgets the learned background and starts a new calibration.
    pub fn recalibrate(&mut self) {
        self.estimates.calibrating = self.config.calibration_s > 0.0;
    }
}
