//! The simulator's multi-antenna receiver (3 rx × 2 tx × 56 tones at 5 GHz) against the real
//! BreathSense captures (Atheros CSI Tool, same link shape), read from
//! `shared/data/csi/breathsense` at test time.
//!
//! The yardstick is the noise a vitals estimator sees: the per-packet noise of the chain-pair
//! phase `arg(h_r · conj(h_s))` of each tone, taken from its second difference in time (robust
//! spread / √6), which removes the breathing (the phantom moves the phase by well under 0.01
//! rad between packets) and keeps the white part. Per capture the median over the 6 pairs × 56
//! tones is reported, and the 10th–90th percentiles (the weak chain gives the noisy pairs).

use std::path::Path;

use local_agent::sensing::csi::CsiFrame;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::replay::ReplaySource;
use local_agent::sensing::source::simulator::{
    Activity, MultiAntenna, NoiseModel, Segment, SimConfig, Simulator,
};

/// Pair-phase noise (rad) of every (pair, tone) over a frame sequence.
fn pair_phase_noise(frames: &[CsiFrame]) -> Vec<f64> {
    let f0 = &frames[0];
    let (rx, tx) = (usize::from(f0.shape.rx), usize::from(f0.shape.tx));
    let tones = f0.csi.len() / (rx * tx);
    let mut out = Vec::new();
    for t in 0..tx {
        for a in 0..rx {
            for b in a + 1..rx {
                for k in 0..tones {
                    let mut unwrapped = Vec::with_capacity(frames.len());
                    let mut last: Option<f64> = None;
                    for f in frames {
                        let z = f.csi[(a * tx + t) * tones + k]
                            * f.csi[(b * tx + t) * tones + k].conj();
                        let p = f64::from(z.im).atan2(f64::from(z.re));
                        let u = match last {
                            Some(l) => {
                                let mut d = p - l.rem_euclid(std::f64::consts::TAU);
                                d = (d + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
                                    - std::f64::consts::PI;
                                l + d
                            }
                            None => p,
                        };
                        last = Some(u);
                        unwrapped.push(u);
                    }
                    let mut d2: Vec<f64> = unwrapped
                        .windows(3)
                        .map(|w| w[2] - 2.0 * w[1] + w[0])
                        .collect();
                    let med = median(&mut d2);
                    let mut dev: Vec<f64> = d2.iter().map(|v| (v - med).abs()).collect();
                    out.push(1.4826 * median(&mut dev) / 6f64.sqrt());
                }
            }
        }
    }
    out
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn capture_frames(name: &str) -> Vec<CsiFrame> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi/breathsense"
    ))
    .join(name);
    assert!(dir.is_dir(), "{} is missing", dir.display());
    ReplaySource::open(&dir).expect("capture opens").collect()
}

/// The SNR at which the simulated link's median chain-pair phase noise is the captures'.
const MIMO_SNR_DB: f64 = 34.0;

fn mimo_config(seed: u64, activity: Activity, seconds: f64, rate_hz: f64) -> SimConfig {
    SimConfig {
        seed,
        rate_hz,
        snr_db: MIMO_SNR_DB,
        noise: NoiseModel::measured(),
        antennas: Some(MultiAntenna::atheros_5ghz()),
        script: vec![Segment {
            duration_s: seconds,
            activity,
        }],
        ..SimConfig::default()
    }
}

#[test]
fn frames_have_the_atheros_shape() {
    let real = capture_frames("BPM12");
    let (frame, _) = Simulator::new(mimo_config(3, Activity::Absent, 2.0, 10.0))
        .next_frame()
        .expect("a frame");
    assert_eq!(frame.shape, real[0].shape);
    assert_eq!(frame.csi.len(), real[0].csi.len());
    assert_eq!(frame.channel, real[0].channel);
    assert!(frame.csi.iter().all(|c| c.norm() > 0.0));
}

/// One chain's phase is scrambled per packet (as on the card); the chain-pair phase is not.
#[test]
fn per_packet_offsets_cancel_only_between_chains() {
    let frames: Vec<CsiFrame> = Simulator::new(mimo_config(4, Activity::Absent, 20.0, 10.0))
        .map(|(f, _)| f)
        .collect();
    let mut pair = pair_phase_noise(&frames);
    // Pair (0, 0) only: a "pair" of one chain with itself would be trivially 0, so compare a
    // single chain's own phase spread instead.
    let tones = 56;
    let mut single = Vec::new();
    for k in 0..tones {
        let mut p: Vec<f64> = frames
            .windows(2)
            .map(|w| {
                let z = w[1].csi[k] * w[0].csi[k].conj();
                f64::from(z.im).atan2(f64::from(z.re)).abs()
            })
            .collect();
        single.push(median(&mut p));
    }
    let pair_med = median(&mut pair);
    let single_med = median(&mut single);
    eprintln!(
        "pair-phase noise {pair_med:.3} rad, one chain's packet-to-packet phase step {single_med:.2} rad"
    );
    assert!(pair_med < 0.1, "{pair_med}");
    assert!(single_med > 0.5, "{single_med}");
}

/// The simulated link's pair-phase noise, at the SNR the heart-rate streams use (34 dB), is
/// that of the real captures: median within ±25 % of theirs.
#[test]
fn pair_phase_noise_matches_the_real_captures() {
    let mut real_medians = Vec::new();
    for name in ["BPM06", "BPM12", "BPM18", "BPM24"] {
        let frames = capture_frames(name);
        let mut n = pair_phase_noise(&frames);
        let (p10, med, p90) = (
            percentile(&mut n, 0.1),
            median(&mut n),
            percentile(&mut n, 0.9),
        );
        eprintln!("real {name}: pair-phase noise median {med:.4} rad (p10 {p10:.4}, p90 {p90:.4})");
        real_medians.push(med);
    }
    let real = median(&mut real_medians);
    let mut sim_medians = Vec::new();
    for seed in 1..=4 {
        let frames: Vec<CsiFrame> = Simulator::new(mimo_config(seed, Activity::Absent, 60.0, 10.0))
            .map(|(f, _)| f)
            .collect();
        let mut n = pair_phase_noise(&frames);
        let (p10, med, p90) = (
            percentile(&mut n, 0.1),
            median(&mut n),
            percentile(&mut n, 0.9),
        );
        eprintln!(
            "simulated seed {seed}: pair-phase noise median {med:.4} rad (p10 {p10:.4}, p90 {p90:.4})"
        );
        sim_medians.push(med);
    }
    let sim = median(&mut sim_medians);
    eprintln!("pair-phase noise: real {real:.4} rad, simulated {sim:.4} rad");
    assert!(
        (sim / real - 1.0).abs() <= 0.25,
        "real {real:.4}, simulated {sim:.4}"
    );
}

/// An empty simulated multi-antenna room shows no presence and no vitals, from the first tick.
#[test]
fn empty_multi_antenna_room_shows_nothing() {
    for seed in 1..=3 {
        let mut p = Pipeline::new(PipelineConfig::default());
        for (frame, _) in Simulator::new(mimo_config(seed, Activity::Absent, 120.0, 10.0)) {
            p.push(&frame);
            let e = p.estimates();
            assert!(
                e.breathing_bpm.is_none(),
                "seed {seed}: breathing at {}",
                frame.t_s
            );
            assert!(e.heart_bpm.is_none(), "seed {seed}: heart at {}", frame.t_s);
        }
    }
}
