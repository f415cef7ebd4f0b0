//! The simulator as a data source: determinism, timing, buffer layout, gain and quantisation.

use local_agent::sensing::source::simulator::{
    Activity, AgcModel, Segment, SimConfig, Simulator, scene, scene_names,
};

fn script(duration_s: f64, activity: Activity) -> Vec<Segment> {
    vec![Segment {
        duration_s,
        activity,
    }]
}

fn demo(seed: u64) -> SimConfig {
    SimConfig::for_scene("demo", seed).unwrap_or_default()
}

#[test]
fn same_config_gives_bit_identical_frames() {
    let a: Vec<_> = Simulator::new(demo(11)).take(3000).collect();
    let b: Vec<_> = Simulator::new(demo(11)).take(3000).collect();
    assert_eq!(a.len(), 3000);
    for ((fa, ta), (fb, tb)) in a.iter().zip(&b) {
        assert_eq!(fa.t_s.to_bits(), fb.t_s.to_bits());
        let bits = |f: &local_agent::sensing::csi::CsiFrame| -> Vec<u32> {
            f.csi
                .iter()
                .flat_map(|c| [c.re.to_bits(), c.im.to_bits()])
                .collect()
        };
        assert_eq!(bits(fa), bits(fb));
        assert_eq!(fa, fb);
        assert_eq!(ta, tb);
    }
}

#[test]
fn different_seeds_give_different_frames() {
    let a: Vec<_> = Simulator::new(demo(1))
        .take(50)
        .map(|(f, _)| f.csi)
        .collect();
    let b: Vec<_> = Simulator::new(demo(2))
        .take(50)
        .map(|(f, _)| f.csi)
        .collect();
    let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    assert_eq!(differing, 50);
}

#[test]
fn frame_count_and_spacing_follow_the_rate() {
    for rate_hz in [20.0, 50.0, 100.0] {
        let config = SimConfig {
            rate_hz,
            script: vec![
                Segment {
                    duration_s: 10.0,
                    activity: Activity::Absent,
                },
                Segment {
                    duration_s: 20.0,
                    activity: Activity::Walk,
                },
            ],
            ..SimConfig::default()
        };
        let times: Vec<f64> = Simulator::new(config).map(|(f, _)| f.t_s).collect();
        assert_eq!(times.len(), (30.0 * rate_hz) as usize, "rate {rate_hz}");
        for (i, t) in times.iter().enumerate() {
            assert!((t - i as f64 / rate_hz).abs() < 1e-9);
        }
    }
}

#[test]
fn jitter_keeps_the_mean_rate_and_order() {
    let config = SimConfig {
        rate_hz: 50.0,
        timestamp_jitter_s: 0.004,
        script: script(60.0, Activity::Walk),
        ..SimConfig::default()
    };
    let times: Vec<f64> = Simulator::new(config).map(|(f, _)| f.t_s).collect();
    assert_eq!(times.len(), 3000);
    assert!(times.windows(2).all(|w| w[1] > w[0]));
    let steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let mean_rate = (times.len() - 1) as f64 / (times[times.len() - 1] - times[0]);
    assert!((mean_rate - 50.0).abs() < 0.1, "{mean_rate}");
    let irregular = steps.iter().filter(|s| (**s - 0.02).abs() > 0.002).count();
    assert!(irregular > steps.len() / 4, "jitter too small: {irregular}");
}

#[test]
fn packet_loss_drops_about_the_configured_share() {
    let config = SimConfig {
        rate_hz: 100.0,
        packet_loss: 0.1,
        script: script(60.0, Activity::Absent),
        ..SimConfig::default()
    };
    let n = Simulator::new(config).count();
    assert!((5200..=5600).contains(&n), "{n}");
}

#[test]
fn null_guard_and_dc_subcarriers_are_exactly_zero() {
    let expected_zero = |subcarriers: usize| -> Vec<usize> {
        (0..subcarriers)
            .filter(|&slot| {
                let i = (slot % 64) as i32;
                let k = if i < 32 { i } else { i - 64 };
                let edge = if slot < 64 { 26 } else { 28 };
                k == 0 || k.abs() > edge
            })
            .collect()
    };
    for subcarriers in [64, 128, 192] {
        let config = SimConfig {
            subcarriers,
            script: scene("walk").unwrap_or_default(),
            ..SimConfig::default()
        };
        let zero = expected_zero(subcarriers);
        let mut frames = 0;
        let mut nonzero = vec![0usize; subcarriers];
        for (frame, _) in Simulator::new(config).take(2000) {
            assert_eq!(frame.csi.len(), subcarriers);
            for &slot in &zero {
                assert_eq!(frame.csi[slot].re.to_bits(), 0);
                assert_eq!(frame.csi[slot].im.to_bits(), 0);
            }
            for (slot, c) in frame.csi.iter().enumerate() {
                if c.norm() > 0.0 {
                    nonzero[slot] += 1;
                }
            }
            frames += 1;
        }
        for slot in (0..subcarriers).filter(|s| !zero.contains(s)) {
            assert!(nonzero[slot] > frames * 9 / 10, "slot {slot} mostly zero");
        }
    }
}

#[test]
fn values_are_int8() {
    let config = SimConfig::for_scene("walk", 3).unwrap_or_default();
    let mut largest = 0.0f32;
    for (frame, _) in Simulator::new(config).take(3000) {
        for c in &frame.csi {
            for v in [c.re, c.im] {
                assert_eq!(v, v.round());
                assert!((-128.0..=127.0).contains(&v));
                largest = largest.max(v.abs());
            }
        }
    }
    assert!(largest > 30.0, "the int8 range is barely used: {largest}");
}

fn mean_amplitudes(config: SimConfig) -> Vec<f64> {
    Simulator::new(config)
        .map(|(frame, _)| {
            let valid: Vec<f64> = frame
                .csi
                .iter()
                .map(|c| f64::from(c.norm()))
                .filter(|a| *a > 0.0)
                .collect();
            valid.iter().sum::<f64>() / valid.len().max(1) as f64
        })
        .collect()
}

#[test]
fn unlocked_agc_jumps_by_15_to_30_percent_and_can_be_turned_off() {
    let empty = |agc| SimConfig {
        rate_hz: 50.0,
        agc,
        script: script(120.0, Activity::Absent),
        ..SimConfig::default()
    };
    let levels = mean_amplitudes(empty(AgcModel::default()));
    let jumps = levels
        .windows(2)
        .filter(|w| (w[1] / w[0] - 1.0).abs() > 0.12)
        .count();
    assert!(jumps >= 10, "only {jumps} gain jumps in 2 minutes");
    let largest = levels
        .windows(2)
        .map(|w| (w[1] / w[0] - 1.0).abs())
        .fold(0.0, f64::max);
    assert!(largest < 0.6, "{largest}");

    let steady = mean_amplitudes(empty(AgcModel::off()));
    let jumps = steady
        .windows(2)
        .filter(|w| (w[1] / w[0] - 1.0).abs() > 0.12)
        .count();
    assert_eq!(jumps, 0);
}

#[test]
fn every_scene_name_plays() {
    for name in scene_names() {
        let config = SimConfig {
            rate_hz: 1.0,
            ..SimConfig::for_scene(name, 1).unwrap_or_default()
        };
        let expected: f64 = config.script.iter().map(|s| s.duration_s).sum();
        let n = Simulator::new(config).count();
        assert_eq!(n, expected.round() as usize, "{name}");
    }
}

#[test]
fn truth_only_stepping_matches_full_frames() {
    let config = SimConfig::for_scene("fall", 4).unwrap_or_default();
    let full: Vec<_> = Simulator::new(config.clone())
        .map(|(_, mut truth)| {
            truth.agc_gain = 1.0;
            truth
        })
        .collect();
    let mut sim = Simulator::new(config);
    let fast: Vec<_> = std::iter::from_fn(|| sim.next_truth()).collect();
    assert_eq!(full, fast);
}

#[test]
fn degenerate_configs_end_instead_of_panicking() {
    for rate_hz in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        let config = SimConfig {
            rate_hz,
            ..SimConfig::default()
        };
        assert!(Simulator::new(config).next_frame().is_none());
    }
    let empty_script = SimConfig {
        script: Vec::new(),
        ..SimConfig::default()
    };
    assert!(Simulator::new(empty_script).next_frame().is_none());
    let odd = SimConfig {
        subcarriers: 0,
        script: script(1.0, Activity::Walk),
        ..SimConfig::default()
    };
    assert_eq!(Simulator::new(odd).count(), 100);
    let odd = SimConfig {
        subcarriers: 57,
        script: script(1.0, Activity::Walk),
        ..SimConfig::default()
    };
    assert!(Simulator::new(odd).all(|(f, _)| f.csi.len() == 57 && f.csi[28].norm() == 0.0));
}

/// Per-frame cost in optimised builds (`cargo test --release`); debug builds skip the check.
#[test]
fn a_frame_costs_under_20_microseconds_in_release() {
    if cfg!(debug_assertions) {
        return;
    }
    for (subcarriers, budget_us) in [(64, 20.0), (192, 40.0)] {
        let config = SimConfig {
            subcarriers,
            ..SimConfig::for_scene("demo", 1).unwrap_or_default()
        };
        let mut sim = Simulator::new(config);
        let start = std::time::Instant::now();
        let mut frames = 0u32;
        while let Some((frame, _)) = sim.next_frame() {
            std::hint::black_box(&frame);
            frames += 1;
        }
        let per_frame_us = start.elapsed().as_secs_f64() * 1e6 / f64::from(frames);
        eprintln!("{subcarriers} subcarriers: {per_frame_us:.2} µs per frame");
        assert!(per_frame_us < budget_us, "{per_frame_us} µs per frame");
    }
    let day = SimConfig {
        rate_hz: 20.0,
        ..SimConfig::for_scene("day", 1).unwrap_or_default()
    };
    let mut sim = Simulator::new(day);
    let start = std::time::Instant::now();
    let mut ticks = 0u32;
    while sim.next_truth().is_some() {
        ticks += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    eprintln!("a simulated day of ground truth at 20 Hz: {ticks} ticks in {elapsed:.2} s");
    assert!(elapsed < 10.0);
}
