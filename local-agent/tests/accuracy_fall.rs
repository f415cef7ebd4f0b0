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
use local_agent::sensing::source::simulator::{SimConfig, Simulator};

/// The seeds the fall thresholds (`FallConfig::default`) were tuned on.
const TUNING: std::ops::RangeInclusive<u64> = 1..=40;
/// The no-breathing delay's seeds (its own tuning set).
const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
/// Seeds never looked at while tuning: the scored numbers in the README come from these.
const UNSEEN: [std::ops::RangeInclusive<u64>; 2] = [101..=130, 201..=230];
// Bounds at the measured figures (2026-11-26), so a regression fails; the targets (≥ 9 of 10
// falls, no false alert) are not met and the README says so.
const FALLS_TUNED: usize = 34;
const SITFAST_BOUND: usize = 16;
const LIEBED_BOUND: usize = 1;
const LEAVE_BOUND: usize = 3;
const UNSEEN_FALLS: usize = 54;
const UNSEEN_SITFAST: usize = 37;
const UNSEEN_LIEBED: usize = 1;
const UNSEEN_LEAVE: usize = 4;

struct Run {
    alarms: Vec<AlarmEntry>,
    /// The same estimates through the stricter rule of issue 19 (`candidate_rule`).
    candidate: Vec<AlarmEntry>,
    /// Scene time of the first ground-truth impact sample.
    impact_t: Option<f64>,
}

fn run(scene: &str, seed: u64) -> Run {
    let cfg = SimConfig::for_scene(scene, seed).unwrap();
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut m = FallMonitor::new(FallConfig::default());
    let mut old = FallMonitor::new(candidate_rule());
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
            if let Some(a) = old.observe(frame.t_s, &e) {
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

/// The stricter impact rule tuned for issue 19 on seeds 1–40 and the tuning days (21–22): the
/// largest burst in the second before the motion ended at 2.4 × the stillness floor, the motion
/// gone within 0.5 s of it, and 1.5 × the median motion of the 5 s before it. Not the default:
/// it raises one false alert in the scored whole day (`accuracy_day`, seed 23).
fn candidate_rule() -> FallConfig {
    FallConfig {
        impact_ratio: 2.4,
        impact_lead: 1.5,
        impact_peak_s: 1.05,
        impact_drop_s: 0.55,
        ..FallConfig::default()
    }
}

fn runs(scene: &str) -> Vec<Run> {
    SEEDS.map(|seed| run(scene, seed)).collect()
}

/// Seeds in parallel (two threads: the machine has two cores).
fn runs_over(scene: &str, seeds: impl IntoIterator<Item = u64>) -> Vec<(u64, Run)> {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let (a, b) = seeds.split_at(seeds.len() / 2);
    std::thread::scope(|s| {
        let h1 = s.spawn(|| a.iter().map(|&k| (k, run(scene, k))).collect::<Vec<_>>());
        let h2 = s.spawn(|| b.iter().map(|&k| (k, run(scene, k))).collect::<Vec<_>>());
        let mut out = h1.join().expect("thread");
        out.extend(h2.join().expect("thread"));
        out
    })
}

/// Seeds whose run raised `alarm` (under the candidate rule with `candidate`).
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

/// Tuning seeds 1–40: the thresholds were chosen on these (and the day's transitions, capped and
/// whole, seeds 21–22). Measured (2026-11-26): 30 of 40, missed 1, 3, 7, 19, 23, 25, 35, 36, 37
/// and 38 (37 never shows the fall at all: its walk and drop stay within 1.8× the floor, a
/// coverage gap).
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
        "tuning falls, candidate rule: detected {}/{}, missed {:?}",
        cand.len(),
        runs.len(),
        TUNING.filter(|k| !cand.contains(k)).collect::<Vec<_>>()
    );
    assert!(seeds.len() >= FALLS_TUNED, "detected {} of 40", seeds.len());
}

fn fall_alerts_on_tuning_seeds(scene: &str) -> Vec<u64> {
    let runs = runs_over(scene, TUNING);
    let falls = alarmed(&runs, FallAlarm::Fall);
    println!(
        "tuning {scene}: fall alerts in {}/40 {falls:?}",
        falls.len()
    );
    let cand = alarmed_by(&runs, FallAlarm::Fall, true);
    println!(
        "tuning {scene}, candidate rule: fall alerts in {}/40 {cand:?}",
        cand.len()
    );
    assert!(alarmed(&runs, FallAlarm::NoBreathing).is_empty());
    falls
}

/// Target: none. The hard landing on a chair and a fall end alike in these estimates (see
/// `FallMonitor`'s notes); measured on the tuning seeds: 16 of 40 (the candidate rule: 2, seeds
/// 10 and 15). Before the scene's walk was lengthened, the landing fell inside the monitor's
/// 20 s start-up and this test ("0 of 10") could not fail.
#[test]
fn sitting_down_fast_rarely_raises_a_fall_alert() {
    let falls = fall_alerts_on_tuning_seeds("sit-fast");
    assert!(falls.len() <= SITFAST_BOUND, "{falls:?}");
}

#[test]
fn lying_down_slowly_on_the_bed_rarely_raises_a_fall_alert() {
    let falls = fall_alerts_on_tuning_seeds("lie-bed");
    assert!(falls.len() <= LIEBED_BOUND, "{falls:?}");
}

/// Target: none. Measured 3 of 40 (9, 27, 29: the last steps out of the door end in a burst as
/// large as an impact); the candidate rule, which wants the burst to stand out from the walk
/// before it, raises none.
#[test]
fn leaving_the_room_rarely_raises_a_fall_alert() {
    let falls = fall_alerts_on_tuning_seeds("leave");
    assert!(falls.len() <= LEAVE_BOUND, "{falls:?}");
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
/// 2026-11-26 (default rule): falls 54 of 60 (90 %; missed 112, 115, 117, 125, 212, 215); fall
/// alerts after sit-fast 37/60, lie-bed 1/60, leave 4/60; no no-breathing alarm.** The candidate
/// rule on the same runs: falls 50/60, sit-fast 11/60, lie-bed 1/60, leave 0/60. The false-alert
/// target is not met by either; the bounds hold the default's measured figures. (The candidate
/// was scored twice: at a burst ratio of 2.0, then at 2.4 after the scored whole day alerted at a
/// desk sit-down; 2.4 was chosen on the tuning seeds' days and changed only lie-bed, 2 → 1.)
#[test]
fn falls_on_unseen_seeds() {
    let seeds = || UNSEEN.iter().flat_map(|r| r.clone());
    let falls = runs_over("fall", seeds());
    let (hit, _) = detected(&falls);
    let missed: Vec<u64> = seeds().filter(|k| !hit.contains(k)).collect();
    println!(
        "unseen falls: detected {}/{} within {} s, missed {missed:?}",
        hit.len(),
        falls.len(),
        FallConfig::default().fallen_after_s + 5.0
    );
    let (old_hit, _) = detected_by(&falls, true);
    println!(
        "unseen falls, candidate rule: detected {}/{}, missed {:?}",
        old_hit.len(),
        falls.len(),
        seeds().filter(|k| !old_hit.contains(k)).collect::<Vec<_>>()
    );
    let mut false_alarms = Vec::new();
    for scene in ["sit-fast", "lie-bed", "leave"] {
        let runs = runs_over(scene, seeds());
        let fall_alerts = alarmed(&runs, FallAlarm::Fall);
        let nb = alarmed(&runs, FallAlarm::NoBreathing);
        println!(
            "unseen {scene}: fall alerts in {}/{} runs {fall_alerts:?}, no-breathing in {} {nb:?}",
            fall_alerts.len(),
            runs.len(),
            nb.len()
        );
        let old = alarmed_by(&runs, FallAlarm::Fall, true);
        println!(
            "unseen {scene}, candidate rule: fall alerts in {}/{} runs {old:?}",
            old.len(),
            runs.len()
        );
        false_alarms.push((scene, fall_alerts.len(), nb.len()));
    }
    assert!(
        hit.len() >= UNSEEN_FALLS,
        "detected {} of {}",
        hit.len(),
        falls.len()
    );
    for (scene, fall_alerts, nb) in false_alarms {
        let bound = match scene {
            "sit-fast" => UNSEEN_SITFAST,
            "lie-bed" => UNSEEN_LIEBED,
            _ => UNSEEN_LEAVE,
        };
        assert!(fall_alerts <= bound, "{scene}: {fall_alerts} fall alerts");
        assert_eq!(nb, 0, "{scene}: no-breathing alarms");
    }
}
