//! The sweep the fall monitor's impact settings were chosen from, on the tuning seeds only (1–40;
//! the unseen seeds are scored by `accuracy_fall`). Ignored: it plays 160 scenes through one
//! pipeline each and a grid of monitors, about a minute on two cores:
//! `cargo test -p local-agent --test diag_fall -- --ignored --nocapture`; `NOISE=measured` (or
//! one part of that model: `corr`, `tilt`, `bursts`, `tiltcorr`) plays the scenes under the
//! noise measured on real quiet rooms instead of white noise.
//! Prints, per setting (impact ratio, high-band bar, cut, window): falls detected within the
//! stillness delay + 5 s, and the runs of `sit-fast`, `lie-bed` and `leave` that raised a fall
//! alert; `day_alarms_per_setting` prints the fall alarms of each setting over eight capped days.
//! The 2026-11-27 default was chosen as the setting with no fall alarm on those days under either
//! noise model, then the most tuning falls under the worse of the two, then the fewest alerts.

use local_agent::sensing::fall::{FallAlarm, FallConfig, FallMonitor};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{SimConfig, Simulator};

const TUNING: std::ops::RangeInclusive<u64> = 1..=40;
const SCENES: [&str; 4] = ["fall", "sit-fast", "lie-bed", "leave"];

/// The three rules, then the 2026-11-27 sweep (every setting with the hold; the fast-motion
/// check reads the motion up to where it really ended).
fn grid() -> Vec<FallConfig> {
    let mut v = vec![
        FallConfig::default(),
        FallConfig::fast_motion(),
        FallConfig::burst(),
    ];
    for hf_window_s in [1.2, 1.6, 2.0] {
        for hf_cut in [1.3, 1.4, 1.5] {
            for impact_hf in [0.5, 0.6, 0.8, 0.9, 1.0] {
                for impact_ratio in [1.5, 1.6, 1.7, 1.8] {
                    v.push(FallConfig {
                        impact_ratio,
                        impact_hf,
                        hf_cut,
                        hf_window_s,
                        ..FallConfig::default()
                    });
                }
            }
        }
    }
    v
}

/// Per setting: did it raise a fall alert (for `fall`: within the delay + 5 s of the impact).
fn run(scene: &str, seed: u64, cfgs: &[FallConfig]) -> Vec<bool> {
    let mut cfg = SimConfig::for_scene(scene, seed).expect("scene");
    cfg.noise = noise_from_env();
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut ms: Vec<FallMonitor> = cfgs.iter().map(|c| FallMonitor::new(c.clone())).collect();
    let mut hit = vec![false; cfgs.len()];
    let limit = FallConfig::default().fallen_after_s + 5.0;
    let mut next = 0.0;
    let mut impact_t = None;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if truth.impact && impact_t.is_none() {
            impact_t = Some(frame.t_s);
        }
        if frame.t_s >= next {
            next += 0.1;
            let e = p.estimates();
            for (m, h) in ms.iter_mut().zip(hit.iter_mut()) {
                if let Some(a) = m.observe(frame.t_s, &e)
                    && a.alarm == FallAlarm::Fall
                {
                    *h |= match impact_t {
                        Some(i) if scene == "fall" => (0.0..=limit).contains(&(a.t_s - i)),
                        _ => scene != "fall",
                    };
                }
            }
        }
    }
    hit
}

#[test]
#[ignore]
fn sweep_impact_settings_on_the_tuning_seeds() {
    let seeds: Vec<u64> = TUNING.collect();
    let cfgs = grid();
    let (a, b) = seeds.split_at(seeds.len() / 2);
    let work = |ss: &[u64]| {
        let mut counts = vec![[0usize; 4]; cfgs.len()];
        for (j, scene) in SCENES.iter().enumerate() {
            for &k in ss {
                for (c, h) in counts.iter_mut().zip(run(scene, k, &cfgs)) {
                    c[j] += usize::from(h);
                }
            }
        }
        counts
    };
    let (c1, c2) = std::thread::scope(|s| {
        let h = s.spawn(|| work(a));
        let r2 = work(b);
        (h.join().expect("thread"), r2)
    });
    println!("ratio hf cut window: fall/40 sit-fast lie-bed leave");
    for ((cfg, x), y) in cfgs.iter().zip(c1).zip(c2) {
        println!(
            "{:.1} {:.1} {:.1} {:.1}: {} {} {} {}",
            cfg.impact_ratio,
            cfg.impact_hf,
            cfg.hf_cut,
            cfg.hf_window_s,
            x[0] + y[0],
            x[1] + y[1],
            x[2] + y[2],
            x[3] + y[3]
        );
    }
}

/// Fall alarms per setting over the capped day (`accuracy_day`'s morning and evening, every
/// segment at most 150 s, sleep 600 s) on seeds 1–8, which `accuracy_day` does not use. Under
/// `NOISE=measured` this is what chose the hold's companion, reading fast motion only up to where
/// the motion ended: without it the setting that found the most tuning falls raised 13 fall
/// alarms over these 16 half-days (sitting down at the desk).
#[test]
#[ignore]
fn day_alarms_per_setting() {
    use local_agent::sensing::source::simulator::{Activity, Segment, scene};
    let cfgs = grid();
    let day = scene("day").expect("day");
    let capped = |s: &[Segment]| -> Vec<Segment> {
        s.iter()
            .map(|s| Segment {
                duration_s: s.duration_s.min(match s.activity {
                    Activity::LieStill { .. } | Activity::LieDownSlowly { .. } => 600.0,
                    _ => 150.0,
                }),
                activity: s.activity.clone(),
            })
            .collect()
    };
    let parts = [capped(&day[..8]), capped(&day[8..])];
    let work = |seeds: &[u64]| {
        let mut counts = vec![0usize; cfgs.len()];
        for &seed in seeds {
            for part in &parts {
                let mut sim = Simulator::new(SimConfig {
                    seed,
                    script: part.clone(),
                    noise: noise_from_env(),
                    ..SimConfig::default()
                });
                let mut p = Pipeline::new(PipelineConfig::default());
                let mut ms: Vec<FallMonitor> =
                    cfgs.iter().map(|c| FallMonitor::new(c.clone())).collect();
                let mut next = 0.0;
                while let Some((frame, _)) = sim.next_frame() {
                    p.push(&frame);
                    if frame.t_s >= next {
                        next += 0.1;
                        let e = p.estimates();
                        for (m, c) in ms.iter_mut().zip(counts.iter_mut()) {
                            if let Some(a) = m.observe(frame.t_s, &e)
                                && a.alarm == FallAlarm::Fall
                            {
                                *c += 1;
                            }
                        }
                    }
                }
            }
        }
        counts
    };
    let (c1, c2) = std::thread::scope(|s| {
        let h = s.spawn(|| work(&[1, 2, 3, 4]));
        let r2 = work(&[5, 6, 7, 8]);
        (h.join().expect("thread"), r2)
    });
    for ((cfg, x), y) in cfgs.iter().zip(c1).zip(c2) {
        println!(
            "{:.1} {:.1} {:.1} {:.1}: {}",
            cfg.impact_ratio,
            cfg.impact_hf,
            cfg.hf_cut,
            cfg.hf_window_s,
            x + y
        );
    }
}

/// The noise model named by `NOISE` (white by default; `measured`, or one part of it:
/// `corr`, `tilt`, `bursts`, or `tiltcorr` without the bursts).
fn noise_from_env() -> local_agent::sensing::source::simulator::NoiseModel {
    use local_agent::sensing::source::simulator::NoiseModel;
    let m = NoiseModel::measured();
    let w = NoiseModel::white();
    match std::env::var("NOISE").as_deref() {
        Ok("measured") => m,
        Ok("corr") => NoiseModel {
            correlated_share: m.correlated_share,
            correlation_tones: m.correlation_tones,
            ..w
        },
        Ok("tilt") => NoiseModel {
            tilt_std: m.tilt_std,
            ..w
        },
        Ok("tiltcorr") => NoiseModel {
            burst_probability: 0.0,
            burst_gain: (1.0, 1.0),
            ..m
        },
        Ok("bursts") => NoiseModel {
            burst_probability: m.burst_probability,
            burst_gain: m.burst_gain,
            ..w
        },
        _ => w,
    }
}
