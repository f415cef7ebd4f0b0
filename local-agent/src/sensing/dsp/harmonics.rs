//! Removing breathing from a chest-motion series in the time domain, so the heartbeat under it
//! can be measured.
//!
//! Breathing is 10–40× the heartbeat's displacement and far from sinusoidal (a quicker inhale,
//! breath-to-breath depth changes, a rate that wanders by a few percent), so its harmonics fill
//! the heart band. Notching them in the spectrum blanks most of that band at slow breathing
//! rates, and a fixed-frequency notch misses harmonics smeared by the wander. Instead the
//! breathing's own phase is tracked (the analytic signal of the fundamental, band-limited around
//! the breathing rate) and the series is regressed on `cos(h·φ(t))`, `sin(h·φ(t))` and the same
//! terms scaled by the breath's depth envelope, for every harmonic `h` up to the top of the heart
//! band. The fit follows the wander (the harmonics are locked to φ) and the depth changes (the
//! envelope terms); what it leaves is the heartbeat and noise. A heartbeat sitting exactly on a
//! breathing harmonic is removed with it, which is the honest outcome: it cannot be told apart.

use num_complex::Complex32;
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Highest frequency the harmonic model reaches, Hz (the top of the heart band plus a margin).
pub const MODEL_TOP_HZ: f32 = 2.3;
/// Most harmonics modelled (a 6 br/min breath has 23 below 2.3 Hz; beyond ~16 the phase track's
/// noise, multiplied by h, makes the regressors incoherent).
pub const MAX_HARMONICS: usize = 16;
/// Ridge added to the normal equations, relative to their mean diagonal.
const RIDGE: f64 = 1e-6;

/// Forward and inverse transforms of one length.
type FftPair = (Arc<dyn Fft<f32>>, Arc<dyn Fft<f32>>);

/// A reusable breathing model over one window: the regressors and the factorised normal
/// equations, shared by every series the window's heart analysis looks at.
pub struct BreathModel {
    fft_len: usize,
    fft: Option<FftPair>,
    buf: Vec<Complex32>,
    scratch: Vec<Complex32>,
    /// Regressors, `p` rows of `len` samples.
    x: Vec<f32>,
    p: usize,
    len: usize,
    /// Cholesky factor (lower, row-major p × p) of XᵀX + ridge.
    chol: Vec<f64>,
    ready: bool,
    rhs: Vec<f64>,
}

impl std::fmt::Debug for BreathModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreathModel")
            .field("p", &self.p)
            .field("len", &self.len)
            .field("ready", &self.ready)
            .finish()
    }
}

impl Default for BreathModel {
    fn default() -> Self {
        Self::new()
    }
}

impl BreathModel {
    pub fn new() -> Self {
        Self {
            fft_len: 0,
            fft: None,
            buf: Vec::new(),
            scratch: Vec::new(),
            x: Vec::new(),
            p: 0,
            len: 0,
            chol: Vec::new(),
            ready: false,
            rhs: Vec::new(),
        }
    }

    /// True once [`Self::fit`] built a model usable on series of [`Self::len`] samples.
    pub fn ready(&self) -> bool {
        self.ready
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Builds the model from `breath`, a series dominated by breathing at about `fb` Hz sampled
    /// at `fs`. Returns false (and leaves the model unusable) when no phase track can be made.
    pub fn fit(&mut self, breath: &[f32], fb: f32, fs: f32) -> bool {
        self.ready = false;
        let n = breath.len();
        if n < 16 || !(fb > 0.0 && fb.is_finite() && fs > 0.0) || fb * 2.0 >= fs {
            return false;
        }
        let nfft = (2 * n).next_power_of_two();
        if self.fft_len != nfft {
            let mut planner = FftPlanner::<f32>::new();
            self.fft = Some((
                planner.plan_fft_forward(nfft),
                planner.plan_fft_inverse(nfft),
            ));
            self.fft_len = nfft;
        }
        let Some((fwd, inv)) = self.fft.clone() else {
            return false;
        };
        let mean = breath.iter().sum::<f32>() / n as f32;
        self.buf.clear();
        self.buf
            .extend(breath.iter().map(|v| Complex32::new(v - mean, 0.0)));
        self.buf.resize(nfft, Complex32::new(0.0, 0.0));
        self.scratch.resize(
            fwd.get_inplace_scratch_len()
                .max(inv.get_inplace_scratch_len()),
            Complex32::new(0.0, 0.0),
        );
        fwd.process_with_scratch(&mut self.buf, &mut self.scratch);
        // Analytic signal of the fundamental only: positive frequencies within ±40 % of fb.
        let df = fs / nfft as f32;
        let lo = ((0.6 * fb) / df).floor() as usize;
        let hi = ((1.4 * fb) / df).ceil() as usize;
        for (k, v) in self.buf.iter_mut().enumerate() {
            if k < lo.max(1) || k > hi.min(nfft / 2 - 1) {
                *v = Complex32::new(0.0, 0.0);
            } else {
                *v *= 2.0;
            }
        }
        inv.process_with_scratch(&mut self.buf, &mut self.scratch);
        // Phase (unwrapped) and depth envelope of the breath.
        let mut phase = Vec::with_capacity(n);
        let mut env = Vec::with_capacity(n);
        let mut last: Option<f32> = None;
        let mut acc = 0.0f32;
        for v in &self.buf[..n] {
            let a = super::magnitude(*v);
            let ang = v.arg();
            if !a.is_finite() || !ang.is_finite() {
                return false;
            }
            if let Some(prev) = last {
                let mut d = ang - prev;
                while d > std::f32::consts::PI {
                    d -= std::f32::consts::TAU;
                }
                while d < -std::f32::consts::PI {
                    d += std::f32::consts::TAU;
                }
                acc += d;
            } else {
                acc = ang;
            }
            last = Some(ang);
            phase.push(acc);
            env.push(a);
        }
        let env_mean = env.iter().sum::<f32>() / n as f32;
        if env_mean <= 0.0 || !env_mean.is_finite() {
            return false;
        }
        let harmonics = ((MODEL_TOP_HZ / fb).floor() as usize).clamp(1, MAX_HARMONICS);
        // Regressors: for each harmonic, cos and sin of h·φ, plain and scaled by the envelope's
        // deviation from its mean (depth changes).
        let p = 4 * harmonics;
        self.p = p;
        self.len = n;
        self.x.clear();
        self.x.resize(p * n, 0.0);
        // One `sin_cos` per sample; the harmonics follow by rotation (e^{i(h+1)φ} = e^{ihφ}·e^{iφ})
        // in f64, which over at most 32 steps stays within 1e-13 of the direct values: the
        // direct form took a `sin_cos` per harmonic and sample. The rotation runs on to twice
        // the top harmonic for the normal equations (below).
        let k_max = 2 * harmonics;
        // Σ wᵢ·cos(kφᵢ) and Σ wᵢ·sin(kφᵢ) for k = 0..=k_max, with w = 1, e and e².
        let mut cos_sums = vec![[0.0f64; 3]; k_max + 1];
        let mut sin_sums = vec![[0.0f64; 3]; k_max + 1];
        for i in 0..n {
            let (s1, c1) = f64::from(phase[i]).sin_cos();
            let e = env[i] / env_mean - 1.0;
            let e64 = f64::from(e);
            let w = [1.0, e64, e64 * e64];
            for (acc, wj) in cos_sums[0].iter_mut().zip(w) {
                *acc += wj;
            }
            let (mut s, mut c) = (s1, c1);
            for k in 1..=k_max {
                if k <= harmonics {
                    let h = k - 1;
                    let (sf, cf) = (s as f32, c as f32);
                    self.x[(4 * h) * n + i] = cf;
                    self.x[(4 * h + 1) * n + i] = sf;
                    self.x[(4 * h + 2) * n + i] = cf * e;
                    self.x[(4 * h + 3) * n + i] = sf * e;
                }
                for j in 0..3 {
                    cos_sums[k][j] += w[j] * c;
                    sin_sums[k][j] += w[j] * s;
                }
                (s, c) = (s * c1 + c * s1, c * c1 - s * s1);
            }
        }
        // Normal equations from those sums: every product of two regressors is a weighted
        // cos or sin of (a ± b)·φ (cos a·cos b = ½[cos(a−b) + cos(a+b)], and so on), so the
        // 2,080 dot products of a 16-harmonic model come from 6 × 33 running sums.
        let mut g = vec![0.0f64; p * p];
        for a in 0..p {
            for b in 0..=a {
                let (ma, mb) = (a / 4 + 1, b / 4 + 1);
                let (ta, tb) = (a % 4, b % 4);
                let wj = usize::from(ta >= 2) + usize::from(tb >= 2);
                let sum = ma + mb;
                let d = ma.abs_diff(mb);
                // sin((ma − mb)φ) = sign · sin(dφ)
                let sign = if ma >= mb { 1.0 } else { -1.0 };
                let v = match (ta % 2 == 1, tb % 2 == 1) {
                    (false, false) => 0.5 * (cos_sums[d][wj] + cos_sums[sum][wj]),
                    (true, true) => 0.5 * (cos_sums[d][wj] - cos_sums[sum][wj]),
                    (true, false) => 0.5 * (sin_sums[sum][wj] + sign * sin_sums[d][wj]),
                    (false, true) => 0.5 * (sin_sums[sum][wj] - sign * sin_sums[d][wj]),
                };
                g[a * p + b] = v;
                g[b * p + a] = v;
            }
        }
        let diag = (0..p).map(|i| g[i * p + i]).sum::<f64>() / p as f64;
        for i in 0..p {
            g[i * p + i] += RIDGE * diag.max(1e-12) + 1e-12;
        }
        if !cholesky(&mut g, p) {
            return false;
        }
        self.chol = g;
        self.ready = true;
        true
    }

    /// Subtracts the fitted breathing from the last `len()` samples of `y` in place. Series of
    /// another length are left untouched (returns false).
    pub fn subtract(&mut self, y: &mut [f32]) -> bool {
        if !self.ready || y.len() != self.len {
            return false;
        }
        let (p, n) = (self.p, self.len);
        self.rhs.clear();
        for a in 0..p {
            let ra = &self.x[a * n..(a + 1) * n];
            self.rhs.push(dot(ra, y));
        }
        cholesky_solve(&self.chol, p, &mut self.rhs);
        for a in 0..p {
            let c = self.rhs[a] as f32;
            if c == 0.0 || !c.is_finite() {
                continue;
            }
            let ra = &self.x[a * n..(a + 1) * n];
            for (v, u) in y.iter_mut().zip(ra) {
                *v -= c * u;
            }
        }
        true
    }
}

/// `Σ a·b` in `f64` over four independent partial sums: the normal equations take ~2000 of
/// these per window (64 regressors), and one running sum is bound by the adder's latency.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(u, v)| f64::from(*u) * f64::from(*v))
        .sum();
    for (x, y) in ca.zip(cb) {
        for j in 0..4 {
            acc[j] += f64::from(x[j]) * f64::from(y[j]);
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// In-place Cholesky factorisation of a symmetric positive definite p × p matrix (row-major);
/// the lower triangle holds L afterwards. False when the matrix is not positive definite.
fn cholesky(a: &mut [f64], p: usize) -> bool {
    for j in 0..p {
        let mut d = a[j * p + j];
        for k in 0..j {
            d -= a[j * p + k] * a[j * p + k];
        }
        if d <= 0.0 || !d.is_finite() {
            return false;
        }
        let d = d.sqrt();
        a[j * p + j] = d;
        for i in j + 1..p {
            let mut s = a[i * p + j];
            for k in 0..j {
                s -= a[i * p + k] * a[j * p + k];
            }
            a[i * p + j] = s / d;
        }
    }
    true
}

/// Solves L Lᵀ x = b in place.
fn cholesky_solve(l: &[f64], p: usize, b: &mut [f64]) {
    for i in 0..p {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * p + k] * b[k];
        }
        b[i] = s / l[i * p + i];
    }
    for i in (0..p).rev() {
        let mut s = b[i];
        for k in i + 1..p {
            s -= l[k * p + i] * b[k];
        }
        b[i] = s / l[i * p + i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    /// A wandering, depth-varying, non-sinusoidal breath with a weak heartbeat under it: the
    /// breath is suppressed by more than 20 dB. (What is left is still ~3× the heartbeat's RMS
    /// here: the 5th harmonic's wander overlaps a 1.17 Hz beat; the heart estimator's own gates
    /// decide whether a beat is visible.)
    #[test]
    fn removes_a_wandering_breath_and_keeps_the_heartbeat() {
        let fs = 10.0f32;
        let n = 300;
        let mut phase = 0.0f32;
        let mut breath = Vec::new();
        let mut heart = Vec::new();
        for i in 0..n {
            let t = i as f32 / fs;
            let rate = 0.25 * (1.0 + 0.04 * (0.05 * std::f32::consts::TAU * t).sin());
            phase += std::f32::consts::TAU * rate / fs;
            let depth = 1.0 + 0.15 * (0.07 * std::f32::consts::TAU * t).sin();
            // Quick inhale: harmonics up to the heart band.
            let shape = (phase.sin()
                + 0.35 * (2.0 * phase).sin()
                + 0.15 * (3.0 * phase).cos()
                + 0.06 * (5.0 * phase).sin())
                * depth;
            breath.push(shape);
            heart.push(0.03 * (std::f32::consts::TAU * 1.17 * t).sin());
        }
        let mut y: Vec<f32> = breath.iter().zip(&heart).map(|(b, h)| b + h).collect();
        let mut m = BreathModel::new();
        assert!(m.fit(&y, 0.25, fs));
        assert!(m.subtract(&mut y));
        let resid: Vec<f32> = y.iter().zip(&heart).map(|(a, h)| a - h).collect();
        // Edges of the analytic signal are the weakest part of the track: judge the middle.
        let mid = 30..n - 30;
        assert!(
            rms(&resid[mid.clone()]) < 0.1 * rms(&breath[mid.clone()]),
            "residual {} breath {}",
            rms(&resid[mid.clone()]),
            rms(&breath[mid])
        );
    }

    /// The harmonics are built by rotation from each sample's first harmonic: at the most
    /// harmonics (16, a 6 br/min breath) they stay on cos/sin of h times its angle.
    #[test]
    fn rotated_harmonics_match_the_direct_ones() {
        let fs = 10.0f32;
        let n = 300;
        let breath: Vec<f32> = (0..n)
            .map(|i| (std::f32::consts::TAU * 0.1 * i as f32 / fs).sin())
            .collect();
        let mut m = BreathModel::new();
        assert!(m.fit(&breath, 0.1, fs));
        assert_eq!(m.p, 4 * MAX_HARMONICS);
        let mut worst = 0.0f64;
        for i in 0..n {
            let phi = f64::from(m.x[n + i]).atan2(f64::from(m.x[i]));
            for h in 0..MAX_HARMONICS {
                let (s, c) = ((h + 1) as f64 * phi).sin_cos();
                worst = worst
                    .max((f64::from(m.x[4 * h * n + i]) - c).abs())
                    .max((f64::from(m.x[(4 * h + 1) * n + i]) - s).abs());
            }
        }
        assert!(worst < 1e-5, "worst deviation {worst}");
    }

    /// The normal equations built from the trigonometric sums are the regressors' own dot
    /// products (up to the regressors' rounding to f32).
    #[test]
    fn normal_equations_from_sums_match_the_dot_products() {
        let fs = 10.0f32;
        let n = 300;
        let mut phase = 0.0f32;
        let breath: Vec<f32> = (0..n)
            .map(|i| {
                let t = i as f32 / fs;
                phase += std::f32::consts::TAU * 0.13 * (1.0 + 0.05 * (0.3 * t).sin()) / fs;
                (1.0 + 0.2 * (0.05 * t).sin()) * (phase.sin() + 0.3 * (2.0 * phase).cos())
            })
            .collect();
        let mut m = BreathModel::new();
        assert!(m.fit(&breath, 0.13, fs));
        let (p, n) = (m.p, m.len);
        assert_eq!(p, 4 * 16);
        // Undo the factorisation: L·Lᵀ, minus the ridge on the diagonal.
        let l = &m.chol;
        let mut worst = 0.0f64;
        let mut diag = 0.0;
        for a in 0..p {
            diag += dot(&m.x[a * n..(a + 1) * n], &m.x[a * n..(a + 1) * n]) / p as f64;
        }
        for a in 0..p {
            for b in 0..=a {
                let llt: f64 = (0..=b).map(|k| l[a * p + k] * l[b * p + k]).sum();
                let ridge = if a == b { RIDGE * diag + 1e-12 } else { 0.0 };
                let direct = dot(&m.x[a * n..(a + 1) * n], &m.x[b * n..(b + 1) * n]);
                worst = worst.max((llt - ridge - direct).abs() / diag);
            }
        }
        assert!(worst < 1e-5, "worst deviation {worst} of the mean diagonal");
    }

    #[test]
    fn rejects_unusable_input() {
        let mut m = BreathModel::new();
        assert!(!m.fit(&[0.0; 8], 0.2, 10.0));
        assert!(!m.fit(&[0.0; 300], 0.2, 10.0));
        assert!(!m.fit(&[1.0; 300], f32::NAN, 10.0));
        assert!(!m.subtract(&mut [0.0; 300]));
    }
}
