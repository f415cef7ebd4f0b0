//! Range of the strongest moving reflector on one link.
//!
//! The static room dominates H; subtracting a slow background B (per complex subcarrier,
//! B ← 0.97·B + 0.03·H per grid tick) leaves what changed, and |IFFT(H − B)| is its delay
//! profile. Each packet is first sanitised: the common phase and the linear phase slope
//! (timing offset) differ per packet on unsynchronised ESP32 radios and would otherwise make
//! every packet look like a change. A range is reported only when the profile peak stands above
//! 3× its median and does not sit at the first or last delay bin (no latching at range max).

use num_complex::Complex32;
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Speed of light, m/s.
const C: f64 = 299_792_458.0;
/// Subcarrier spacing, Hz.
pub const SUBCARRIER_HZ: f64 = 312_500.0;
/// Background EMA weight per grid tick.
pub const BACKGROUND_ALPHA: f32 = 0.03;
/// Peak/median gate.
pub const PEAK_GATE: f32 = 3.0;
/// Zero-padding factor of the IFFT (interpolates the profile; resolution stays 1/(N·Δf)).
const PAD: usize = 4;

/// Sanitises `csi` (first `n` subcarriers, FFT order) into `out` as interleaved (re, im),
/// normalised by mean amplitude, with common phase and linear phase slope removed.
pub fn sanitise(csi: &[Complex32], n: usize, mean_amp: f32, out: &mut Vec<f32>) {
    out.clear();
    let n = n.min(csi.len());
    if n < 4 || mean_amp <= 0.0 || !mean_amp.is_finite() {
        out.resize(2 * n, 0.0);
        return;
    }
    let h = |k: usize| {
        let v = csi[k];
        if v.re.is_finite() && v.im.is_finite() {
            v
        } else {
            Complex32::new(0.0, 0.0)
        }
    };
    let freq = |k: usize| {
        if k < n / 2 {
            k as f32
        } else {
            k as f32 - n as f32
        }
    };
    // Slope: phase step between frequency-adjacent subcarriers (k, k+1), skipping the wrap at n/2.
    let mut acc = Complex32::new(0.0, 0.0);
    for k in 0..n {
        let next = (k + 1) % n;
        if k + 1 == n / 2 {
            continue;
        }
        acc += h(next) * h(k).conj();
    }
    let slope = if acc.norm_sqr() > 0.0 { acc.arg() } else { 0.0 };
    let mut common = Complex32::new(0.0, 0.0);
    for k in 0..n {
        common += h(k) * Complex32::from_polar(1.0, -slope * freq(k));
    }
    let cpe = if common.norm_sqr() > 0.0 {
        common.arg()
    } else {
        0.0
    };
    let inv = 1.0 / mean_amp;
    for k in 0..n {
        let v = h(k) * Complex32::from_polar(inv, -slope * freq(k) - cpe);
        out.push(v.re);
        out.push(v.im);
    }
}

/// Per-link background and delay profile.
pub struct RangeEstimator {
    n: usize,
    background: Vec<Complex32>,
    warm: usize,
    fft: Option<Arc<dyn Fft<f32>>>,
    buf: Vec<Complex32>,
    scratch: Vec<Complex32>,
    mags: Vec<f32>,
    /// Latest gated range, metres, and its peak/median strength.
    pub range_m: Option<f64>,
    pub strength: Option<f64>,
}

impl std::fmt::Debug for RangeEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeEstimator")
            .field("n", &self.n)
            .field("range_m", &self.range_m)
            .finish()
    }
}

impl Default for RangeEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl RangeEstimator {
    pub fn new() -> Self {
        Self {
            n: 0,
            background: Vec::new(),
            warm: 0,
            fft: None,
            buf: Vec::new(),
            scratch: Vec::new(),
            mags: Vec::new(),
            range_m: None,
            strength: None,
        }
    }

    pub fn reset(&mut self) {
        self.warm = 0;
        self.range_m = None;
        self.strength = None;
    }

    /// One grid tick of sanitised (re, im) pairs. `update_background`: false while someone
    /// moves, so a walking person is not absorbed into the background.
    pub fn push_tick(&mut self, h: &[f32], update_background: bool) {
        let n = h.len() / 2;
        if n < 8 {
            self.range_m = None;
            self.strength = None;
            return;
        }
        if n != self.n {
            self.n = n;
            self.background.clear();
            self.background.resize(n, Complex32::new(0.0, 0.0));
            let mut planner = FftPlanner::<f32>::new();
            let fft = planner.plan_fft_inverse(n * PAD);
            self.scratch = vec![Complex32::new(0.0, 0.0); fft.get_inplace_scratch_len()];
            self.fft = Some(fft);
            self.warm = 0;
        }
        let cur = |k: usize| Complex32::new(h[2 * k], h[2 * k + 1]);
        if self.warm == 0 {
            for k in 0..n {
                self.background[k] = cur(k);
            }
        }
        self.warm = self.warm.saturating_add(1);
        let Some(fft) = self.fft.clone() else {
            return;
        };
        // Delay profile of the change, zero-padded between the positive and negative halves.
        self.buf.clear();
        self.buf.resize(n * PAD, Complex32::new(0.0, 0.0));
        for k in 0..n {
            let d = cur(k) - self.background[k];
            let d = if d.re.is_finite() && d.im.is_finite() {
                d
            } else {
                Complex32::new(0.0, 0.0)
            };
            let dst = if k < n / 2 { k } else { k + n * (PAD - 1) };
            self.buf[dst] = d;
        }
        fft.process_with_scratch(&mut self.buf, &mut self.scratch);
        if update_background || self.warm < 30 {
            for k in 0..n {
                let v = cur(k);
                if v.re.is_finite() && v.im.is_finite() {
                    let b = self.background[k];
                    self.background[k] = b + (v - b) * BACKGROUND_ALPHA;
                }
            }
        }
        // Positive delays only: the first half of the padded profile.
        let half = n * PAD / 2;
        self.mags.clear();
        self.mags.extend(self.buf[..half].iter().map(|c| c.norm()));
        let (imax, pmax) =
            self.mags
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, 0.0f32),
                    |acc, (i, m)| if m > acc.1 { (i, m) } else { acc },
                );
        let mut sorted = self.mags.clone();
        sorted.sort_by(f32::total_cmp);
        let median = sorted[sorted.len() / 2];
        if self.warm < 30 || pmax <= 0.0 || median <= 0.0 {
            self.range_m = None;
            self.strength = None;
            return;
        }
        let ratio = pmax / median;
        self.strength = Some(f64::from(ratio));
        // Excess path length of the reflection; reported as the one-way distance (half of it).
        let delay_s = imax as f64 / (n * PAD) as f64 / SUBCARRIER_HZ;
        let edge = imax == 0 || imax + 1 >= half;
        self.range_m = if ratio > PEAK_GATE && !edge {
            Some(delay_s * C / 2.0)
        } else {
            None
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitise_removes_phase_offsets() {
        let n = 64;
        let base: Vec<Complex32> = (0..n)
            .map(|k| Complex32::from_polar(1.0 + 0.1 * (k as f32).sin(), 0.3 * k as f32))
            .collect();
        let shifted: Vec<Complex32> = (0..n)
            .map(|k| {
                let f = if k < 32 { k as f32 } else { k as f32 - 64.0 };
                base[k] * Complex32::from_polar(2.0, 1.1 + 0.2 * f)
            })
            .collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        sanitise(&base, n, 1.0, &mut a);
        sanitise(&shifted, n, 2.0, &mut b);
        for (x, y) in a.iter().zip(b.iter()) {
            assert!((x - y).abs() < 1e-3);
        }
    }

    #[test]
    fn static_room_gives_no_range() {
        let mut r = RangeEstimator::new();
        let h: Vec<f32> = (0..128).map(|i| ((i * 7) % 5) as f32 * 0.1 + 0.5).collect();
        for _ in 0..100 {
            r.push_tick(&h, true);
        }
        assert_eq!(r.range_m, None);
    }
}
