//! The harness the simulator accuracy suites share: play a scene through the pipeline and sample
//! the estimates next to the ground truth.

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use local_agent::sensing::pipeline::{Estimates, Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{
    Activity, GroundTruth, Segment, SimConfig, Simulator,
};

/// One evaluation tick (every 0.1 s of scene time).
pub struct Tick {
    pub t: f64,
    pub est: Estimates,
    pub truth: GroundTruth,
}

/// Plays `cfg` through a pipeline built from `pipeline`, sampling every 0.1 s of scene time.
pub fn run(cfg: SimConfig, pipeline: PipelineConfig) -> Vec<Tick> {
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(pipeline);
    let mut out = Vec::new();
    let mut next_tick = 0.0;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if frame.t_s >= next_tick {
            next_tick += 0.1;
            out.push(Tick {
                t: frame.t_s,
                est: p.estimates(),
                truth,
            });
        }
    }
    out
}

/// Ticks that show presence and ticks that show a vital (a breathing or heart rate): what an
/// empty room must keep at zero.
pub fn present_and_vitals(ticks: &[Tick]) -> (usize, usize) {
    let present = ticks.iter().filter(|t| t.est.present).count();
    let vitals = ticks
        .iter()
        .filter(|t| t.est.breathing_bpm.is_some() || t.est.heart_bpm.is_some())
        .count();
    (present, vitals)
}

/// Breathing and heart rates (br/min, bpm) the vitals suites sweep: the notes' 10–25 br/min
/// breathing range with resting heart rates that do not sit on a breathing harmonic.
pub const VITAL_RATES: [(f64, f64); 5] = [
    (10.0, 58.0),
    (13.0, 66.0),
    (16.0, 74.0),
    (20.0, 85.0),
    (25.0, 95.0),
];

/// The still-person scene of issue 19: walks in for 20 s, then sits still for 10 minutes
/// breathing at 4 mm (11–17 br/min by seed), 25 packets/s. `accuracy_presence` scores it and
/// `diag_still` studies it; both must play the same scene.
pub fn still_ten_minutes_scene(seed: u64) -> SimConfig {
    SimConfig {
        seed,
        rate_hz: 25.0,
        breathing_depth_m: 0.004,
        script: vec![
            Segment {
                duration_s: 20.0,
                activity: Activity::Walk,
            },
            Segment {
                duration_s: 600.0,
                activity: Activity::SitStill {
                    breathing_bpm: 11.0 + seed as f64 % 7.0,
                    heart_bpm: 70.0,
                },
            },
        ],
        ..SimConfig::default()
    }
}
