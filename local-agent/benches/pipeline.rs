//! Whole-pipeline cost per frame at 192 subcarriers (the target is ≤ 100 µs, i.e. 100 nodes at
//! 100 Hz on one core). Frames come from the seeded simulator (a still, breathing person, so the
//! vitals, range and presence paths all run), generated before timing.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use local_agent::sensing::csi::CsiFrame;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
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

criterion_group!(benches, bench_pipeline);
criterion_main!(benches);
