//! Physical checks a user of the simulator relies on: an empty room is quiet, a walking person is
//! not, a still person's breathing is in the CSI at the scripted rate, and the ground truth tells
//! the story of the script.

use local_agent::sensing::source::simulator::{
    Activity, BodyAction, GroundTruth, Posture, SimConfig, Simulator,
};
use realfft::RealFftPlanner;

/// Per-packet gain-normalised amplitudes of the valid subcarriers, with the ground truth.
fn normalised_amplitudes(config: SimConfig) -> (Vec<Vec<f64>>, Vec<GroundTruth>) {
    let mut rows = Vec::new();
    let mut truths = Vec::new();
    for (frame, truth) in Simulator::new(config) {
        let amps: Vec<f64> = frame.csi.iter().map(|c| f64::from(c.norm())).collect();
        let valid: Vec<f64> = amps.iter().copied().filter(|a| *a > 0.0).collect();
        let mean = valid.iter().sum::<f64>() / valid.len().max(1) as f64;
        rows.push(amps.iter().map(|a| a / mean).collect());
        truths.push(truth);
    }
    (rows, truths)
}

/// Mean over subcarriers of the temporal variance of the normalised amplitude.
fn amplitude_variance(rows: &[Vec<f64>]) -> f64 {
    let width = rows.first().map_or(0, Vec::len);
    let n = rows.len() as f64;
    let mut total = 0.0;
    let mut used = 0;
    for k in 0..width {
        if rows.iter().all(|r| r[k] == 0.0) {
            continue;
        }
        let mean = rows.iter().map(|r| r[k]).sum::<f64>() / n;
        total += rows.iter().map(|r| (r[k] - mean).powi(2)).sum::<f64>() / n;
        used += 1;
    }
    total / f64::from(used.max(1))
}

fn scene(name: &str, seed: u64, rate_hz: f64) -> SimConfig {
    SimConfig {
        rate_hz,
        ..SimConfig::for_scene(name, seed).unwrap_or_default()
    }
}

#[test]
fn walking_moves_the_amplitudes_ten_times_more_than_an_empty_room() {
    for seed in 1..=4 {
        let (empty, _) = normalised_amplitudes(scene("empty", seed, 20.0));
        let (walk, _) = normalised_amplitudes(scene("walk", seed, 20.0));
        let quiet = amplitude_variance(&empty);
        let busy = amplitude_variance(&walk);
        assert!(quiet < 0.002, "seed {seed}: empty variance {quiet}");
        assert!(
            busy >= 10.0 * quiet,
            "seed {seed}: walk {busy} vs empty {quiet}"
        );
    }
}

/// Frequency (Hz) of the strongest spectral peak of `series` between `lo` and `hi` Hz, with its
/// ratio to the median power in that band.
fn dominant_frequency(series: &[f64], rate_hz: f64, lo: f64, hi: f64) -> (f64, f64) {
    let n = series.len();
    let mean = series.iter().sum::<f64>() / n as f64;
    let padded = n * 8;
    let mut input: Vec<f64> = series
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let hann = 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / (n - 1) as f64).cos();
            (x - mean) * hann
        })
        .collect();
    input.resize(padded, 0.0);
    let fft = RealFftPlanner::<f64>::new().plan_fft_forward(padded);
    let mut spectrum = fft.make_output_vec();
    if fft.process(&mut input, &mut spectrum).is_err() {
        return (0.0, 0.0);
    }
    let bin_hz = rate_hz / padded as f64;
    let power: Vec<f64> = spectrum.iter().map(|c| c.norm_sqr()).collect();
    let first = (lo / bin_hz).ceil() as usize;
    let last = (hi / bin_hz).floor() as usize;
    let mut best = first;
    for k in first..=last {
        if power[k] > power[best] {
            best = k;
        }
    }
    let (a, b, c) = (power[best - 1], power[best], power[best + 1]);
    let offset = 0.5 * (a - c) / (a - 2.0 * b + c);
    let mut band: Vec<f64> = power[first..=last].to_vec();
    band.sort_by(f64::total_cmp);
    let median = band[band.len() / 2];
    ((best as f64 + offset) * bin_hz, b / median)
}

#[test]
fn still_person_breathes_at_the_scripted_rate_in_the_best_subcarrier() {
    let rate_hz = 20.0;
    for seed in 1..=5 {
        let (rows, truths) = normalised_amplitudes(scene("still", seed, rate_hz));
        // Two minutes from the middle of the scene.
        let window = &rows[600..3000];
        let truth_bpm = truths[600..3000]
            .iter()
            .filter_map(|t| t.breathing_bpm)
            .sum::<f64>()
            / 2400.0;
        let Some(Activity::SitStill { breathing_bpm, .. }) = Some(truths[0].activity.clone())
        else {
            panic!("still starts sitting still");
        };
        assert!(
            (truth_bpm - breathing_bpm).abs() < 0.6,
            "truth wanders too far"
        );
        let mut best = (0.0, 0.0);
        for k in 0..window[0].len() {
            if window.iter().all(|r| r[k] == 0.0) {
                continue;
            }
            let series: Vec<f64> = window.iter().map(|r| r[k]).collect();
            let (f, prominence) = dominant_frequency(&series, rate_hz, 0.1, 0.5);
            if prominence > best.1 {
                best = (f, prominence);
            }
        }
        let found_bpm = best.0 * 60.0;
        assert!(
            (found_bpm - truth_bpm).abs() <= 0.5,
            "seed {seed}: found {found_bpm:.2} br/min, truth {truth_bpm:.2}"
        );
        assert!(
            best.1 > 20.0,
            "seed {seed}: breathing peak too weak {}",
            best.1
        );
    }
}

#[test]
fn empty_room_has_no_breathing_peak_to_speak_of() {
    let rate_hz = 20.0;
    let (rows, _) = normalised_amplitudes(scene("empty", 2, rate_hz));
    let window = &rows[0..2400];
    let mut strongest = 0.0f64;
    for k in 0..window[0].len() {
        if window.iter().all(|r| r[k] == 0.0) {
            continue;
        }
        let series: Vec<f64> = window.iter().map(|r| r[k]).collect();
        strongest = strongest.max(dominant_frequency(&series, rate_hz, 0.1, 0.5).1);
    }
    assert!(
        strongest < 20.0,
        "empty room shows a breathing-band peak: {strongest}"
    );
}

fn truths(name: &str, seed: u64) -> Vec<GroundTruth> {
    let mut sim = Simulator::new(scene(name, seed, 20.0));
    std::iter::from_fn(|| sim.next_truth()).collect()
}

#[test]
fn empty_scene_is_empty_throughout() {
    assert!(
        truths("empty", 1)
            .iter()
            .all(|t| !t.present && !t.moving && t.breathing_bpm.is_none() && t.range_m.is_none())
    );
}

#[test]
fn still_scene_is_seated_and_breathing_from_the_first_frame() {
    for seed in 1..=3 {
        let all = truths("still", seed);
        assert!(all.iter().all(|t| t.present
            && !t.moving
            && t.posture == Posture::Sitting
            && t.breathing_bpm.is_some()
            && t.heart_bpm.is_some()));
        let range = all[0].range_m.unwrap_or_default();
        assert!(range > 0.5 && range < 3.0, "{range}");
    }
}

#[test]
fn walk_scene_moves_throughout() {
    let all = truths("walk", 1);
    assert!(
        all.iter()
            .all(|t| t.present && t.moving && t.breathing_bpm.is_none())
    );
    let ranges: Vec<f64> = all.iter().filter_map(|t| t.range_m).collect();
    let spread =
        ranges.iter().copied().fold(0.0, f64::max) - ranges.iter().copied().fold(9.0, f64::min);
    assert!(spread > 1.0, "the walker stays in one spot: {spread}");
}

#[test]
fn demo_walks_in_sits_breathes_and_leaves() {
    let all = truths("demo", 1);
    let at = |t_s: f64| &all[(t_s * 20.0) as usize];
    assert!(all[..400].iter().all(|t| !t.present));
    assert!(at(30.0).present && at(30.0).moving);
    // Sitting still for most of the 100 s segment, after walking to the chair.
    let seated = all[1200..3200]
        .iter()
        .filter(|t| t.present && !t.moving && t.breathing_bpm.is_some())
        .count();
    assert!(seated > 1700, "{seated}");
    assert!(at(179.0).posture == Posture::Outside && !at(179.0).present);
}

#[test]
fn fall_scene_has_one_impact_then_lies_on_the_floor() {
    for seed in 1..=3 {
        let all = truths("fall", seed);
        let impacts: Vec<usize> = (0..all.len()).filter(|&i| all[i].impact).collect();
        assert!(!impacts.is_empty(), "seed {seed}: no impact");
        let (first, last) = (impacts[0], impacts[impacts.len() - 1]);
        assert_eq!(last - first + 1, impacts.len(), "one contiguous impact");
        assert!(impacts.len() <= 20, "the impact is a short burst");
        assert!(first > 400, "the fall comes after the walk");
        assert!(all[first - 1].action == BodyAction::Falling);
        let after = &all[last + 40..];
        assert!(after.len() > 45 * 20, "lying long enough for an alert");
        assert!(after.iter().all(|t| t.fallen
            && t.present
            && !t.moving
            && t.posture == Posture::LyingFloor
            && t.breathing_bpm.is_some()));
        assert!(all[..first].iter().all(|t| !t.fallen));
    }
}

#[test]
fn sitting_down_fast_is_not_a_fall() {
    let all = truths("sit-fast", 1);
    assert!(all.iter().all(|t| !t.fallen && !t.impact));
    assert!(all.iter().any(|t| t.action == BodyAction::SittingDown));
    let last = &all[all.len() - 1];
    assert!(last.posture == Posture::Sitting && last.breathing_bpm.is_some() && !last.moving);
}

#[test]
fn lie_bed_ends_lying_in_bed() {
    let all = truths("lie-bed", 1);
    assert!(all.iter().any(|t| t.action == BodyAction::LyingDown));
    let last = &all[all.len() - 1];
    assert!(last.posture == Posture::LyingBed && last.breathing_bpm.is_some());
    assert!(all.iter().all(|t| !t.fallen));
}

#[test]
fn leave_scene_ends_empty() {
    let all = truths("leave", 1);
    assert!(
        all[..40 * 20]
            .iter()
            .all(|t| t.present && t.breathing_bpm.is_some())
    );
    assert!(
        all[52 * 20..]
            .iter()
            .all(|t| !t.present && t.breathing_bpm.is_none())
    );
}

#[test]
fn no_breathing_scene_is_present_still_and_breathless() {
    let all = truths("no-breathing", 1);
    assert!(all[..40 * 20].iter().all(|t| t.breathing_bpm.is_some()));
    assert!(
        all[40 * 20..]
            .iter()
            .all(|t| t.present && !t.moving && t.breathing_bpm.is_none() && t.heart_bpm.is_none())
    );
}

/// Largest 0.2 s mean of the per-frame change of the normalised amplitudes over `frames`.
fn peak_motion(rows: &[Vec<f64>], frames: &[usize]) -> f64 {
    let change = |i: usize| -> f64 {
        let (a, b) = (&rows[i - 1], &rows[i]);
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / 52.0
    };
    frames
        .iter()
        .filter(|&&i| i >= 10)
        .map(|&i| (i - 9..=i).map(change).sum::<f64>() / 10.0)
        .fold(0.0, f64::max)
}

#[test]
fn a_fall_shakes_the_channel_more_than_lying_still_afterwards() {
    for seed in 1..=3 {
        let (rows, truths) = normalised_amplitudes(scene("fall", seed, 50.0));
        let falling: Vec<usize> = (0..truths.len())
            .filter(|&i| matches!(truths[i].action, BodyAction::Falling | BodyAction::Impact))
            .collect();
        let lying: Vec<usize> = (0..truths.len())
            .filter(|&i| truths[i].fallen && !truths[i].moving)
            .collect();
        let fall = peak_motion(&rows, &falling);
        let still = peak_motion(&rows, &lying);
        assert!(
            fall > 1.5 * still,
            "seed {seed}: fall {fall:.3} vs lying {still:.3}"
        );
    }
}
