//! Acceptance tests on the seeded simulator: empty room, a still breathing person from the first
//! frame, breathing and heart accuracy over rates 10–25 br/min, and independence from the packet
//! rate and timestamp jitter. Every figure is printed so the report can quote it.

mod sim_support;

use local_agent::sensing::pipeline::PipelineConfig;
use local_agent::sensing::source::simulator::{Activity, Segment, SimConfig};
use sim_support::{Tick, VITAL_RATES, run};

fn still_scene(breathing_bpm: f64, heart_bpm: f64, seconds: f64) -> Vec<Segment> {
    vec![Segment {
        duration_s: seconds,
        activity: Activity::SitStill {
            breathing_bpm,
            heart_bpm,
        },
    }]
}

#[derive(Debug, Default)]
struct VitalStats {
    windows: usize,
    emitted: usize,
    abs_err_sum: f64,
    heart_emitted: usize,
    heart_err_sum: f64,
    heart_within5: usize,
}

impl VitalStats {
    /// Scores ticks after `from_s` where the truth has a breathing rate (the person is still).
    fn add(&mut self, ticks: &[Tick], from_s: f64) {
        for tk in ticks.iter().filter(|tk| tk.t >= from_s) {
            let Some(truth_b) = tk.truth.breathing_bpm else {
                continue;
            };
            self.windows += 1;
            if let Some(b) = tk.est.breathing_bpm {
                self.emitted += 1;
                self.abs_err_sum += (b - truth_b).abs();
            }
            if let (Some(h), Some(th)) = (tk.est.heart_bpm, tk.truth.heart_bpm) {
                self.heart_emitted += 1;
                self.heart_err_sum += (h - th).abs();
                if (h - th).abs() <= 5.0 {
                    self.heart_within5 += 1;
                }
            }
        }
    }
    fn emitted_frac(&self) -> f64 {
        self.emitted as f64 / self.windows.max(1) as f64
    }
    fn mae(&self) -> f64 {
        self.abs_err_sum / self.emitted.max(1) as f64
    }
    fn heart_mae(&self) -> Option<f64> {
        (self.heart_emitted > 0).then(|| self.heart_err_sum / self.heart_emitted as f64)
    }
}

/// Measures the empty scene over three seeds: (absent fraction after calibration, ticks with
/// vitals, max motion, latest calibration end).
fn empty_room_figures() -> (f64, usize, f64, f64) {
    let mut present = 0;
    let mut total = 0;
    let mut vitals = 0;
    let mut max_motion: f64 = 0.0;
    let mut latest_cal: f64 = 0.0;
    for seed in [1u64, 2, 3] {
        let Some(mut cfg) = SimConfig::for_scene("empty", seed) else {
            panic!("no empty scene")
        };
        cfg.rate_hz = 50.0;
        let ticks = run(cfg, PipelineConfig::default());
        let cal_end = ticks
            .iter()
            .find(|tk| !tk.est.calibrating)
            .map(|tk| tk.t)
            .unwrap_or(f64::INFINITY);
        latest_cal = latest_cal.max(cal_end);
        for tk in &ticks {
            if tk.est.breathing_bpm.is_some() || tk.est.heart_bpm.is_some() {
                vitals += 1;
            }
            if tk.t >= cal_end {
                total += 1;
                present += usize::from(tk.est.present);
                max_motion = max_motion.max(tk.est.motion);
            }
        }
    }
    let absent = 1.0 - present as f64 / total.max(1) as f64;
    eprintln!(
        "sim empty: absent on {absent:.4} of {total} ticks after calibration, vitals on {vitals} ticks, max motion {max_motion:.3}, calibration ended by {latest_cal:.1} s"
    );
    (absent, vitals, max_motion, latest_cal)
}

/// What passes today: calibration completes and the motion level of an empty room stays below
/// 0.05 (no motion false alarm).
#[test]
fn empty_room_calibrates_and_reads_no_motion() {
    let (_, _, max_motion, latest_cal) = empty_room_figures();
    assert!(latest_cal < 40.0, "calibration ended at {latest_cal}");
    assert!(max_motion < 0.05, "max motion {max_motion}");
}

/// The acceptance target: an empty room never reads occupied and never carries a vital sign.
/// Before the cross-subcarrier coherence gate the best-of-52 noise subcarriers produced a
/// tone-narrow breathing-band peak that passed every single-series gate (absent 0.906, vitals on
/// ~5% of ticks).
#[test]
fn empty_room_reads_absent_with_no_vitals() {
    let (absent, vitals, _, _) = empty_room_figures();
    assert_eq!(vitals, 0);
    assert!(absent >= 0.99, "absent {absent}");
}

#[test]
fn still_person_from_first_frame_is_present_with_breathing() {
    let Some(mut cfg) = SimConfig::for_scene("still", 7) else {
        panic!("no still scene")
    };
    cfg.rate_hz = 50.0;
    let ticks = run(cfg, PipelineConfig::default());
    let first_breath = ticks
        .iter()
        .find(|tk| tk.est.breathing_bpm.is_some())
        .map(|tk| tk.t);
    let after = |s: f64| ticks.iter().filter(move |tk| tk.t >= s);
    let n_after = after(45.0).count();
    let present_after = after(45.0).filter(|tk| tk.est.present).count();
    let mut stats = VitalStats::default();
    stats.add(&ticks, 30.0);
    eprintln!(
        "sim still: first breathing at {first_breath:?} s, present on {present_after}/{n_after} ticks after 45 s, breathing emitted {:.3} MAE {:.3} br/min, heart emitted on {} ticks MAE {:?}, calibrating at end {}",
        stats.emitted_frac(),
        stats.mae(),
        stats.heart_emitted,
        stats.heart_mae(),
        ticks.last().is_some_and(|tk| tk.est.calibrating)
    );
    let Some(first) = first_breath else {
        panic!("no breathing ever")
    };
    assert!(first <= 45.0, "first breathing at {first} s");
    assert!(stats.mae() <= 1.0, "MAE {}", stats.mae());
    assert!(
        present_after as f64 >= 0.95 * n_after as f64,
        "present {present_after}/{n_after}"
    );
    assert!(
        stats.emitted_frac() >= 0.8,
        "emitted {}",
        stats.emitted_frac()
    );
}

#[test]
fn breathing_and_heart_accuracy_over_rates() {
    let mut all = VitalStats::default();
    let mut lines = Vec::new();
    for (i, (b, h)) in VITAL_RATES.into_iter().enumerate() {
        for seed in [11u64, 12] {
            let cfg = SimConfig {
                seed: seed + 10 * i as u64,
                rate_hz: 25.0,
                script: still_scene(b, h, 90.0),
                ..SimConfig::default()
            };
            let ticks = run(cfg, PipelineConfig::default());
            let mut s = VitalStats::default();
            s.add(&ticks, 30.0);
            all.add(&ticks, 30.0);
            lines.push(format!(
                "  {b} br/min {h} bpm seed {seed}: emitted {:.2} MAE {:.2}; heart on {} MAE {:?}",
                s.emitted_frac(),
                s.mae(),
                s.heart_emitted,
                s.heart_mae()
            ));
        }
    }
    for l in &lines {
        eprintln!("{l}");
    }
    eprintln!(
        "sim breathing 10–25 br/min: emitted {:.3} of still windows after 30 s, MAE {:.3} br/min; heart emitted on {} of {} windows, MAE {:?} bpm, within ±5 on {}",
        all.emitted_frac(),
        all.mae(),
        all.heart_emitted,
        all.windows,
        all.heart_mae(),
        all.heart_within5
    );
    assert!(all.mae() <= 1.0, "breathing MAE {}", all.mae());
    assert!(all.emitted_frac() >= 0.8, "emitted {}", all.emitted_frac());
}

/// A heartbeat the radio can see (2 mm, 35 dB SNR): heart rate must be right whenever it is
/// emitted (the target: MAE ≤ 5 bpm where emitted), and emitted at all on a share of still
/// windows. The share is honest rather than high: with amplitude-only CSI the heartbeat falls in a
/// blind spot of the multipath geometry for some seeds, and at 58 bpm it sits within 0.02–0.04 Hz
/// of a breathing harmonic, where the harmonic guard must win. Measured: 0.163 of windows (0.21
/// with the earlier notch-based estimator), every one within ±5 bpm.
#[test]
fn heart_rate_when_the_heartbeat_is_visible() {
    let mut all = VitalStats::default();
    let mut lines = Vec::new();
    for (i, (b, h)) in VITAL_RATES.into_iter().enumerate() {
        let cfg = SimConfig {
            seed: 31 + 10 * i as u64,
            rate_hz: 25.0,
            heart_depth_m: 0.002,
            snr_db: 35.0,
            script: still_scene(b, h, 90.0),
            ..SimConfig::default()
        };
        let ticks = run(cfg, PipelineConfig::default());
        let mut s = VitalStats::default();
        s.add(&ticks, 30.0);
        all.add(&ticks, 30.0);
        lines.push(format!(
            "  {b} br/min {h} bpm: breathing {:.2}; heart on {} of {} within ±5 on {} MAE {:?}",
            s.emitted_frac(),
            s.heart_emitted,
            s.windows,
            s.heart_within5,
            s.heart_mae()
        ));
    }
    for l in &lines {
        eprintln!("{l}");
    }
    let frac = all.heart_emitted as f64 / all.windows.max(1) as f64;
    let within = all.heart_within5 as f64 / all.heart_emitted.max(1) as f64;
    eprintln!(
        "sim visible heart: emitted {frac:.3} of still windows after 30 s, MAE {:?} bpm, within ±5 {within:.3}",
        all.heart_mae()
    );
    let Some(hm) = all.heart_mae() else {
        panic!("heart never emitted")
    };
    assert!(frac >= 0.15, "heart emitted on {frac}");
    assert!(hm <= 5.0, "heart MAE {hm}");
    assert!(within >= 0.95, "within ±5 {within}");
}

#[test]
fn estimates_do_not_depend_on_packet_rate_or_jitter() {
    let mut results = Vec::new();
    for (rate, jitter) in [(20.0, 0.0), (50.0, 0.0), (100.0, 0.0), (50.0, 0.006)] {
        let cfg = SimConfig {
            seed: 5,
            rate_hz: rate,
            timestamp_jitter_s: jitter,
            script: still_scene(15.0, 70.0, 60.0),
            ..SimConfig::default()
        };
        let ticks = run(cfg, PipelineConfig::default());
        let mut s = VitalStats::default();
        s.add(&ticks, 30.0);
        let measured = ticks.last().and_then(|tk| tk.est.rate_hz).unwrap_or(0.0);
        let last_b = ticks.iter().rev().find_map(|tk| tk.est.breathing_bpm);
        eprintln!(
            "sim rate {rate} Hz jitter {jitter}s: measured {measured:.2} Hz, breathing emitted {:.2} MAE {:.2}, last {last_b:?}",
            s.emitted_frac(),
            s.mae()
        );
        assert!(
            (measured / rate - 1.0).abs() < 0.03,
            "rate {rate}: {measured}"
        );
        results.push((s.emitted_frac(), s.mae(), last_b));
    }
    for (emitted, mae, last) in &results {
        assert!(*emitted >= 0.8);
        assert!(*mae <= 1.0);
        let Some(b) = last else {
            panic!("no breathing")
        };
        assert!((b - 15.0).abs() <= 1.0, "{b}");
    }
}
