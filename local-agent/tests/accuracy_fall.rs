//! Fall monitor accuracy on the simulator: the real pipeline's estimates, sampled every 0.1 s of
//! scene time, drive a `FallMonitor` exactly as the runner does (the simulator is treated as live
//! here only because the test builds the monitor directly; the engine never does).
//!
//! Targets (notes/sensing.md §7 and issue 4): falls detected in ≥ 9 of 10 seeded runs within the
//! stillness threshold + 5 s of the impact; no fall alert in sit-fast, lie-bed or leave runs.
//! Issue 19: the impact rule is tuned on seeds 1–40 (`TUNING`) and scored on 101–130 and 201–230
//! (`UNSEEN`), which were run once, after the rule was fixed.

mod sim_support;

use local_agent::sensing::fall::{AlarmEntry, FallAlarm, FallConfig, FallMonitor};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{NoiseModel, SimConfig, Simulator};

/// The seeds the fall thresholds (`FallConfig::default`) were tuned on.
const TUNING: std::ops::RangeInclusive<u64> = 1..=40;
/// The no-breathing delay's seeds (its own tuning set).
const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
/// Seeds never looked at while tuning: the scored numbers in the README come from these.
const UNSEEN: [std::ops::RangeInclusive<u64>; 2] = [101..=130, 201..=230];
// Bounds at the measured figures (2026-11-26), so a regression fails. The default (burst) rule
// meets the fall target on the unseen seeds (54 of 60) and not the false-alert one; the
// fast-motion rule (`FallConfig::fast_motion`, `--fall-rule fast-motion`) meets "no alert after
// lying down or walking out" and not the fall target (47 of 60). Figures: (tuning falls of 40,
// unseen falls of 60, hard-sit alerts tuning / unseen, lie-down alerts tuning / unseen, walk-out
// alerts tuning / unseen).
struct Bounds {
    falls_tuned: usize,
    falls_unseen: usize,
    sitfast: (usize, usize),
    liebed: (usize, usize),
    leave: (usize, usize),
}
const BURST: Bounds = Bounds {
    falls_tuned: 34,
    falls_unseen: 54,
    sitfast: (16, 37),
    liebed: (1, 1),
    leave: (3, 4),
};
const FAST: Bounds = Bounds {
    falls_tuned: 34,
    falls_unseen: 47,
    sitfast: (3, 7),
    liebed: (0, 0),
    leave: (0, 0),
};
/// Under the measured noise model, unseen seeds only (the tuning figures are not asserted:
/// `NOISE=measured` runs `diag_fall.rs` on them).
const MEASURED_BURST: Bounds = Bounds {
    falls_tuned: 0,
    falls_unseen: 10,
    sitfast: (40, 4),
    liebed: (40, 0),
    leave: (40, 2),
};
const MEASURED_FAST: Bounds = Bounds {
    falls_tuned: 0,
    falls_unseen: 21,
    sitfast: (40, 6),
    liebed: (40, 1),
    leave: (40, 0),
};

struct Run {
    alarms: Vec<AlarmEntry>,
    /// The same estimates through the fast-motion rule (`FallConfig::fast_motion`).
    candidate: Vec<AlarmEntry>,
    /// Scene time of the first ground-truth impact sample.
    impact_t: Option<f64>,
}

fn run(scene: &str, seed: u64, noise: &NoiseModel) -> Run {
    let mut cfg = SimConfig::for_scene(scene, seed).unwrap();
    cfg.noise = noise.clone();
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut m = FallMonitor::new(FallConfig::default());
    let mut cand = FallMonitor::new(FallConfig::fast_motion());
    let mut alarms = Vec::new();
    let mut candidate = Vec::new();
    let mut impact_t = None;
    let mut next = 0.0;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if truth.impact && impact_t.is_none() {
            impact_t = Some(frame.t_s);
        }
        if frame.t_s >= next {
            next += 0.1;
            let e = p.estimates();
            if let Some(a) = m.observe(frame.t_s, &e) {
                alarms.push(a);
            }
            if let Some(a) = cand.observe(frame.t_s, &e) {
                candidate.push(a);
            }
        }
    }
    Run {
        alarms,
        candidate,
        impact_t,
    }
}

fn runs(scene: &str) -> Vec<Run> {
    SEEDS
        .map(|seed| run(scene, seed, &NoiseModel::white()))
        .collect()
}

/// Seeds in parallel (two threads: the machine has two cores), white noise.
fn runs_over(scene: &str, seeds: impl IntoIterator<Item = u64>) -> Vec<(u64, Run)> {
    runs_under(scene, seeds, &NoiseModel::white())
}

fn runs_under(
    scene: &str,
    seeds: impl IntoIterator<Item = u64>,
    noise: &NoiseModel,
) -> Vec<(u64, Run)> {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let (a, b) = seeds.split_at(seeds.len() / 2);
    std::thread::scope(|s| {
        let h1 = s.spawn(|| {
            a.iter()
                .map(|&k| (k, run(scene, k, noise)))
                .collect::<Vec<_>>()
        });
        let h2 = s.spawn(|| {
            b.iter()
                .map(|&k| (k, run(scene, k, noise)))
                .collect::<Vec<_>>()
        });
        let mut out = h1.join().expect("thread");
        out.extend(h2.join().expect("thread"));
        out
    })
}

/// Seeds whose run raised `alarm` (under the fast-motion rule with `candidate`).
fn alarmed_by(runs: &[(u64, Run)], alarm: FallAlarm, candidate: bool) -> Vec<u64> {
    runs.iter()
        .filter(|(_, r)| {
            let alarms = if candidate { &r.candidate } else { &r.alarms };
            alarms.iter().any(|a| a.alarm == alarm)
        })
        .map(|(k, _)| *k)
        .collect()
}

fn alarmed(runs: &[(u64, Run)], alarm: FallAlarm) -> Vec<u64> {
    alarmed_by(runs, alarm, false)
}

/// Seeds whose fall was alerted within the stillness delay + 5 s of the impact, and the
/// latencies.
fn detected(runs: &[(u64, Run)]) -> (Vec<u64>, Vec<f64>) {
    detected_by(runs, false)
}

fn detected_by(runs: &[(u64, Run)], candidate: bool) -> (Vec<u64>, Vec<f64>) {
    let limit = FallConfig::default().fallen_after_s + 5.0;
    let mut seeds = Vec::new();
    let mut latencies = Vec::new();
    for (k, r) in runs {
        let impact = r.impact_t.expect("the fall scene has an impact");
        let alarms = if candidate { &r.candidate } else { &r.alarms };
        if let Some(a) = alarms.iter().find(|a| a.alarm == FallAlarm::Fall)
            && (0.0..=limit).contains(&(a.t_s - impact))
        {
            seeds.push(*k);
            latencies.push(a.t_s - impact);
        }
    }
    (seeds, latencies)
}

/// Tuning seeds 1–40: the thresholds were chosen on these (`tests/diag_fall.rs` sweeps them).
/// Measured (2026-11-26): 34 of 40, missed 11, 18, 25, 26, 36, 37 (37 never shows the fall at
/// all: its walk and drop stay within 1.8× the floor, a coverage gap; 11 and 18 land with little
/// energy above the cut).
#[test]
fn falls_are_detected_within_the_stillness_delay_plus_5_s() {
    let runs = runs_over("fall", TUNING);
    for (k, r) in &runs {
        let falls = r
            .alarms
            .iter()
            .filter(|a| a.alarm == FallAlarm::Fall)
            .count();
        assert!(falls <= 1, "seed {k}: one alert per episode");
    }
    let (seeds, latencies) = detected(&runs);
    let missed: Vec<u64> = TUNING.filter(|k| !seeds.contains(k)).collect();
    println!(
        "tuning falls: detected {}/{}, missed {missed:?}, latencies {latencies:.1?}",
        seeds.len(),
        runs.len()
    );
    let (cand, _) = detected_by(&runs, true);
    println!(
        "tuning falls, fast-motion rule: detected {}/{}, missed {:?}",
        cand.len(),
        runs.len(),
        TUNING.filter(|k| !cand.contains(k)).collect::<Vec<_>>()
    );
    assert!(
        seeds.len() >= BURST.falls_tuned,
        "detected {} of 40",
        seeds.len()
    );
    assert!(
        cand.len() >= FAST.falls_tuned,
        "fast-motion rule: detected {} of 40",
        cand.len()
    );
}

/// Fall alerts on the tuning seeds: (default rule, fast-motion rule).
fn fall_alerts_on_tuning_seeds(scene: &str) -> (Vec<u64>, Vec<u64>) {
    let runs = runs_over(scene, TUNING);
    let falls = alarmed(&runs, FallAlarm::Fall);
    println!(
        "tuning {scene}: fall alerts in {}/40 {falls:?}",
        falls.len()
    );
    let cand = alarmed_by(&runs, FallAlarm::Fall, true);
    println!(
        "tuning {scene}, fast-motion rule: fall alerts in {}/40 {cand:?}",
        cand.len()
    );
    assert!(alarmed(&runs, FallAlarm::NoBreathing).is_empty());
    (falls, cand)
}

/// Target: none. A hard landing on a chair ends in a burst as large as a fall's; the fast-motion
/// rule tells most apart (see `FallMonitor`'s notes). Measured on the tuning seeds: default 16 of
/// 40, fast-motion rule 3 of 40 (9, 15, 27). Before the scene's walk was lengthened, the landing
/// fell inside the monitor's 20 s start-up and this test ("0 of 10") could not fail.
#[test]
fn sitting_down_fast_rarely_raises_a_fall_alert() {
    let (falls, fast) = fall_alerts_on_tuning_seeds("sit-fast");
    assert!(falls.len() <= BURST.sitfast.0, "{falls:?}");
    assert!(fast.len() <= FAST.sitfast.0, "fast-motion rule: {fast:?}");
}

/// Target: none. Measured: default 1 of 40, fast-motion rule 0.
#[test]
fn lying_down_slowly_on_the_bed_raises_no_fall_alert() {
    let (falls, fast) = fall_alerts_on_tuning_seeds("lie-bed");
    assert!(falls.len() <= BURST.liebed.0, "{falls:?}");
    assert!(fast.len() <= FAST.liebed.0, "fast-motion rule: {fast:?}");
}

/// Target: none. Measured: default 3 of 40 (the last steps out of the door end in a burst as
/// large as an impact, but at walking frequencies), fast-motion rule 0.
#[test]
fn leaving_the_room_raises_no_fall_alert() {
    let (falls, fast) = fall_alerts_on_tuning_seeds("leave");
    assert!(falls.len() <= BURST.leave.0, "{falls:?}");
    assert!(fast.len() <= FAST.leave.0, "fast-motion rule: {fast:?}");
}

#[test]
fn breathing_that_stops_raises_no_breathing_within_the_delay_plus_5_s() {
    let cfg = FallConfig::default();
    let runs = runs("no-breathing");
    let mut detected = 0;
    let mut latencies = Vec::new();
    for (seed, r) in SEEDS.zip(&runs) {
        let a = r.alarms.iter().find(|a| a.alarm == FallAlarm::NoBreathing);
        println!("no-breathing seed {seed}: {a:?}");
        assert!(!r.alarms.iter().any(|a| a.alarm == FallAlarm::Fall));
        // Chest motion stops at 40 s of scene time. The monitor's delay runs from the last
        // accepted breath (the alarm's onset), which the 30 s breathing window holds 11–21 s past
        // the real stop; so the alarm must come within the delay + 5 s of its onset, and within
        // the delay + one breathing window of the real stop.
        if let Some(a) = a
            && a.t_s >= 40.0
            && a.t_s - a.onset_t_s <= cfg.no_breath_after_s + 5.0
            && a.t_s - 40.0 <= cfg.no_breath_after_s + 30.0
        {
            detected += 1;
            latencies.push(a.t_s - 40.0);
        }
    }
    println!("detected {detected}/10, seconds after the chest stopped {latencies:?}");
    // Measured 9 of 10. Seed 8: breathing was accepted for only 16.6 s before it stopped, under
    // the 20 s a track must run before its loss counts. Listed in local-agent/README.md.
    assert!(
        detected >= 9,
        "no-breathing detected in {detected} of 10 runs"
    );
}

/// Scored on 60 seeds the thresholds never saw (the README's numbers): 101–130 and 201–230.
/// Target: falls detected within the stillness delay + 5 s in ≥ 9 of 10, no fall alert after
/// sitting down hard, lying down slowly or walking out, and no no-breathing alarm. **Measured
/// 2026-11-26, scored once.** Default (burst) rule: falls 54 of 60 (90 %; missed 112, 115, 117,
/// 125, 212, 215), fall alerts after sit-fast 37/60, lie-bed 1/60, leave 4/60. Fast-motion rule:
/// falls 47/60 (78 %), sit-fast 7/60, lie-bed 0/60, leave 0/60. Neither meets both targets; the
/// bounds hold each rule's measured figures.
#[test]
fn falls_on_unseen_seeds() {
    score_unseen("white", &NoiseModel::white(), &BURST, &FAST);
}

/// The same seeds under the noise measured on real quiet rooms (`NoiseModel::measured()`:
/// correlated across subcarriers, a per-packet tilt of the spectrum, interference on 0.4 % of
/// packets). Nothing was tuned on these runs. Measured 2026-11-26: default (burst) rule 10 of 60
/// falls, fall alerts after sit-fast 4/60, lie-bed 0/60, leave 2/60; fast-motion rule 21 of 60,
/// 6, 1 and 0; no no-breathing alarm. Far from the white-noise figures: see the README's
/// "Fall, unseen seeds" row for what was tried against it and why nothing was kept.
#[test]
fn falls_on_unseen_seeds_under_measured_noise() {
    score_unseen(
        "measured",
        &NoiseModel::measured(),
        &MEASURED_BURST,
        &MEASURED_FAST,
    );
}

fn score_unseen(label: &str, noise: &NoiseModel, burst_bounds: &Bounds, fast_bounds: &Bounds) {
    let seeds = || UNSEEN.iter().flat_map(|r| r.clone());
    let falls = runs_under("fall", seeds(), noise);
    let (hit, _) = detected(&falls);
    let missed: Vec<u64> = seeds().filter(|k| !hit.contains(k)).collect();
    println!(
        "{label} noise, unseen falls: detected {}/{} within {} s, missed {missed:?}",
        hit.len(),
        falls.len(),
        FallConfig::default().fallen_after_s + 5.0
    );
    let (cand_hit, _) = detected_by(&falls, true);
    println!(
        "{label} noise, unseen falls, fast-motion rule: detected {}/{}, missed {:?}",
        cand_hit.len(),
        falls.len(),
        seeds()
            .filter(|k| !cand_hit.contains(k))
            .collect::<Vec<_>>()
    );
    let mut false_alarms = Vec::new();
    for scene in ["sit-fast", "lie-bed", "leave"] {
        let runs = runs_under(scene, seeds(), noise);
        let fall_alerts = alarmed(&runs, FallAlarm::Fall);
        let nb = alarmed(&runs, FallAlarm::NoBreathing);
        println!(
            "{label} noise, unseen {scene}: fall alerts in {}/{} runs {fall_alerts:?}, no-breathing in {} {nb:?}",
            fall_alerts.len(),
            runs.len(),
            nb.len()
        );
        let cand = alarmed_by(&runs, FallAlarm::Fall, true);
        println!(
            "{label} noise, unseen {scene}, fast-motion rule: fall alerts in {}/{} runs {cand:?}",
            cand.len(),
            runs.len()
        );
        false_alarms.push((scene, fall_alerts.len(), cand.len(), nb.len()));
    }
    assert!(
        hit.len() >= burst_bounds.falls_unseen,
        "detected {} of {}",
        hit.len(),
        falls.len()
    );
    assert!(
        cand_hit.len() >= fast_bounds.falls_unseen,
        "fast-motion rule: detected {} of {}",
        cand_hit.len(),
        falls.len()
    );
    for (scene, fall_alerts, fast_alerts, nb) in false_alarms {
        let (burst, fast) = match scene {
            "sit-fast" => (burst_bounds.sitfast.1, fast_bounds.sitfast.1),
            "lie-bed" => (burst_bounds.liebed.1, fast_bounds.liebed.1),
            _ => (burst_bounds.leave.1, fast_bounds.leave.1),
        };
        assert!(fall_alerts <= burst, "{scene}: {fall_alerts} fall alerts");
        assert!(
            fast_alerts <= fast,
            "{scene}: {fast_alerts} fall alerts under the fast-motion rule"
        );
        assert_eq!(nb, 0, "{scene}: no-breathing alarms");
    }
}
