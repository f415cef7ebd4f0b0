mod sim_support;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{Activity, Segment, Simulator};
use sim_support::still_ten_minutes_scene;

#[test]
#[ignore]
fn walk_trace() {
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(54);
    let mut cfg = still_ten_minutes_scene(seed);
    let seated = cfg.script[1].activity.clone();
    cfg.script = vec![
        Segment {
            duration_s: 150.0,
            activity: seated,
        },
        Segment {
            duration_s: 10.0,
            activity: Activity::Leave,
        },
        Segment {
            duration_s: 240.0,
            activity: Activity::Absent,
        },
    ];
    let mut sim = Simulator::new(cfg);
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut next = 0.0;
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        if frame.t_s >= next {
            next += 2.0;
            if frame.t_s < 140.0 {
                continue;
            }
            let e = p.estimates();
            let d = p.vitals_detail();
            eprintln!(
                "t {:6.1} truth {} present {} moving {} bpm {:?} cue {:?} thr {:.1} coh {:.2} snr {:?}",
                frame.t_s,
                truth.present as u8,
                e.present as u8,
                e.moving as u8,
                e.breathing_bpm.map(|b| (b * 10.0).round() / 10.0),
                d.still_cue,
                d.still_threshold,
                d.breathing.coherence,
                e.breathing_strength.map(|s| s.round())
            );
        }
    }
}
