//! Whole-pipeline cost per frame at 192 subcarriers (the target is ≤ 100 µs, i.e. 100 nodes at
//! 100 Hz on one core). Frames come from the seeded simulator (a still, breathing person, so the
//! vitals, range and presence paths all run), generated before timing.
//!
//! The complex path (issue 19) is timed on real 3 × 2 × 56 frames: the BreathSense capture
//! `BPM15` (Atheros CSI Tool, read from `shared/data/csi` beside the repository), played at its
//! own ~9.5 packets/s (every frame completes a 10 Hz grid tick, so each pays a whole tick:
//! 336 amplitudes and 336 chain-pair phases into the vitals, the analyses every second) and
//! retimed to 100 packets/s (ticks amortised over 10 frames). Target ≤ 10 µs per frame.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use local_agent::sensing::csi::CsiFrame;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::replay::ReplaySource;
use local_agent::sensing::source::simulator::{Activity, Segment, SimConfig, Simulator};

fn frames(seconds: f64) -> Vec<CsiFrame> {
    let cfg = SimConfig {
        seed: 3,
        rate_hz: 100.0,
        subcarriers: 192,
        script: vec![Segment {
            duration_s: seconds,
            activity: Activity::SitStill {
                breathing_bpm: 15.0,
                heart_bpm: 70.0,
            },
        }],
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(cfg);
    let mut out = Vec::new();
    while let Some((f, _)) = sim.next_frame() {
        out.push(f);
    }
    out
}

fn bench_pipeline(c: &mut Criterion) {
    // 60 s warms every window (30 s breathing, refits every 6 s); the timed stream continues it.
    let warm = frames(60.0);
    let stream = frames(120.0);
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(1));
    group.bench_function("push_192sc_100hz", |b| {
        let mut p = Pipeline::new(PipelineConfig::default());
        for f in &warm {
            p.push(f);
        }
        let mut i = 0usize;
        let mut t_offset = 60.0;
        let span = stream.last().map(|f| f.t_s + 0.01).unwrap_or(1.0);
        let mut frame = stream[0].clone();
        b.iter(|| {
            let src = &stream[i];
            frame.t_s = src.t_s + t_offset;
            frame.csi.clone_from(&src.csi);
            p.push(black_box(&frame));
            i += 1;
            if i == stream.len() {
                i = 0;
                t_offset += span;
            }
        });
        black_box(p.estimates());
    });
    group.finish();
}

/// The BreathSense capture's frames, or `None` (with a message) when the shared data is absent.
fn breathsense() -> Option<Vec<CsiFrame>> {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi/breathsense/BPM15"
    ));
    match ReplaySource::open(dir) {
        Ok(src) => Some(src.collect()),
        Err(e) => {
            eprintln!("skipping the 3x2x56 benchmark: {e}");
            None
        }
    }
}

fn bench_complex(c: &mut Criterion) {
    let Some(frames) = breathsense() else {
        return;
    };
    let t0 = frames[0].t_s;
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(1));
    for (label, period) in [
        ("push_3x2x56_9.5hz", None),
        ("push_3x2x56_100hz", Some(0.01)),
    ] {
        let times: Vec<f64> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| period.map_or(f.t_s - t0, |p| i as f64 * p))
            .collect();
        let span = times.last().copied().unwrap_or(0.0) + period.unwrap_or(0.1);
        group.bench_function(label, |b| {
            let mut p = Pipeline::new(PipelineConfig::default());
            // Two passes warm every window (the capture is ~62 s).
            let mut t_offset = 0.0;
            for _ in 0..2 {
                for (f, t) in frames.iter().zip(&times) {
                    let mut g = f.clone();
                    g.t_s = t + t_offset;
                    p.push(&g);
                }
                t_offset += span;
            }
            let mut i = 0usize;
            let mut frame = frames[0].clone();
            b.iter(|| {
                frame.t_s = times[i] + t_offset;
                frame.csi.clone_from(&frames[i].csi);
                p.push(black_box(&frame));
                i += 1;
                if i == frames.len() {
                    i = 0;
                    t_offset += span;
                }
            });
            black_box(p.estimates());
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pipeline, bench_complex);
criterion_main!(benches);
