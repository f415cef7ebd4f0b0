//! The simulator's receiver noise against the real captures' (issue 19): the vitals gates were
//! once tuned on noise that was white and independent by construction, which real CSI is not.
//!
//! Measured on the quiet-room ESPectre captures (`espectre/baseline`, ESP32-C3/S3/ESP32, gain
//! locked or not) and on the simulator's empty room (default receiver, 100 packets/s), with the
//! same code:
//! - `level_std`: relative standard deviation of the per-packet mean amplitude (AGC);
//! - `steps_per_s`: jumps of the 0.1 s mean level by more than 8 % between neighbouring blocks;
//! - `adjacent_corr` / `distant_corr`: correlation across subcarriers of the gain-normalised
//!   amplitude residual (each subcarrier minus its 1 s running mean), for neighbours and for
//!   subcarriers ≥ 10 apart — real noise is correlated across the band, white noise is not;
//! - `residual`: RMS of that residual (per-packet noise after gain normalisation);
//! - `burst_share`: packets whose residual is above 4× the capture's median (bursts, glitches).
//!
//! The figures are printed for the README. Measured 2026-11-25 (10 real captures; simulator
//! seeds 1–3): level_std real 0.026–0.194, simulator 0.118; residual real 0.015–0.036,
//! simulator 0.024; adjacent-subcarrier correlation real 0.05–0.88, simulator −0.02; distant
//! (≥ 10 apart) real −0.04–0.45, simulator −0.02; burst share real 0–4.9 %, simulator 0. **The
//! simulator's noise is still white across subcarriers and has no bursts**: the model was not
//! changed in issue 19 (see the README). The test asserts the figures that match (AGC level and
//! per-packet residual) and prints the others, so the gap stays visible.

use std::path::{Path, PathBuf};

use local_agent::sensing::csi::{CsiFrame, parse_npz};
use local_agent::sensing::source::simulator::{SimConfig, Simulator};

#[derive(Debug, Clone, Copy, Default)]
struct NoiseStats {
    level_std: f64,
    steps_per_s: f64,
    adjacent_corr: f64,
    distant_corr: f64,
    residual: f64,
    burst_share: f64,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

fn measure(frames: &[CsiFrame], rate_hz: f64) -> NoiseStats {
    let n_sc = frames[0].csi.len();
    // Valid subcarriers: non-zero in every frame.
    let valid: Vec<usize> = (0..n_sc)
        .filter(|&k| frames.iter().all(|f| f.csi[k].norm() > 0.0))
        .collect();
    let amps: Vec<Vec<f64>> = frames
        .iter()
        .map(|f| valid.iter().map(|&k| f64::from(f.csi[k].norm())).collect())
        .collect();
    let levels: Vec<f64> = amps.iter().map(|a| mean(a)).collect();
    let lm = mean(&levels);
    let level_std =
        (levels.iter().map(|l| (l - lm).powi(2)).sum::<f64>() / levels.len() as f64).sqrt() / lm;
    let block = ((rate_hz * 0.1).round() as usize).max(1);
    let blocks: Vec<f64> = levels.chunks(block).map(mean).collect();
    let steps = blocks
        .windows(2)
        .filter(|w| (w[1] / w[0] - 1.0).abs() > 0.08)
        .count();
    let duration = frames.len() as f64 / rate_hz;
    // Gain-normalised amplitudes minus their 1 s running mean.
    let norm: Vec<Vec<f64>> = amps
        .iter()
        .zip(&levels)
        .map(|(a, l)| a.iter().map(|v| v / l).collect())
        .collect();
    let w = (rate_hz as usize).max(2);
    let m = valid.len();
    let t_n = norm.len();
    let mut resid = vec![vec![0.0; m]; t_n.saturating_sub(w)];
    for k in 0..m {
        let mut acc: f64 = norm[..w].iter().map(|r| r[k]).sum();
        for t in w..t_n {
            resid[t - w][k] = norm[t - w / 2][k] - acc / w as f64;
            acc += norm[t][k] - norm[t - w][k];
        }
    }
    let corr = |a: usize, b: usize| -> f64 {
        let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
        for r in &resid {
            sab += r[a] * r[b];
            saa += r[a] * r[a];
            sbb += r[b] * r[b];
        }
        sab / (saa * sbb).sqrt().max(1e-30)
    };
    let adjacent: Vec<f64> = (0..m.saturating_sub(1)).map(|k| corr(k, k + 1)).collect();
    let distant: Vec<f64> = (0..m.saturating_sub(10))
        .step_by(3)
        .map(|k| corr(k, k + 10))
        .collect();
    let per_packet: Vec<f64> = resid
        .iter()
        .map(|r| (r.iter().map(|v| v * v).sum::<f64>() / m as f64).sqrt())
        .collect();
    let mut sorted = per_packet.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    NoiseStats {
        level_std,
        steps_per_s: steps as f64 / duration,
        adjacent_corr: mean(&adjacent),
        distant_corr: mean(&distant),
        residual: mean(&per_packet),
        burst_share: per_packet.iter().filter(|v| **v > 4.0 * median).count() as f64
            / per_packet.len().max(1) as f64,
    }
}

fn baseline_files() -> Vec<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi/espectre/baseline"
    ));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "npz"))
        .collect();
    v.sort();
    assert!(!v.is_empty());
    v
}

#[test]
fn simulator_noise_has_the_statistics_of_real_quiet_rooms() {
    let mut real = Vec::new();
    for path in baseline_files() {
        let bytes = std::fs::read(&path).expect("read");
        let rec = parse_npz(&bytes, "b").expect("npz");
        let s = measure(&rec.frames, rec.meta.rate_hz);
        eprintln!(
            "real {}: {s:.4?}",
            path.file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default()
        );
        real.push(s);
    }
    let mut sims = Vec::new();
    for seed in 1..=3 {
        let frames: Vec<CsiFrame> =
            Simulator::new(SimConfig::for_scene("empty", seed).expect("scene"))
                .map(|(f, _)| f)
                .take(3000)
                .collect();
        let s = measure(&frames, 100.0);
        eprintln!("sim seed {seed}: {s:.4?}");
        sims.push(s);
    }
    type Get = fn(&NoiseStats) -> f64;
    let figures: [(&str, Get, bool); 6] = [
        ("level_std", |s| s.level_std, true),
        ("steps_per_s", |s| s.steps_per_s, false),
        ("adjacent_corr", |s| s.adjacent_corr, false),
        ("distant_corr", |s| s.distant_corr, false),
        ("residual", |s| s.residual, true),
        ("burst_share", |s| s.burst_share, false),
    ];
    let mut failures = Vec::new();
    for (name, get, asserted) in figures {
        let lo = real.iter().map(get).fold(f64::INFINITY, f64::min);
        let hi = real.iter().map(get).fold(f64::NEG_INFINITY, f64::max);
        let sim = mean(&sims.iter().map(get).collect::<Vec<_>>());
        let (lo_ok, hi_ok) = if lo >= 0.0 {
            (lo / 1.5, hi * 1.5)
        } else {
            (lo * 1.5, hi / 1.5)
        };
        eprintln!("{name}: real {lo:.4}–{hi:.4}, simulator {sim:.4}");
        if asserted && !(sim >= lo_ok.min(hi_ok) && sim <= hi_ok.max(lo_ok)) {
            failures.push(format!(
                "{name}: simulator {sim:.4} outside real {lo:.4}–{hi:.4}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
