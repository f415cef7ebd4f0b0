//! Power spectra and peak gates for periodic vital signs.
//!
//! A vital-sign rate is only worth showing if its spectral peak is unmistakable: a noise-only
//! spectrum always has *some* maximum, which is how products invent a breathing rate for an empty
//! room. Peaks are therefore measured (parabolic interpolation on a zero-padded, degree-2
//! detrended, Hann-windowed spectrum) and judged by prominence, SNR and concentration, and a rate
//! is accepted only when it persists over three consecutive windows.

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};
use std::collections::VecDeque;
use std::sync::Arc;

/// Removes the least-squares linear trend (offset and slope only).
pub fn detrend_linear(x: &mut [f32]) {
    let n = x.len();
    if n < 2 {
        x.iter_mut().for_each(|v| *v = 0.0);
        return;
    }
    let nf = n as f64;
    let tm = (nf - 1.0) / 2.0;
    let (mut sy, mut sty, mut stt) = (0.0, 0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let t = i as f64 - tm;
        sy += f64::from(*v);
        sty += t * f64::from(*v);
        stt += t * t;
    }
    let a = sy / nf;
    let b = if stt > 0.0 { sty / stt } else { 0.0 };
    for (i, v) in x.iter_mut().enumerate() {
        *v -= (a + b * (i as f64 - tm)) as f32;
    }
}

/// Removes the least-squares quadratic trend (slow drift from temperature, AGC, furniture).
pub fn detrend_quadratic(x: &mut [f32]) {
    let n = x.len();
    if n < 3 {
        let m = x.iter().sum::<f32>() / n.max(1) as f32;
        x.iter_mut().for_each(|v| *v -= m);
        return;
    }
    // Orthogonal basis on u in [-1, 1]: p0 = 1, p1 = u, p2 = u^2 - mean(u^2).
    let nf = n as f64;
    let u = |i: usize| 2.0 * i as f64 / (nf - 1.0) - 1.0;
    let mut mu2 = 0.0;
    for i in 0..n {
        mu2 += u(i) * u(i);
    }
    mu2 /= nf;
    let (mut s0, mut s1, mut s2, mut n1, mut n2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let v = f64::from(*v);
        let ui = u(i);
        let p2 = ui * ui - mu2;
        s0 += v;
        s1 += v * ui;
        s2 += v * p2;
        n1 += ui * ui;
        n2 += p2 * p2;
    }
    let c0 = s0 / nf;
    let c1 = if n1 > 0.0 { s1 / n1 } else { 0.0 };
    let c2 = if n2 > 0.0 { s2 / n2 } else { 0.0 };
    for (i, v) in x.iter_mut().enumerate() {
        let ui = u(i);
        *v -= (c0 + c1 * ui + c2 * (ui * ui - mu2)) as f32;
    }
}

/// Reusable FFT state for one transform length.
pub struct SpectrumAnalyzer {
    nfft: usize,
    fft: Arc<dyn RealToComplex<f32>>,
    input: Vec<f32>,
    output: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
    window: Vec<f32>,
    /// Difference the series before the transform (off by default: on CSI the differenced floor
    /// is far from a power law and whitening it made more false peaks than it removed).
    pub prewhiten: bool,
}

impl std::fmt::Debug for SpectrumAnalyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpectrumAnalyzer")
            .field("nfft", &self.nfft)
            .finish()
    }
}

impl SpectrumAnalyzer {
    /// `nfft` is rounded up to a power of two (at least 16).
    pub fn new(nfft: usize) -> Self {
        let nfft = nfft.max(16).next_power_of_two();
        let mut planner = RealFftPlanner::<f32>::new();
        let fft = planner.plan_fft_forward(nfft);
        Self {
            input: fft.make_input_vec(),
            output: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            fft,
            nfft,
            window: Vec::new(),
            prewhiten: false,
        }
    }

    pub fn nfft(&self) -> usize {
        self.nfft
    }

    /// Power spectrum of `x` sampled at `fs` (degree-2 detrended in place, Hann-windowed,
    /// zero-padded). `x` longer than `nfft` is truncated to its most recent `nfft` samples.
    pub fn power(&mut self, x: &mut [f32], fs: f32, out: &mut Spectrum) {
        self.power_detrended(x, fs, 2, out);
    }

    /// As [`Self::power`] with a linear (`degree` 1) or quadratic (2) detrend. The quadratic
    /// detrend acts as a high-pass that can turn steep red noise into an apparent peak just above
    /// its cut-off; the linear one keeps that drift visible so it can be recognised.
    pub fn power_detrended(&mut self, x: &mut [f32], fs: f32, degree: u8, out: &mut Spectrum) {
        let start = x.len().saturating_sub(self.nfft);
        let mut x = &mut x[start..];
        if self.prewhiten && x.len() > 3 {
            // First difference: turns drift (random-walk-like, 1/f²) into a flat floor, so the
            // detrend's high-pass edge cannot shape it into a breathing-like hump.
            for i in (1..x.len()).rev() {
                x[i] -= x[i - 1];
            }
            x = &mut x[1..];
        }
        let n = x.len();
        if degree >= 2 {
            detrend_quadratic(x);
        } else {
            detrend_linear(x);
        }
        if self.window.len() != n {
            self.window.clear();
            let denom = (n.max(2) - 1) as f32;
            self.window.extend(
                (0..n).map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / denom).cos()),
            );
        }
        self.input.iter_mut().for_each(|v| *v = 0.0);
        for ((dst, v), w) in self.input.iter_mut().zip(x.iter()).zip(self.window.iter()) {
            *dst = if v.is_finite() { v * w } else { 0.0 };
        }
        out.power.clear();
        out.df = fs / self.nfft as f32;
        out.window_len = n;
        if self
            .fft
            .process_with_scratch(&mut self.input, &mut self.output, &mut self.scratch)
            .is_err()
        {
            out.power.resize(self.output.len(), 0.0);
            return;
        }
        out.power.extend(self.output.iter().map(|c| c.norm_sqr()));
    }
}

/// One power spectrum.
#[derive(Debug, Clone, Default)]
pub struct Spectrum {
    pub power: Vec<f32>,
    /// Bin spacing, Hz.
    pub df: f32,
    /// Samples in the analysed window (sets the real resolution; zero padding only interpolates).
    pub window_len: usize,
}

/// A measured spectral peak and its quality figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    /// Interpolated frequency, Hz.
    pub freq_hz: f32,
    pub power: f32,
    /// Peak power / median in-band power (outside the peak's main lobe).
    pub snr: f32,
    /// Peak power / highest other local maximum in the band (outside the peak's main lobe).
    pub prominence: f32,
    /// Share of in-band power within ±1 resolution bin of the peak.
    pub concentration: f32,
    /// The maximum sits at the band edge (a rising slope into the band, not a peak).
    pub at_edge: bool,
    /// Full width at half maximum relative to that of a steady tone in this window (1.0 for a
    /// pure tone; a hump of band-limited drift is much wider).
    pub width_ratio: f32,
}

/// Thresholds a peak must meet to be believed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakGates {
    pub prominence: f32,
    pub snr: f32,
    pub concentration: f32,
    /// Widest accepted peak, in tone widths.
    pub max_width: f32,
}

impl PeakGates {
    pub fn pass(&self, p: &Peak) -> bool {
        !p.at_edge
            && p.width_ratio <= self.max_width
            && p.prominence >= self.prominence
            && p.snr >= self.snr
            && p.concentration >= self.concentration
    }
}

impl Spectrum {
    /// Half-width of the Hann main lobe (two resolution bins) in zero-padded bins.
    pub fn mainlobe_bins(&self) -> usize {
        2 * self.resolution_bins()
    }

    /// One resolution bin in zero-padded bins, unrounded.
    fn resolution_exact(&self) -> f32 {
        if self.window_len == 0 {
            return 1.0;
        }
        let nfft = (self.power.len().saturating_sub(1)) * 2;
        nfft as f32 / self.window_len as f32
    }

    /// One resolution bin (1 / window length) in zero-padded bins.
    pub fn resolution_bins(&self) -> usize {
        if self.window_len == 0 || self.df <= 0.0 {
            return 1;
        }
        let nfft = (self.power.len().saturating_sub(1)) * 2;
        (nfft as f32 / self.window_len as f32).round().max(1.0) as usize
    }

    fn bin_range(&self, lo: f32, hi: f32) -> (usize, usize) {
        if self.df <= 0.0 || self.power.is_empty() {
            return (0, 0);
        }
        let a = (lo / self.df).ceil().max(0.0) as usize;
        let b = ((hi / self.df).floor() as usize).min(self.power.len() - 1);
        (a, b)
    }

    /// Maximum power in [lo, hi] Hz.
    pub fn band_max(&self, lo: f32, hi: f32) -> f32 {
        let (a, b) = self.bin_range(lo, hi);
        if a > b {
            return 0.0;
        }
        self.power[a..=b].iter().copied().fold(0.0, f32::max)
    }

    /// Power at `f` Hz, interpolated linearly between bins.
    pub fn power_at(&self, f: f32) -> f32 {
        if self.df <= 0.0 || self.power.is_empty() || f < 0.0 {
            return 0.0;
        }
        let x = f / self.df;
        let i = x.floor() as usize;
        if i + 1 >= self.power.len() {
            return self.power.last().copied().unwrap_or(0.0);
        }
        let fr = x - i as f32;
        self.power[i] * (1.0 - fr) + self.power[i + 1] * fr
    }

    /// Zeroes the bins within `half_width` Hz of `f` (notching a known interferer, e.g. a
    /// breathing harmonic inside the heart band).
    pub fn notch(&mut self, f: f32, half_width: f32) {
        let (a, b) = self.bin_range(f - half_width, f + half_width);
        if a <= b {
            self.power[a..=b].iter_mut().for_each(|p| *p = 0.0);
        }
    }

    /// Noise floor over bins a..=b (minus `exclude`, the peak's main lobe) as a (centre, ln
    /// level, slope) law in ln power over ln bin: with `slope` 0 the median power; otherwise a
    /// power law of that slope through the median of the bins' residuals.
    fn floor_law(
        &self,
        a: usize,
        b: usize,
        exclude: Option<(usize, usize)>,
        slope: f64,
        scratch: &mut Vec<f32>,
    ) -> (f64, f64, f64) {
        let keep = |j: usize| exclude.is_none_or(|(lo, hi)| j < lo || j > hi);
        if slope != 0.0 {
            let resid =
                |j: usize| (f64::from(self.power[j].max(1e-30)).ln() - slope * ln_bin(j)) as f32;
            scratch.clear();
            scratch.extend(
                (a..=b)
                    .filter(|j| keep(*j) && self.power[*j] > 0.0)
                    .map(resid),
            );
            if scratch.is_empty() {
                scratch.extend((a..=b).map(resid));
            }
            let mid = scratch.len() / 2;
            let level = f64::from(*scratch.select_nth_unstable_by(mid, f32::total_cmp).1);
            return (0.0, level, slope);
        }
        scratch.clear();
        // Notched bins are exactly zero and are not noise: with a fast breath the 2nd–8th
        // harmonic notches cover over half the heart band, the median became 0 and every heart
        // peak vanished as soon as a breathing rate was known.
        scratch.extend(
            (a..=b)
                .filter(|j| keep(*j) && self.power[*j] > 0.0)
                .map(|j| self.power[j]),
        );
        if scratch.is_empty() {
            scratch.extend_from_slice(&self.power[a..=b]);
        }
        // The median by selection: the same element a full sort puts in the middle.
        let mid = scratch.len() / 2;
        let med = f64::from(
            scratch
                .select_nth_unstable_by(mid, f32::total_cmp)
                .1
                .max(1e-30),
        );
        (0.0, med.ln(), 0.0)
    }

    /// Least-squares slope of ln power over ln frequency in [lo, hi] Hz, leaving out the main
    /// lobe around `exclude_hz` (a peak's own skirt is not the background); `None` with fewer
    /// than four bins to fit.
    pub fn floor_slope(&self, lo: f32, hi: f32, exclude_hz: Option<f32>) -> Option<f32> {
        let (a, b) = self.bin_range(lo, hi);
        let lobe = self.mainlobe_bins();
        let centre = exclude_hz.map(|f| (f / self.df).round() as usize);
        let keep =
            |j: usize| self.power[j] > 0.0 && centre.is_none_or(|c| j + lobe < c || j > c + lobe);
        let (mut n, mut sx, mut sy, mut sxx, mut sxy) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
        for j in (a..=b.min(self.power.len().saturating_sub(1))).filter(|j| keep(*j)) {
            let (x, y) = (ln_bin(j), f64::from(self.power[j]).ln());
            n += 1.0;
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        let den = n * sxx - sx * sx;
        (n >= 4.0 && den > 0.0).then(|| ((n * sxy - sx * sy) / den) as f32)
    }

    /// The strongest peak in [lo, hi] Hz with its quality figures; `None` for an empty band or a
    /// spectrum with no power.
    ///
    /// All figures are taken on the spectrum divided by its noise floor.
    pub fn peak(&self, lo: f32, hi: f32, scratch: &mut Vec<f32>) -> Option<Peak> {
        self.peak_over(lo, hi, 0.0, scratch)
    }

    /// [`Spectrum::peak`] against a floor falling as a power law of `slope` (ln power per ln
    /// frequency; 0 is the flat median floor). Red noise, a slow random walk's 1/f² tail, is
    /// strongest at a band's low edge, where a flat floor takes its chance maxima for peaks.
    pub fn peak_over(&self, lo: f32, hi: f32, slope: f32, scratch: &mut Vec<f32>) -> Option<Peak> {
        let slope = f64::from(slope);
        let (a, b) = self.bin_range(lo, hi);
        if a + 2 > b
            || self.power[a..=b]
                .iter()
                .all(|p| *p <= 0.0 || !p.is_finite())
        {
            return None;
        }
        let lobe = self.mainlobe_bins();
        let whiten = |law: (f64, f64, f64), out: &mut Vec<f32>| {
            out.clear();
            for j in a..=b {
                let fl = (law.1 + law.2 * (ln_bin(j) - law.0)).exp();
                let w = if fl > 0.0 && fl.is_finite() {
                    (f64::from(self.power[j]) / fl) as f32
                } else {
                    0.0
                };
                out.push(if w.is_finite() { w } else { 0.0 });
            }
        };
        let mut w = Vec::with_capacity(b - a + 1);
        whiten(self.floor_law(a, b, None, slope, scratch), &mut w);
        let (rel, _) = w.iter().enumerate().max_by(|x, y| x.1.total_cmp(y.1))?;
        let i = a + rel;
        let law = self.floor_law(
            a,
            b,
            Some((i.saturating_sub(lobe), i + lobe)),
            slope,
            scratch,
        );
        whiten(law, &mut w);
        let wmax = w[rel];
        if wmax <= 0.0 {
            return None;
        }
        let at_edge = rel == 0 || rel == w.len() - 1;
        // Parabolic interpolation on log power (exact for a Gaussian-like Hann main lobe).
        let mut offset = 0.0;
        if i > 0 && i + 1 < self.power.len() {
            let l = |p: f32| p.max(1e-30).ln();
            let (y0, y1, y2) = (l(self.power[i - 1]), l(self.power[i]), l(self.power[i + 1]));
            let den = y0 - 2.0 * y1 + y2;
            if den.abs() > 1e-12 {
                offset = (0.5 * (y0 - y2) / den).clamp(-0.5, 0.5);
            }
        }
        let mut second = 0.0f32;
        for j in 1..w.len().saturating_sub(1) {
            if j.abs_diff(rel) <= lobe {
                continue;
            }
            if w[j] >= w[j - 1] && w[j] >= w[j + 1] {
                second = second.max(w[j]);
            }
        }
        let total: f32 = w.iter().sum();
        // Concentration counts ±1 resolution bin: a steady tone keeps ~90% of its Hann-windowed
        // power there, white noise only 3 / (band width in bins).
        let res = self.resolution_bins();
        let near: f32 = w[rel.saturating_sub(res)..=(rel + res).min(w.len() - 1)]
            .iter()
            .sum();
        let half = 0.5 * wmax;
        let mut l = rel;
        while l > 0 && w[l - 1] >= half {
            l -= 1;
        }
        let mut r = rel;
        while r + 1 < w.len() && w[r + 1] >= half {
            r += 1;
        }
        // Hann main lobe FWHM is 1.44 resolution bins.
        let tone_fwhm = 1.44 * self.resolution_exact();
        Some(Peak {
            freq_hz: (i as f32 + offset) * self.df,
            power: self.power[i],
            snr: wmax,
            prominence: if second > 0.0 { wmax / second } else { wmax },
            concentration: if total > 0.0 { near / total } else { 0.0 },
            at_edge,
            width_ratio: if tone_fwhm > 0.0 {
                (r - l + 1) as f32 / tone_fwhm
            } else {
                1.0
            },
        })
    }
}

/// ln of a bin index as the floor laws use it (bin 0 counts as bin 1).
fn ln_bin(j: usize) -> f64 {
    (j.max(1) as f64).ln()
}

/// Accepts a rate only when it was found in `windows` of the last `windows + 1` analyses (one
/// lapse tolerated, but not the latest two both missing), all within a tolerance of each other:
/// noise peaks wander from window to window; a real rhythm stays put.
#[derive(Debug, Clone)]
pub struct Persistence {
    history: VecDeque<Option<f32>>,
    windows: usize,
    tolerance_hz: f32,
}

impl Persistence {
    pub fn new(windows: usize, tolerance_hz: f32) -> Self {
        Self {
            history: VecDeque::with_capacity(windows + 2),
            windows: windows.max(1),
            tolerance_hz,
        }
    }

    /// Records this window's gated candidate (or its absence); returns the accepted rate (the
    /// latest candidate) when the rhythm is persistent.
    pub fn push(&mut self, candidate: Option<f32>) -> Option<f32> {
        self.history.push_back(candidate);
        while self.history.len() > self.windows + 1 {
            self.history.pop_front();
        }
        self.accepted()
    }

    pub fn accepted(&self) -> Option<f32> {
        let found: Vec<f32> = self.history.iter().flatten().copied().collect();
        if found.len() < self.windows {
            return None;
        }
        let recent_missing = self.history.iter().rev().take(2).all(Option::is_none);
        if recent_missing {
            return None;
        }
        let lo = found.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = found.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if hi - lo > 2.0 * self.tolerance_hz {
            return None;
        }
        self.history.iter().rev().flatten().next().copied()
    }

    pub fn reset(&mut self) {
        self.history.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    fn series(f: f32, fs: f32, n: usize, amp: f32, noise: f32, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let Ok(nd) = Normal::new(0.0f32, noise.max(1e-9)) else {
            return vec![0.0; n];
        };
        (0..n)
            .map(|i| {
                let t = i as f32 / fs;
                amp * (2.0 * std::f32::consts::PI * f * t).sin()
                    + 0.3 * t / 30.0
                    + 0.2 * (t / 30.0).powi(2)
                    + nd.sample(&mut rng)
            })
            .collect()
    }

    #[test]
    fn detrend_removes_a_quadratic_exactly() {
        let mut x: Vec<f32> = (0..100)
            .map(|i| 3.0 + 0.5 * i as f32 - 0.01 * (i * i) as f32)
            .collect();
        detrend_quadratic(&mut x);
        assert!(x.iter().all(|v| v.abs() < 1e-2), "{x:?}");
    }

    #[test]
    fn finds_a_breathing_tone_precisely_and_gates_pass() {
        let mut an = SpectrumAnalyzer::new(1024);
        let mut sp = Spectrum::default();
        let mut scratch = Vec::new();
        for bpm in [10.0f32, 14.3, 19.7, 25.0] {
            let mut x = series(bpm / 60.0, 10.0, 300, 1.0, 0.5, 3);
            an.power(&mut x, 10.0, &mut sp);
            let Some(p) = sp.peak(0.1, 0.5, &mut scratch) else {
                panic!("no peak")
            };
            assert!((p.freq_hz * 60.0 - bpm).abs() < 0.3, "{bpm}: {p:?}");
            let gates = PeakGates {
                prominence: 1.5,
                snr: 4.0,
                concentration: 0.55,
                max_width: 1.6,
            };
            assert!(gates.pass(&p), "{p:?}");
        }
    }

    #[test]
    fn noise_alone_fails_the_gates() {
        let mut an = SpectrumAnalyzer::new(1024);
        let mut sp = Spectrum::default();
        let mut scratch = Vec::new();
        let gates = breath_gates(0.6);
        let mut passed = 0;
        for seed in 0..200 {
            let mut x = series(0.2, 10.0, 300, 0.0, 1.0, seed);
            an.power(&mut x, 10.0, &mut sp);
            if sp
                .peak(0.1, 0.5, &mut scratch)
                .is_some_and(|p| gates.pass(&p))
            {
                passed += 1;
            }
        }
        // Single 30 s windows of pure noise pass a few % of the time; persistence and the presence
        // logic handle the rest.
        assert!(passed <= 10, "{passed} noise windows passed");
    }

    /// The breathing gates' figures, with the concentration a test asks for.
    fn breath_gates(concentration: f32) -> PeakGates {
        PeakGates {
            prominence: 1.5,
            snr: 5.0,
            concentration,
            max_width: 1.6,
        }
    }

    /// 30 s at 10 Hz of a random walk (white steps summed): red noise, 1/f² above its lowest bins.
    fn random_walk(seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let Ok(nd) = Normal::new(0.0f32, 1.0) else {
            return vec![0.0; 300];
        };
        let mut acc = 0.0;
        (0..300)
            .map(|_| {
                acc += nd.sample(&mut rng);
                acc
            })
            .collect()
    }

    #[test]
    fn a_fitted_floor_sees_a_random_walk_as_red_and_stops_its_low_humps() {
        let mut an = SpectrumAnalyzer::new(1024);
        let mut sp = Spectrum::default();
        let mut scratch = Vec::new();
        let gates = breath_gates(0.5);
        let (mut flat, mut fitted, mut slopes) = (0, 0, Vec::new());
        for seed in 0..200 {
            let mut x = random_walk(seed);
            an.power(&mut x, 10.0, &mut sp);
            let Some(slope) = sp.floor_slope(0.083, 0.55, None) else {
                panic!("no slope fitted")
            };
            slopes.push(slope);
            let pass = |p: Option<Peak>| p.is_some_and(|p| gates.pass(&p));
            flat += usize::from(pass(sp.peak(0.083, 0.55, &mut scratch)));
            let s = slope.clamp(-2.0, 0.0);
            fitted += usize::from(pass(sp.peak_over(0.083, 0.55, s, &mut scratch)));
        }
        slopes.sort_by(f32::total_cmp);
        let median = slopes[slopes.len() / 2];
        eprintln!(
            "random walk: median slope {median:.2}; gates passed flat {flat}, fitted {fitted} of 200"
        );
        assert!((-2.6..=-1.4).contains(&median), "median slope {median}");
        assert!(
            flat >= 20 && fitted * 4 <= flat,
            "flat {flat}, fitted {fitted}"
        );
    }

    #[test]
    fn a_fitted_floor_keeps_a_tone_over_white_noise() {
        let mut an = SpectrumAnalyzer::new(1024);
        let mut sp = Spectrum::default();
        let mut scratch = Vec::new();
        for bpm in [7.0f32, 12.0, 20.0] {
            let mut x = series(bpm / 60.0, 10.0, 300, 1.0, 1.0, 5);
            an.power(&mut x, 10.0, &mut sp);
            let Some(flat) = sp.peak(0.083, 0.55, &mut scratch) else {
                panic!("no peak")
            };
            let around = Some(flat.freq_hz);
            let slope = sp
                .floor_slope(0.083, 0.55, around)
                .unwrap_or(0.0)
                .clamp(-2.0, 0.0);
            let Some(p) = sp.peak_over(0.083, 0.55, slope, &mut scratch) else {
                panic!("no peak")
            };
            eprintln!(
                "{bpm}: slope {slope:.2}, snr flat {:.0} fitted {:.0}",
                flat.snr, p.snr
            );
            assert!((p.freq_hz * 60.0 - bpm).abs() < 0.3, "{bpm}: {p:?}");
            assert!(
                slope > -0.5 && p.snr >= 0.5 * flat.snr,
                "{bpm}: {slope} {p:?}"
            );
        }
    }

    #[test]
    fn persistence_needs_three_agreeing_windows() {
        let mut p = Persistence::new(3, 0.06);
        assert_eq!(p.push(Some(0.25)), None);
        assert_eq!(p.push(Some(0.27)), None);
        assert_eq!(p.push(Some(0.26)), Some(0.26));
        // One lapse keeps the last value; two in a row do not.
        assert_eq!(p.push(None), Some(0.26));
        assert_eq!(p.push(None), None);
        p.reset();
        for f in [0.25, 0.26, 0.45] {
            p.push(Some(f));
        }
        assert_eq!(p.accepted(), None, "a wandering peak is not a rhythm");
    }
}
