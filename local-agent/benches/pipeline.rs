//! Per-frame cost at 64 and 192 subcarriers:
//!
//! - `pipeline/push_*`: the whole pipeline (rate tracking, gain normalisation, motion, presence,
//!   vitals, range, fusion). Frames come from the seeded simulator (a still, breathing person, so
//!   every path runs), generated before timing; 60 s warm every window first.
//! - `motion/*`: the motion path alone (gain normalisation and the per-packet motion detector
//!   with its calibration), the part that decides motion on every packet.
//! - `peer/mvs_64sc`: the ESPectre MVS baseline of `eval motion` (amplitudes of its 12
//!   subcarriers, turbulence, Hampel, 75-packet moving variance) on the same frames, for
//!   comparison.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use local_agent::eval::espectre::{self, Mvs};
use local_agent::sensing::csi::CsiFrame;
use local_agent::sensing::motion::MotionDetector;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{Activity, Segment, SimConfig, Simulator};

fn frames(seconds: f64, subcarriers: usize) -> Vec<CsiFrame> {
    let cfg = SimConfig {
        seed: 3,
        rate_hz: 100.0,
        subcarriers,
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
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(1));
    for sc in [64, 192] {
        let warm = frames(60.0, sc);
        let stream = frames(120.0, sc);
        group.bench_function(format!("push_{sc}sc_100hz"), |b| {
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
    }
    group.finish();
}

fn bench_motion(c: &mut Criterion) {
    let mut group = c.benchmark_group("motion");
    group.throughput(Throughput::Elements(1));
    for sc in [64, 192] {
        let stream = frames(60.0, sc);
        group.bench_function(format!("detector_{sc}sc"), |b| {
            let mut md = MotionDetector::default();
            md.set_rate(100.0);
            let mut amps = Vec::with_capacity(sc);
            let mut i = 0usize;
            let mut t = 0.0;
            b.iter(|| {
                let f = &stream[i];
                // The same work as the pipeline's motion path: amplitudes, gain normalisation,
                // the detector.
                amps.clear();
                let mut sum = 0.0f32;
                let mut n = 0u32;
                for c in &f.csi {
                    let a = c.norm();
                    if a > 0.0 {
                        sum += a;
                        n += 1;
                    }
                    amps.push(a);
                }
                let inv = if sum > 0.0 { n as f32 / sum } else { 0.0 };
                amps.iter_mut().for_each(|a| *a *= inv);
                md.push(black_box(t), &amps);
                t += 0.01;
                i = (i + 1) % stream.len();
            });
            black_box(md.motion_value());
        });
    }
    group.finish();

    let mut group = c.benchmark_group("peer");
    group.throughput(Throughput::Elements(1));
    let stream = frames(60.0, 64);
    let calib: Vec<_> = stream[..750]
        .iter()
        .map(|f| espectre::amplitudes(&f.csi))
        .collect();
    let cal = espectre::calibrate(&calib, false);
    group.bench_function("mvs_64sc", |b| {
        let mut mvs = match &cal {
            Some(c) => Mvs::new(c.band.clone(), c.threshold, false),
            None => Mvs::uncalibrated(false),
        };
        let mut i = 0usize;
        b.iter(|| {
            let a = espectre::amplitudes(&stream[i].csi);
            black_box(mvs.push(black_box(&a)));
            i = (i + 1) % stream.len();
        });
    });
    group.finish();
}

criterion_group!(benches, bench_pipeline, bench_motion);
criterion_main!(benches);
