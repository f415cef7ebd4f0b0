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

/// The three impact rules `--fall-rule` offers, each run on the same estimates.
const RULES: [&str; 3] = ["standard", "fast-motion", "burst"];

fn rule_config(i: usize) -> FallConfig {
    match i {
        0 => FallConfig::default(),
        1 => FallConfig::fast_motion(),
        _ => FallConfig::burst(),
    }
}

// Bounds at the measured figures (2026-11-27), so a regression fails. Figures: (tuning falls of
// 40, unseen falls of 60, hard-sit alerts tuning / unseen, lie-down alerts tuning / unseen,
// walk-out alerts tuning / unseen). No rule meets both targets: the standard rule finds 48 of 60
// unseen falls under white noise and 50 under the measured noise, the burst rule 54 and 10.
struct Bounds {
    falls_tuned: usize,
    falls_unseen: usize,
    sitfast: (usize, usize),
    liebed: (usize, usize),
    leave: (usize, usize),
}
const WHITE: [Bounds; 3] = [
    Bounds {
        falls_tuned: 33,
        falls_unseen: 48,
        sitfast: (3, 11),
        liebed: (1, 0),
        leave: (0, 0),
    },
    Bounds {
        falls_tuned: 33,
        falls_unseen: 47,
        sitfast: (2, 5),
        liebed: (0, 0),
        leave: (0, 0),
    },
    Bounds {
        falls_tuned: 34,
        falls_unseen: 54,
        sitfast: (16, 37),
        liebed: (1, 1),
        leave: (3, 4),
    },
];
/// Under the measured noise model, unseen seeds only (the tuning figures are not asserted:
/// `NOISE=measured` runs `diag_fall.rs` on them).
const MEASURED: [Bounds; 3] = [
    Bounds {
        falls_tuned: 0,
        falls_unseen: 50,
        sitfast: (40, 7),
        liebed: (40, 1),
        leave: (40, 0),
    },
    Bounds {
        falls_tuned: 0,
        falls_unseen: 45,
        sitfast: (40, 5),
        liebed: (40, 0),
        leave: (40, 0),
    },
    Bounds {
        falls_tuned: 0,
        falls_unseen: 10,
        sitfast: (40, 4),
        liebed: (40, 0),
        leave: (40, 2),
    },
];

struct Run {
    /// The alarms each rule of `RULES` raised on the same estimates.
    alarms: [Vec<AlarmEntry>; 3],
    /// Scene time of the first ground-truth impact sample.
    impact_t: Option<f64>,
}

fn run(scene: &str, seed: u64, noise: &NoiseModel) -> Run {
    let mut cfg = SimConfig::for_scene(scene, seed).unwrap();
    cfg.noise = noise.clone();
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut monitors: [FallMonitor; 3] = std::array::from_fn(|i| FallMonitor::new(rule_config(i)));
    let mut alarms: [Vec<AlarmEntry>; 3] = Default::default();
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
            for (m, out) in monitors.iter_mut().zip(alarms.iter_mut()) {
                if let Some(a) = m.observe(frame.t_s, &e) {
                    out.push(a);
                }
            }
        }
    }
    Run { alarms, impact_t }
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

/// Seeds whose run raised `alarm` under rule `rule` (an index into `RULES`).
fn alarmed_by(runs: &[(u64, Run)], alarm: FallAlarm, rule: usize) -> Vec<u64> {
    runs.iter()
        .filter(|(_, r)| r.alarms[rule].iter().any(|a| a.alarm == alarm))
        .map(|(k, _)| *k)
        .collect()
}

fn alarmed(runs: &[(u64, Run)], alarm: FallAlarm) -> Vec<u64> {
    alarmed_by(runs, alarm, 0)
}

/// Seeds whose fall rule `rule` alerted within the stillness delay + 5 s of the impact, and the
/// latencies.
fn detected_by(runs: &[(u64, Run)], rule: usize) -> (Vec<u64>, Vec<f64>) {
    let limit = FallConfig::default().fallen_after_s + 5.0;
    let mut seeds = Vec::new();
    let mut latencies = Vec::new();
    for (k, r) in runs {
        let impact = r.impact_t.expect("the fall scene has an impact");
        if let Some(a) = r.alarms[rule].iter().find(|a| a.alarm == FallAlarm::Fall)
            && (0.0..=limit).contains(&(a.t_s - impact))
        {
            seeds.push(*k);
            latencies.push(a.t_s - impact);
        }
    }
    (seeds, latencies)
}

/// Tuning seeds 1–40: the thresholds were chosen on these (`tests/diag_fall.rs` sweeps them).
/// Measured (2026-11-27), white noise: standard 33 of 40 (missed 7, 11, 18, 25, 26, 36, 37: 37
/// never shows the fall at all, its walk and drop stay within 1.8× the floor; 11 and 18 land with
/// little energy above the cut), fast-motion 33, burst 34.
#[test]
fn falls_are_detected_within_the_stillness_delay_plus_5_s() {
    let runs = runs_over("fall", TUNING);
    for (k, r) in &runs {
        for alarms in &r.alarms {
            let falls = alarms.iter().filter(|a| a.alarm == FallAlarm::Fall).count();
            assert!(falls <= 1, "seed {k}: one alert per episode");
        }
    }
    for (i, rule) in RULES.iter().enumerate() {
        let (seeds, latencies) = detected_by(&runs, i);
        let missed: Vec<u64> = TUNING.filter(|k| !seeds.contains(k)).collect();
        println!(
            "tuning falls, {rule} rule: detected {}/{}, missed {missed:?}, latencies {latencies:.1?}",
            seeds.len(),
            runs.len()
        );
        assert!(
            seeds.len() >= WHITE[i].falls_tuned,
            "{rule} rule: detected {} of 40",
            seeds.len()
        );
    }
}

/// Fall alerts on the tuning seeds, per rule, checked against `bound` (tuning figure of a scene).
fn fall_alerts_on_tuning_seeds(scene: &str, bound: impl Fn(&Bounds) -> usize) {
    let runs = runs_over(scene, TUNING);
    assert!(alarmed(&runs, FallAlarm::NoBreathing).is_empty());
    for (i, rule) in RULES.iter().enumerate() {
        let falls = alarmed_by(&runs, FallAlarm::Fall, i);
        println!(
            "tuning {scene}, {rule} rule: fall alerts in {}/40 {falls:?}",
            falls.len()
        );
        assert!(falls.len() <= bound(&WHITE[i]), "{rule} rule: {falls:?}");
    }
}

/// Target: none. A hard landing on a chair ends in a burst as large as a fall's; the check of
/// fast motion tells most apart (see `FallMonitor`'s notes). Measured on the tuning seeds:
/// standard 3 of 40 (9, 26, 27), fast-motion 2 (9, 27), burst 16. Before the scene's walk was
/// lengthened, the landing fell inside the monitor's 20 s start-up and this test ("0 of 10")
/// could not fail.
#[test]
fn sitting_down_fast_rarely_raises_a_fall_alert() {
    fall_alerts_on_tuning_seeds("sit-fast", |b| b.sitfast.0);
}

/// Target: none. Measured: standard 1 of 40 (10), fast-motion 0, burst 1.
#[test]
fn lying_down_slowly_on_the_bed_raises_no_fall_alert() {
    fall_alerts_on_tuning_seeds("lie-bed", |b| b.liebed.0);
}

/// Target: none. Measured: standard 0 of 40, fast-motion 0, burst 3 (the last steps out of the
/// door end in a burst as large as an impact, but at walking frequencies).
#[test]
fn leaving_the_room_raises_no_fall_alert() {
    fall_alerts_on_tuning_seeds("leave", |b| b.leave.0);
}

#[test]
fn breathing_that_stops_raises_no_breathing_within_the_delay_plus_5_s() {
    let cfg = FallConfig::default();
    let runs = runs("no-breathing");
    let mut detected = 0;
    let mut latencies = Vec::new();
    for (seed, r) in SEEDS.zip(&runs) {
        let a = r.alarms[0]
            .iter()
            .find(|a| a.alarm == FallAlarm::NoBreathing);
        println!("no-breathing seed {seed}: {a:?}");
        assert!(!r.alarms[0].iter().any(|a| a.alarm == FallAlarm::Fall));
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
/// 2026-11-27, scored once after the rules were chosen on the tuning seeds.** Standard: falls
/// 48 of 60 (missed 106, 112, 115, 117, 120, 125, 201, 212, 215, 218, 224, 225), fall alerts
/// after sit-fast 11/60, lie-bed 0/60, leave 0/60. Fast-motion: 47/60, 5, 0, 0. Burst (the
/// default until then, unchanged): 54/60, 37, 1, 4. No rule meets both targets; the bounds hold
/// the measured figures.
#[test]
fn falls_on_unseen_seeds() {
    score_unseen("white", &NoiseModel::white(), &unseen(), Some(&WHITE));
}

/// The same seeds under the noise measured on real quiet rooms (`NoiseModel::measured()`:
/// correlated across subcarriers, a per-packet tilt of the spectrum, interference on 0.4 % of
/// packets). Measured 2026-11-27: standard 50 of 60 falls (missed 106, 112, 115, 120, 125, 215,
/// 218, 219, 224, 225), fall alerts after sit-fast 7/60, lie-bed 1/60, leave 0/60; fast-motion
/// 45, 5, 0, 0; burst 10, 4, 0, 2 (an interference packet after the fall hides it: see
/// `FallConfig::impact_hold`).
#[test]
fn falls_on_unseen_seeds_under_measured_noise() {
    score_unseen(
        "measured",
        &NoiseModel::measured(),
        &unseen(),
        Some(&MEASURED),
    );
}

/// Sixty more seeds (301–330, 401–430), run once after the 2026-11-27 rules were fixed, under
/// both noise models; prints the figures the README quotes and asserts nothing. Measured: white
/// standard 52 of 60 falls, alerts after sit-fast 12, lie-bed 2, leave 0; fast-motion 50, 10,
/// 0, 0; burst 54, 33, 2, 6. Measured noise: standard 50, 11, 1, 0; fast-motion 46, 6, 0, 0;
/// burst 12, 3, 0, 2. About a minute in release, several in the dev profile:
/// `cargo test --release -p local-agent --test accuracy_fall -- --ignored --nocapture`.
#[test]
#[ignore]
fn falls_on_sixty_fresh_seeds() {
    let seeds: Vec<u64> = (301..=330).chain(401..=430).collect();
    score_unseen("white, fresh", &NoiseModel::white(), &seeds, None);
    score_unseen("measured, fresh", &NoiseModel::measured(), &seeds, None);
}

fn unseen() -> Vec<u64> {
    UNSEEN.iter().flat_map(|r| r.clone()).collect()
}

/// Prints every rule's figures on `seeds` and, with `bounds`, holds them to it.
fn score_unseen(label: &str, noise: &NoiseModel, seeds: &[u64], bounds: Option<&[Bounds; 3]>) {
    let seeds = || seeds.iter().copied();
    let falls = runs_under("fall", seeds(), noise);
    let mut hits = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        let (hit, _) = detected_by(&falls, i);
        let missed: Vec<u64> = seeds().filter(|k| !hit.contains(k)).collect();
        println!(
            "{label} noise, unseen falls, {rule} rule: detected {}/{} within {} s, missed {missed:?}",
            hit.len(),
            falls.len(),
            FallConfig::default().fallen_after_s + 5.0
        );
        hits.push(hit.len());
    }
    let mut false_alarms = Vec::new();
    for scene in ["sit-fast", "lie-bed", "leave"] {
        let runs = runs_under(scene, seeds(), noise);
        let nb = alarmed(&runs, FallAlarm::NoBreathing);
        println!(
            "{label} noise, unseen {scene}: no-breathing in {} {nb:?}",
            nb.len()
        );
        assert_eq!(nb.len(), 0, "{scene}: no-breathing alarms");
        for (i, rule) in RULES.iter().enumerate() {
            let fall_alerts = alarmed_by(&runs, FallAlarm::Fall, i);
            println!(
                "{label} noise, unseen {scene}, {rule} rule: fall alerts in {}/{} runs {fall_alerts:?}",
                fall_alerts.len(),
                runs.len()
            );
            false_alarms.push((scene, i, fall_alerts.len()));
        }
    }
    let Some(bounds) = bounds else {
        return;
    };
    for (i, rule) in RULES.iter().enumerate() {
        assert!(
            hits[i] >= bounds[i].falls_unseen,
            "{rule} rule: detected {} of {}",
            hits[i],
            falls.len()
        );
    }
    for (scene, i, alerts) in false_alarms {
        let b = &bounds[i];
        let bound = match scene {
            "sit-fast" => b.sitfast.1,
            "lie-bed" => b.liebed.1,
            _ => b.leave.1,
        };
        assert!(
            alerts <= bound,
            "{scene}: {alerts} fall alerts under the {} rule",
            RULES[i]
        );
    }
}

/// The runner publishes estimates on every batch of packets, not every 0.1 s, and feeds the
/// monitor each time, so one 0.1 s block reaches it many times. The verdicts must not depend on
/// that: before the monitor counted each block once (`Estimates::motion_tick`), a default
/// monitor fed on every frame alerted after 26 of the 40 tuning hard sits instead of 3.
#[test]
fn the_verdict_does_not_depend_on_how_often_the_monitor_is_fed() {
    for scene in ["fall", "sit-fast"] {
        let per_seed = |seed: u64| {
            let cfg = SimConfig::for_scene(scene, seed).unwrap();
            let mut sim = Simulator::new(cfg);
            let mut p = Pipeline::new(PipelineConfig::default());
            let mut every_block = FallMonitor::new(FallConfig::default());
            let mut every_frame = FallMonitor::new(FallConfig::default());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut next = 0.0;
            while let Some((frame, _)) = sim.next_frame() {
                p.push(&frame);
                let e = p.estimates();
                if frame.t_s >= next {
                    next += 0.1;
                    a.extend(every_block.observe(frame.t_s, &e));
                }
                b.extend(every_frame.observe(frame.t_s, &e));
            }
            let falls = |v: &[AlarmEntry]| v.iter().any(|x| x.alarm == FallAlarm::Fall);
            (falls(&a), falls(&b))
        };
        let seeds: Vec<u64> = (1..=12).collect();
        let (x, y) = seeds.split_at(seeds.len() / 2);
        let verdicts: Vec<(u64, (bool, bool))> = std::thread::scope(|s| {
            let h = s.spawn(|| x.iter().map(|&k| (k, per_seed(k))).collect::<Vec<_>>());
            let mut v: Vec<_> = y.iter().map(|&k| (k, per_seed(k))).collect();
            v.extend(h.join().expect("thread"));
            v
        });
        let alerted = verdicts.iter().filter(|(_, (a, _))| *a).count();
        println!("{scene}: every 0.1 s vs every frame {verdicts:?}");
        for (k, (a, b)) in &verdicts {
            assert_eq!(
                a, b,
                "{scene} seed {k}: fed every 0.1 s {a}, every frame {b}"
            );
        }
        // The scene must exercise the rule: falls are found, hard sits mostly not.
        if scene == "fall" {
            assert!(alerted >= 9, "{scene}: {alerted} of 12");
        }
    }
}
