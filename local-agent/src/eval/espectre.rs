//! The peer baseline: ESPectre's MVS motion detector with NBVI subcarrier selection, written
//! here from its published description (ESPectre `micro-espectre/ALGORITHMS.md` and
//! `PERFORMANCE.md`, GPLv3; no code is copied) with its default parameters, so that every
//! `eval motion` run scores our detector and the peer's method side by side on the same packets.
//!
//! MVS: per packet, the *spatial turbulence* is the standard deviation of the amplitudes of 12
//! selected subcarriers (divided by their mean, the coefficient of variation, when the chip does
//! not lock its gain); a Hampel filter (window 7, 5 MAD) removes outliers; the moving variance of
//! the last 75 turbulence values is compared with a threshold learned from a quiet calibration:
//! the 95th percentile of its moving variance × 1.1. Motion while the variance is above it.
//!
//! NBVI picks the 12 subcarriers from the calibration buffer (its first 750 packets): among the
//! 200-packet windows (step 50) whose turbulence variance is in the lowest 5 %, it scores each
//! subcarrier in 11..=52 (not 32) by its normalised variability `α·σ/μ² + (1−α)·σ/μ` (α 0.75),
//! plus an entropy-rewarded and a MAD-robust variant; drops subcarriers below the 15th
//! percentile of mean amplitude; forms candidate bands from each ranking; runs MVS over the
//! calibration buffer for each; and keeps the first band whose false-positive rate at its own
//! threshold is at most 5 % (else the lowest). The default band is the fallback and the hint.
//! Calibration magnitudes are whole numbers (the reference keeps them as bytes), the moving
//! variance used for the threshold is subsampled 1:5, as in the reference.

/// Subcarriers of the HT20 buffer.
pub const SUBCARRIERS: usize = 64;
/// ESPectre's default (and hint) band.
pub const DEFAULT_BAND: [usize; 12] = [12, 14, 16, 18, 20, 24, 28, 36, 40, 44, 48, 52];
/// Moving-variance window, packets.
pub const WINDOW: usize = 75;
/// Calibration buffer, packets (10 windows).
pub const CALIBRATION_PACKETS: usize = 750;
/// Packets discarded at the start of a baseline capture while the radio locks its gain.
pub const GAIN_LOCK_SKIP: usize = 300;
const BAND_SIZE: usize = 12;
const GUARD_LOW: usize = 11;
const GUARD_HIGH: usize = 52;
const DC: usize = 32;
const HAMPEL_WINDOW: usize = 7;
const HAMPEL_K: f64 = 5.0;
const PERCENTILE: f64 = 95.0;
const FACTOR: f64 = 1.1;
const ALPHA: f64 = 0.75;
const NBVI_WINDOW: usize = 200;
const NBVI_STEP: usize = 50;
const NBVI_PERCENTILE: f64 = 5.0;
const NOISE_GATE_PERCENTILE: f64 = 15.0;
const VALIDATION_SUBSAMPLE: usize = 5;
const FP_TARGET: f64 = 0.05;

/// Amplitudes of the first 64 subcarriers of one packet (missing ones are 0).
pub fn amplitudes(csi: &[num_complex::Complex32]) -> [f64; SUBCARRIERS] {
    let mut a = [0.0; SUBCARRIERS];
    for (x, c) in a.iter_mut().zip(csi) {
        let (re, im) = (f64::from(c.re), f64::from(c.im));
        let v = (re * re + im * im).sqrt();
        *x = if v.is_finite() { v } else { 0.0 };
    }
    a
}

/// Linear-interpolated percentile (0..100) of `v`; 0 for an empty slice.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let pos = (n - 1) as f64 * p / 100.0;
    let k = pos.floor() as usize;
    if k >= n - 1 {
        return s[n - 1];
    }
    let frac = pos - k as f64;
    s[k] * (1.0 - frac) + s[k + 1] * frac
}

fn mean_var(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (mut n, mut sum) = (0usize, 0.0);
    for x in v.clone() {
        sum += x;
        n += 1;
    }
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = sum / n as f64;
    let var = v.map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    (mean, var)
}

/// Spatial turbulence of one packet over `band`: σ, or σ/μ when `cv`.
pub fn turbulence(amp: &[f64; SUBCARRIERS], band: &[usize], cv: bool) -> f64 {
    let (mean, var) = mean_var(band.iter().filter(|&&k| k < SUBCARRIERS).map(|&k| amp[k]));
    let sd = var.max(0.0).sqrt();
    if cv {
        if mean > 1e-6 { sd / mean } else { 0.0 }
    } else {
        sd
    }
}

/// Causal Hampel filter over the last 7 values (the current one included).
#[derive(Debug, Clone, Default)]
struct Hampel {
    buf: [f64; HAMPEL_WINDOW],
    len: usize,
    pos: usize,
}

impl Hampel {
    fn filter(&mut self, v: f64) -> f64 {
        self.buf[self.pos] = v;
        self.pos = (self.pos + 1) % HAMPEL_WINDOW;
        self.len = (self.len + 1).min(HAMPEL_WINDOW);
        if self.len < 3 {
            return v;
        }
        let n = self.len;
        let mut s = [0.0f64; HAMPEL_WINDOW];
        s[..n].copy_from_slice(&self.buf[..n]);
        s[..n].sort_by(f64::total_cmp);
        let med = s[n / 2];
        for (d, b) in s[..n].iter_mut().zip(&self.buf[..n]) {
            *d = (b - med).abs();
        }
        s[..n].sort_by(f64::total_cmp);
        let mad = s[n / 2];
        if mad > 1e-6 && (v - med).abs() / mad > HAMPEL_K * 1.4826 {
            med
        } else {
            v
        }
    }
}

/// The runtime MVS detector.
#[derive(Debug, Clone)]
pub struct Mvs {
    band: Vec<usize>,
    threshold: f64,
    cv: bool,
    hampel: Hampel,
    buf: [f64; WINDOW],
    len: usize,
    pos: usize,
    motion: bool,
    variance: f64,
}

impl Mvs {
    pub fn new(band: Vec<usize>, threshold: f64, cv: bool) -> Self {
        Self {
            band,
            threshold: threshold.clamp(1e-6, 10.0),
            cv,
            hampel: Hampel::default(),
            buf: [0.0; WINDOW],
            len: 0,
            pos: 0,
            motion: false,
            variance: 0.0,
        }
    }

    /// An uncalibrated detector on the default band (threshold 1.0, ESPectre's default).
    pub fn uncalibrated(cv: bool) -> Self {
        Self::new(DEFAULT_BAND.to_vec(), 1.0, cv)
    }

    pub fn band(&self) -> &[usize] {
        &self.band
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Feeds one packet's amplitudes; returns the motion state after it.
    pub fn push(&mut self, amp: &[f64; SUBCARRIERS]) -> bool {
        let t = self.hampel.filter(turbulence(amp, &self.band, self.cv));
        self.buf[self.pos] = t;
        self.pos = (self.pos + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
        self.variance = if self.len < WINDOW {
            0.0
        } else {
            mean_var(self.buf.iter().copied()).1
        };
        if !self.motion && self.variance > self.threshold {
            self.motion = true;
        } else if self.motion && self.variance < self.threshold {
            self.motion = false;
        }
        self.motion
    }

    pub fn moving_variance(&self) -> f64 {
        self.variance
    }
}

/// What NBVI chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub band: Vec<usize>,
    pub threshold: f64,
    /// False-positive rate of the chosen band over the calibration buffer.
    pub fp_rate: f64,
    /// The default band was used (no candidate window, or it validated better).
    pub fallback: bool,
}

/// NBVI calibration over (at most the first 750 of) `packets`; `cv` as for [`Mvs`]. `None` when
/// there are too few packets for one 200-packet window (the reference then runs with its
/// default threshold 1.0, under which it never reports motion on these captures).
pub fn calibrate(packets: &[[f64; SUBCARRIERS]], cv: bool) -> Option<Calibration> {
    let n = packets.len().min(CALIBRATION_PACKETS);
    if n < WINDOW + 10 {
        return None;
    }
    // The reference keeps calibration magnitudes as bytes: whole numbers, guard and DC zeroed.
    let mags: Vec<[f64; SUBCARRIERS]> = packets[..n]
        .iter()
        .map(|a| {
            let mut m = [0.0; SUBCARRIERS];
            for (k, (x, v)) in m.iter_mut().zip(a).enumerate() {
                if (GUARD_LOW..=GUARD_HIGH).contains(&k) && k != DC {
                    *x = v.floor().min(255.0);
                }
            }
            m
        })
        .collect();
    let hint: Vec<usize> = DEFAULT_BAND.to_vec();
    let windows = candidate_windows(&mags, &hint, cv);
    if windows.is_empty() {
        // Fewer packets than one NBVI window: the reference reports a failed calibration.
        return None;
    }
    let mut best: Option<(Vec<usize>, f64, Vec<f64>)> = None;
    for &start in &windows {
        for band in candidate_bands(&mags[start..start + NBVI_WINDOW]) {
            let (fp, mv) = validate(&mags, &band, cv);
            let better = match &best {
                None => true,
                Some((_, bfp, _)) => {
                    if fp <= FP_TARGET {
                        *bfp > FP_TARGET
                    } else {
                        fp < *bfp
                    }
                }
            };
            if better {
                best = Some((band, fp, mv));
            }
        }
    }
    let (band, fp, mv, fallback) = match best {
        None => {
            let (fp, mv) = validate(&mags, &hint, cv);
            (hint, fp, mv, true)
        }
        Some((band, fp, mv)) => {
            if fp > FP_TARGET {
                let (hfp, hmv) = validate(&mags, &hint, cv);
                if hfp < fp {
                    (hint, hfp, hmv, true)
                } else {
                    (band, fp, mv, false)
                }
            } else {
                (band, fp, mv, false)
            }
        }
    };
    let threshold = if mv.is_empty() {
        1.0
    } else {
        percentile(&mv, PERCENTILE) * FACTOR
    };
    Some(Calibration {
        band,
        threshold: threshold.clamp(1e-6, 10.0),
        fp_rate: fp,
        fallback,
    })
}

/// Starts of the quietest 200-packet windows (turbulence variance at or below its 5th
/// percentile), quietest first.
fn candidate_windows(mags: &[[f64; SUBCARRIERS]], band: &[usize], cv: bool) -> Vec<usize> {
    if mags.len() < NBVI_WINDOW {
        return Vec::new();
    }
    let turb: Vec<f64> = mags.iter().map(|m| turbulence(m, band, cv)).collect();
    let mut w: Vec<(usize, f64)> = (0..=mags.len() - NBVI_WINDOW)
        .step_by(NBVI_STEP)
        .map(|i| (i, mean_var(turb[i..i + NBVI_WINDOW].iter().copied()).1))
        .collect();
    let vars: Vec<f64> = w.iter().map(|x| x.1).collect();
    let limit = percentile(&vars, NBVI_PERCENTILE);
    w.retain(|x| x.1 <= limit);
    w.sort_by(|a, b| a.1.total_cmp(&b.1));
    w.into_iter().map(|x| x.0).collect()
}

struct Score {
    sc: usize,
    mean: f64,
    classic: f64,
    entropy: f64,
    mad: f64,
}

/// The candidate bands of one window: the 12 best by the entropy-rewarded, the MAD-robust and
/// the classic score (with the default minimum spacing of 1 the reference's spaced and
/// clustered selections both reduce to the top 12 of their ranking), duplicates removed.
fn candidate_bands(window: &[[f64; SUBCARRIERS]]) -> Vec<Vec<usize>> {
    let count = window.len() as f64;
    let mut scores = Vec::new();
    let mut col = Vec::with_capacity(window.len());
    for sc in 0..SUBCARRIERS {
        col.clear();
        col.extend(window.iter().map(|m| m[sc]));
        let (mean, var) = mean_var(col.iter().copied());
        let std = var.max(0.0).sqrt();
        let (lo, hi) = col
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                (l.min(v), h.max(v))
            });
        let mut entropy = 0.0;
        if hi > lo {
            let mut bins = [0usize; 10];
            let w = (hi - lo) / 10.0;
            for &v in &col {
                let b = (((v - lo) / w) as usize).min(9);
                bins[b] += 1;
            }
            for &b in &bins {
                if b > 0 {
                    let p = b as f64 / count;
                    entropy -= p * p.log2();
                }
            }
        }
        let mut sorted = col.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let mut dev: Vec<f64> = col.iter().map(|v| (v - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = dev[dev.len() / 2];
        let usable = (GUARD_LOW..=GUARD_HIGH).contains(&sc) && sc != DC && mean >= 1.0;
        let (classic, ent, robust) = if usable && mean >= 1e-6 {
            let classic = ALPHA * std / (mean * mean) + (1.0 - ALPHA) * std / mean;
            let rs = if mad > 1e-6 { mad * 1.4826 } else { std };
            let robust = ALPHA * rs / (mean * mean) + (1.0 - ALPHA) * rs / mean;
            (classic, classic / entropy.max(0.5), robust)
        } else {
            (f64::INFINITY, f64::INFINITY, f64::INFINITY)
        };
        scores.push(Score {
            sc,
            mean,
            classic,
            entropy: ent,
            mad: robust,
        });
    }
    // Noise gate: drop subcarriers below the 15th percentile of the usable mean amplitudes.
    let means: Vec<f64> = scores
        .iter()
        .filter(|s| s.mean > 1.0 && s.classic.is_finite())
        .map(|s| s.mean)
        .collect();
    if means.is_empty() {
        return Vec::new();
    }
    let gate = percentile(&means, NOISE_GATE_PERCENTILE);
    scores.retain(|s| s.mean >= gate && s.classic.is_finite());
    let top = |key: fn(&Score) -> f64, scores: &mut Vec<Score>| -> Vec<usize> {
        scores.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.sc.cmp(&b.sc)));
        let mut band: Vec<usize> = scores.iter().take(BAND_SIZE).map(|s| s.sc).collect();
        band.sort_unstable();
        band
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for band in [
        top(|s| s.entropy, &mut scores),
        top(|s| s.mad, &mut scores),
        top(|s| s.classic, &mut scores),
    ] {
        if band.len() == BAND_SIZE && !out.contains(&band) {
            out.push(band);
        }
    }
    out
}

/// Runs MVS over the whole calibration buffer with `band`; returns the false-positive rate at
/// the band's own threshold and the (1:5 subsampled) moving variances.
fn validate(mags: &[[f64; SUBCARRIERS]], band: &[usize], cv: bool) -> (f64, Vec<f64>) {
    if mags.len() < WINDOW {
        return (0.0, Vec::new());
    }
    let mut hampel = Hampel::default();
    let mut buf = std::collections::VecDeque::from(vec![0.0; WINDOW]);
    let mut mv = Vec::new();
    let mut counted = 0usize;
    for (i, m) in mags.iter().enumerate() {
        let t = hampel.filter(turbulence(m, band, cv));
        buf.pop_front();
        buf.push_back(t);
        if i < WINDOW {
            continue;
        }
        if counted.is_multiple_of(VALIDATION_SUBSAMPLE) {
            mv.push(mean_var(buf.iter().copied()).1);
        }
        counted += 1;
    }
    if mv.is_empty() {
        return (0.0, mv);
    }
    let thr = percentile(&mv, PERCENTILE) * FACTOR;
    let fp = mv.iter().filter(|v| **v > thr).count() as f64 / mv.len() as f64;
    (fp, mv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_interpolates_like_the_reference() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 50.0), 3.0);
        assert!((percentile(&v, 95.0) - 4.8).abs() < 1e-12);
        assert_eq!(percentile(&v, 100.0), 5.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn mvs_flags_a_varying_band_and_not_a_steady_one() {
        // Whole-number noise of ±1 on a fixed shape; motion adds a wandering multipath pattern.
        let packet = |k: usize, motion: f64| {
            let mut a = [0.0; SUBCARRIERS];
            for (i, x) in a.iter_mut().enumerate() {
                let noise = ((k * 7 + i * 13) % 3) as f64 - 1.0;
                let wave = motion * (0.5 * k as f64 + 0.4 * i as f64).sin();
                *x = 20.0 + (i % 5) as f64 + noise + wave;
            }
            a
        };
        let quiet: Vec<_> = (0..800).map(|k| packet(k, 0.0)).collect();
        let Some(cal) = calibrate(&quiet, false) else {
            panic!("calibration needs 200 packets")
        };
        assert_eq!(cal.band.len(), 12);
        let mut mvs = Mvs::new(cal.band.clone(), cal.threshold, false);
        let idle = quiet.iter().filter(|a| mvs.push(a)).count();
        assert!(idle < 80, "{idle}");
        let moving = (800..1100).filter(|&k| mvs.push(&packet(k, 6.0))).count();
        assert!(moving > 240, "{moving}");
        assert!(calibrate(&quiet[..150], false).is_none());
    }
}
