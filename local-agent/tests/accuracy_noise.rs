//! The simulator accuracy figures under realistic receiver noise (issue 19).
//!
//! The pipeline's gates were tuned on the simulator's white noise, which averages out across
//! subcarriers by construction. [`NoiseModel::measured`] has the statistics of the real quiet-room
//! captures (`tests/noise_stats.rs`): noise correlated between neighbouring subcarriers, a
//! per-packet amplitude tilt across the band, and interference bursts. This suite plays the empty
//! room and the still-breathing sweep of `accuracy_sim.rs` (same seeds, same scoring) under the
//! white model, the measured one and the measured one with each part taken out, and prints every
//! figure, so what realistic noise costs, and which part of it, stays visible.
//!
//! The asserted bounds are regression bounds at the measured figures, not the targets: under the
//! measured noise the targets are not met (see the README's accuracy table). Nothing was tuned on
//! these runs.

mod sim_support;

use local_agent::sensing::pipeline::PipelineConfig;
use local_agent::sensing::source::simulator::{Activity, NoiseModel, Segment, SimConfig};
use sim_support::{VITAL_RATES, run};

#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    /// Empty room, after calibration: share of ticks read present.
    empty_present: f64,
    /// Empty room: ticks with a breathing or heart rate.
    empty_vitals: usize,
    /// Empty room, after calibration: largest motion score (moving is ≥ 0.05).
    empty_max_motion: f64,
    /// Still person, 10–25 br/min: share of still windows after 30 s with a breathing rate.
    breathing_emitted: f64,
    /// Mean absolute error of those rates, br/min.
    breathing_mae: f64,
}

fn figures(noise: &NoiseModel) -> Figures {
    let mut f = Figures::default();
    let (mut present, mut total) = (0usize, 0usize);
    for seed in [1u64, 2, 3] {
        let Some(cfg) = SimConfig::for_scene("empty", seed) else {
            panic!("no empty scene")
        };
        let ticks = run(
            SimConfig {
                rate_hz: 50.0,
                noise: noise.clone(),
                ..cfg
            },
            PipelineConfig::default(),
        );
        let cal_end = ticks
            .iter()
            .find(|tk| !tk.est.calibrating)
            .map_or(f64::INFINITY, |tk| tk.t);
        for tk in &ticks {
            if tk.est.breathing_bpm.is_some() || tk.est.heart_bpm.is_some() {
                f.empty_vitals += 1;
            }
            if tk.t >= cal_end {
                total += 1;
                present += usize::from(tk.est.present);
                f.empty_max_motion = f.empty_max_motion.max(tk.est.motion);
            }
        }
    }
    f.empty_present = present as f64 / total.max(1) as f64;
    let (mut windows, mut emitted, mut err) = (0usize, 0usize, 0.0);
    for (i, (b, h)) in VITAL_RATES.into_iter().enumerate() {
        for seed in [11u64, 12] {
            let cfg = SimConfig {
                seed: seed + 10 * i as u64,
                rate_hz: 25.0,
                script: vec![Segment {
                    duration_s: 90.0,
                    activity: Activity::SitStill {
                        breathing_bpm: b,
                        heart_bpm: h,
                    },
                }],
                noise: noise.clone(),
                ..SimConfig::default()
            };
            for tk in run(cfg, PipelineConfig::default())
                .iter()
                .filter(|tk| tk.t >= 30.0)
            {
                let Some(truth) = tk.truth.breathing_bpm else {
                    continue;
                };
                windows += 1;
                if let Some(est) = tk.est.breathing_bpm {
                    emitted += 1;
                    err += (est - truth).abs();
                }
            }
        }
    }
    f.breathing_emitted = emitted as f64 / windows.max(1) as f64;
    f.breathing_mae = err / emitted.max(1) as f64;
    f
}

#[test]
fn accuracy_under_realistic_noise_is_reported_per_noise_component() {
    let measured = NoiseModel::measured();
    let variants = [
        ("white (default)", NoiseModel::white()),
        ("measured", measured.clone()),
        (
            "measured, no bursts",
            NoiseModel {
                burst_probability: 0.0,
                ..measured.clone()
            },
        ),
        (
            "measured, no tilt",
            NoiseModel {
                tilt_std: 0.0,
                ..measured.clone()
            },
        ),
        (
            "correlated only (no tilt, no bursts)",
            NoiseModel {
                tilt_std: 0.0,
                burst_probability: 0.0,
                ..measured.clone()
            },
        ),
    ];
    let mut results = Vec::new();
    for (name, noise) in variants {
        let f = figures(&noise);
        eprintln!(
            "{name}: empty room present on {:.4} of ticks after calibration, vitals on {} ticks, max motion {:.3}; still person breathing emitted {:.3} of windows after 30 s, MAE {:.3} br/min",
            f.empty_present,
            f.empty_vitals,
            f.empty_max_motion,
            f.breathing_emitted,
            f.breathing_mae
        );
        results.push((name, f));
    }
    let white = results[0].1;
    let real = results[1].1;
    // The white model is where the targets hold (accuracy_sim.rs asserts them).
    assert!(white.empty_present == 0.0 && white.empty_vitals == 0);
    assert!(white.breathing_emitted >= 0.8 && white.breathing_mae <= 1.0);
    // Regression bounds at the measured figures under realistic noise (targets not met).
    assert!(
        real.breathing_mae <= 1.0,
        "breathing MAE {}",
        real.breathing_mae
    );
    assert!(
        real.breathing_emitted >= REAL_EMITTED_BOUND,
        "breathing emitted {}",
        real.breathing_emitted
    );
    assert!(
        real.empty_present <= REAL_EMPTY_PRESENT_BOUND,
        "empty room present {}",
        real.empty_present
    );
    assert!(
        real.empty_vitals <= REAL_EMPTY_VITALS_BOUND,
        "empty room vitals on {} ticks",
        real.empty_vitals
    );
    assert!(
        real.empty_max_motion < 0.05,
        "empty room motion {}",
        real.empty_max_motion
    );
}

/// Measured 2026-11-26 under `NoiseModel::measured()`: breathing emitted on 0.760 of still
/// windows (target 0.8), the empty room present on 0.045 of ticks (target 0) with vitals on 26
/// ticks (target 0). The bounds leave a margin for seeds; they are not targets.
const REAL_EMITTED_BOUND: f64 = 0.70;
const REAL_EMPTY_PRESENT_BOUND: f64 = 0.08;
const REAL_EMPTY_VITALS_BOUND: usize = 40;
