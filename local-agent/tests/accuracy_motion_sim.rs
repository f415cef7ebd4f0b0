//! Motion and presence in the simulator's empty rooms, from the very first frame (the real-data
//! counterpart is `accuracy_espectre.rs`): no presence, no motion, no vital at any tick, whatever
//! the packet rate or the receiver's gain behaviour, and the empty-room calibration completes
//! within 7.5 s.

mod sim_support;

use local_agent::sensing::pipeline::PipelineConfig;
use local_agent::sensing::source::simulator::{AgcModel, SimConfig};
use sim_support::{present_and_vitals, run};

#[test]
fn empty_rooms_read_empty_from_the_first_frame() {
    let mut lines = Vec::new();
    for (seed, rate, agc) in [
        (1u64, 50.0, AgcModel::default()),
        (2, 100.0, AgcModel::default()),
        (3, 20.0, AgcModel::default()),
        (4, 100.0, AgcModel::locked()),
        (5, 135.0, AgcModel::locked()),
    ] {
        let Some(mut cfg) = SimConfig::for_scene("empty", seed) else {
            panic!("no empty scene")
        };
        cfg.rate_hz = rate;
        cfg.agc = agc;
        let ticks = run(cfg, PipelineConfig::default());
        let (present, vitals) = present_and_vitals(&ticks);
        let max_motion = ticks.iter().map(|t| t.est.motion).fold(0.0, f64::max);
        let cal = ticks.iter().find(|t| !t.est.calibrating).map(|t| t.t);
        lines.push(format!(
            "empty seed {seed} at {rate} Hz: present {present}/{} ticks, vitals {vitals}, max motion {max_motion:.3}, calibrated at {cal:?} s",
            ticks.len()
        ));
        assert_eq!((present, vitals), (0, 0), "{}", lines.join("\n"));
        assert!(max_motion < 0.05, "{}", lines.join("\n"));
        assert!(cal.is_some_and(|c| c <= 7.5), "{}", lines.join("\n"));
    }
    for l in &lines {
        eprintln!("{l}");
    }
}

/// The demo scene opens on an empty room (20 s) before someone walks in: nothing in those 20 s,
/// and the walk-in is seen promptly.
#[test]
fn demo_scene_is_empty_until_someone_walks_in() {
    let Some(cfg) = SimConfig::for_scene("demo", 1) else {
        panic!("no demo scene")
    };
    let ticks = run(cfg, PipelineConfig::default());
    let enters = ticks
        .iter()
        .find(|t| t.truth.present)
        .map_or(f64::INFINITY, |t| t.t);
    let early = ticks
        .iter()
        .filter(|t| t.t < enters && (t.est.present || t.est.motion >= 0.05))
        .count();
    let seen = ticks
        .iter()
        .find(|t| t.t >= enters && t.est.moving)
        .map(|t| t.t - enters);
    eprintln!(
        "demo: someone enters at {enters:.1} s; occupied before {early} ticks; motion seen after {seen:?} s"
    );
    assert_eq!(early, 0);
    assert!(
        seen.is_some_and(|s| s <= 2.0),
        "motion seen after {seen:?} s"
    );
}
