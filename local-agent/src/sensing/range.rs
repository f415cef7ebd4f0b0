//! Range of the strongest moving reflector on one link, or `None` when it cannot be measured.
//!
//! **What the number is.** `range_m` is the *excess path length* of the dominant change in the
//! channel relative to the direct TX–RX path, in metres of path (body path minus direct path,
//! the simulator's `excess_path_m`). It is not a one-way distance: on a bistatic link the
//! reflector lies on an ellipse with the two radios as foci, and no single distance follows.
//!
//! **How.** The static room dominates H; subtracting a slow background B (per complex
//! subcarrier, B ← 0.97·B + 0.03·H per grid tick, frozen while someone moves) leaves the change
//! D = H − B. Each packet is first sanitised (common phase and linear phase slope removed, as
//! ESP32 radios share no clock with the transmitter), which puts the delay origin at the static
//! channel's power centroid, not at the direct path. So the change's delay (from the phase slope
//! of D across adjacent subcarriers) is referred to the direct path's delay, estimated from the
//! leading edge of B's own padded delay profile (half-amplitude point, corrected by the same
//! point of a lone path on the same tones).
//!
//! **Resolution.** One cell is c / (occupied tones · Δf): 52 tones × 312.5 kHz = 16.25 MHz,
//! ≈ 18 m of path. The 128/192-slot ESP32 layouts repeat the same 20 MHz band (HT-LTF copies),
//! so they do not improve it; only the 64-slot LLTF block is used. A body in a room has an
//! excess path of 0–4 m, far inside one cell: it cannot be separated from the direct path and
//! the static multipath around it, and the measured delay of such a change is set by the
//! sanitisation reference and the other paths in the cell (simulator probe: errors of 6–60 m).
//!
//! **When it is null.** A value is reported only when all hold: the background is warm (30
//! ticks); the change's padded profile peak exceeds 3× its median; the change is one dominant
//! path (phase-slope coherence ≥ 0.95); its excess path is at least one resolution cell and below
//! half the unambiguous span (c / 2Δf = 480 m); and this held for 10 consecutive ticks (1 s)
//! with a spread within a quarter cell (the median is reported). In practice, at 20 MHz on one
//! antenna, an in-room person gives `None`; so does an empty room. `strength` is the profile's
//! peak/median whether or not a range is reported.

use super::dsp::magnitude;
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
/// Minimum phase-slope coherence of the change: only a single dominant path has a meaningful
/// delay (a mixture's mean phase slope can lie outside every component's delay).
pub const COHERENCE_GATE: f64 = 0.95;
/// Consecutive gated ticks needed before a value is reported (1 s on the 10 Hz grid).
pub const PERSIST_TICKS: usize = 10;

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
    for (k, r) in ramp(n, slope).enumerate() {
        common += h(k) * r;
    }
    let cpe = if common.norm_sqr() > 0.0 {
        common.arg()
    } else {
        0.0
    };
    let scale = Complex32::from_polar(1.0 / mean_amp, -cpe);
    for (k, r) in ramp(n, slope).enumerate() {
        let v = h(k) * (r * scale);
        out.push(v.re);
        out.push(v.im);
    }
}

/// `exp(-i·slope·f)` for the subcarriers `0..n` in FFT order (f = k below n/2, k − n from n/2),
/// by a rotation recurrence in f64: two `sin_cos` per packet instead of two per tone (on a
/// 3×2×56 link at 100 packets/s, 6 % of the pipeline's instructions per frame). Over 64 steps
/// the f64 product drifts by ~1e-14, far below the f32 output's resolution.
fn ramp(n: usize, slope: f32) -> impl Iterator<Item = Complex32> {
    let step = num_complex::Complex64::from_polar(1.0, -f64::from(slope));
    let half = n / 2;
    let mut p = num_complex::Complex64::new(1.0, 0.0);
    (0..n).map(move |k| {
        if k == half {
            p = num_complex::Complex64::from_polar(1.0, f64::from(slope) * (n - half) as f64);
        }
        let r = Complex32::new(p.re as f32, p.im as f32);
        p *= step;
        r
    })
}

/// Diagnostics of the latest tick, for probes and tests (not part of the engine's output).
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeDiag {
    /// Peak/median of the change's padded delay profile (both signs).
    pub peak_ratio: f64,
    /// Signed delay of the change's profile peak (parabolic refinement), ns.
    pub peak_delay_ns: f64,
    /// Delay of the change from its phase slope across subcarriers, ns.
    pub slope_delay_ns: f64,
    /// |Σ D(k+1)·D*(k)| / Σ |D(k+1)|·|D(k)|: 1 for a single path, lower for a mixture.
    pub slope_coherence: f64,
    /// Direct-path delay estimated from the leading edge of the background's profile, ns.
    pub direct_delay_ns: f64,
}

/// Per-link background and delay profile.
pub struct RangeEstimator {
    n: usize,
    background: Vec<Complex32>,
    warm: usize,
    fft: Option<Arc<dyn Fft<f32>>>,
    buf: Vec<Complex32>,
    bbuf: Vec<Complex32>,
    mbuf: Vec<Complex32>,
    scratch: Vec<Complex32>,
    mags: Vec<f32>,
    /// Magnitudes of the background's and the mask's profiles (scratch).
    edge_mags: Vec<f32>,
    /// Tones the background held when `edge_m` was computed, and that mask profile's leading
    /// edge (signed padded bins).
    mask: Vec<bool>,
    edge_m: f64,
    /// Scratch for the median of `mags`.
    sorted: Vec<f32>,
    /// Excess-path candidates of the latest consecutive gated ticks.
    recent: std::collections::VecDeque<f64>,
    /// Latest gated range, metres, and its peak/median strength.
    pub range_m: Option<f64>,
    pub strength: Option<f64>,
    pub diag: RangeDiag,
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

/// Signed delay, in padded bins, of padded-profile index `i` of `len`.
fn signed_bin(i: f64, len: usize) -> f64 {
    if i >= len as f64 / 2.0 {
        i - len as f64
    } else {
        i
    }
}

/// Places `n` FFT-order values into a zero-padded buffer of `n * PAD` (same delay axis).
fn pad_into(buf: &mut Vec<Complex32>, n: usize, v: impl Fn(usize) -> Complex32) {
    buf.clear();
    buf.resize(n * PAD, Complex32::new(0.0, 0.0));
    for k in 0..n {
        let d = v(k);
        let d = if d.re.is_finite() && d.im.is_finite() {
            d
        } else {
            Complex32::new(0.0, 0.0)
        };
        let dst = if k < n / 2 { k } else { k + n * (PAD - 1) };
        buf[dst] = d;
    }
}

/// Where the profile `mags` (circular) first rises to half its peak, walking back from the peak;
/// fractional padded index (may be negative, i.e. wrapped).
fn leading_edge(mags: &[f32]) -> f64 {
    let len = mags.len();
    let (p, pm) = mags
        .iter()
        .copied()
        .enumerate()
        .fold((0, 0.0f32), |a, (i, m)| if m > a.1 { (i, m) } else { a });
    let half = 0.5 * pm;
    let mut hi = p as isize;
    for _ in 0..len / 2 {
        let lo = hi - 1;
        let m_lo = mags[lo.rem_euclid(len as isize) as usize];
        let m_hi = mags[hi.rem_euclid(len as isize) as usize];
        if m_lo < half {
            let frac = if m_hi > m_lo {
                f64::from((half - m_lo) / (m_hi - m_lo))
            } else {
                0.0
            };
            return lo as f64 + frac;
        }
        hi = lo;
    }
    p as f64
}

impl RangeEstimator {
    pub fn new() -> Self {
        Self {
            n: 0,
            background: Vec::new(),
            warm: 0,
            fft: None,
            buf: Vec::new(),
            bbuf: Vec::new(),
            mbuf: Vec::new(),
            scratch: Vec::new(),
            mags: Vec::new(),
            edge_mags: Vec::new(),
            mask: Vec::new(),
            edge_m: 0.0,
            sorted: Vec::new(),
            recent: std::collections::VecDeque::new(),
            range_m: None,
            strength: None,
            diag: RangeDiag::default(),
        }
    }

    pub fn reset(&mut self) {
        self.warm = 0;
        self.recent.clear();
        self.range_m = None;
        self.strength = None;
    }

    /// One grid tick of sanitised (re, im) pairs. `update_background`: false while someone
    /// moves, so a walking person is not absorbed into the background.
    pub fn push_tick(&mut self, h: &[f32], update_background: bool) {
        let n = h.len() / 2;
        if n < 8 {
            self.recent.clear();
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
            self.mask.clear();
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
        let len = n * PAD;
        let bin_s = 1.0 / (len as f64 * SUBCARRIER_HZ);
        // Taken out for the tick (not cloned: this runs every tick) and put back after its
        // update below; everything before the update reads the previous background.
        let mut bg = std::mem::take(&mut self.background);
        // The change and its delay profile (both signs), zero-padded.
        pad_into(&mut self.buf, n, |k| cur(k) - bg[k]);
        // Phase slope of the change across frequency-adjacent subcarriers.
        let mut acc = Complex32::new(0.0, 0.0);
        let mut mag_acc = 0.0f32;
        for k in 0..n {
            let next = (k + 1) % n;
            if k + 1 == n / 2 {
                continue;
            }
            let a = cur(k) - bg[k];
            let b = cur(next) - bg[next];
            if a.re.is_finite() && a.im.is_finite() && b.re.is_finite() && b.im.is_finite() {
                acc += b * a.conj();
                mag_acc += magnitude(a) * magnitude(b);
            }
        }
        let slope_delay_s = -f64::from(acc.arg()) / (2.0 * std::f64::consts::PI * SUBCARRIER_HZ);
        let coherence = if mag_acc > 0.0 {
            f64::from(magnitude(acc) / mag_acc)
        } else {
            0.0
        };
        fft.process_with_scratch(&mut self.buf, &mut self.scratch);
        // Background profile and the profile of the occupied-tone mask (a single path at 0 delay).
        pad_into(&mut self.bbuf, n, |k| bg[k]);
        fft.process_with_scratch(&mut self.bbuf, &mut self.scratch);
        self.edge_mags.clear();
        self.edge_mags
            .extend(self.bbuf.iter().map(|c| magnitude(*c)));
        let edge_b = signed_bin(leading_edge(&self.edge_mags).rem_euclid(len as f64), len);
        // The mask's edge depends on which tones the background holds, which settles after the
        // first ticks: transformed again only when the mask changes.
        let mask_same = self.mask.len() == n
            && self
                .mask
                .iter()
                .zip(bg.iter())
                .all(|(m, b)| *m == (b.norm_sqr() > 0.0));
        if !mask_same {
            self.mask.clear();
            self.mask.extend(bg.iter().map(|b| b.norm_sqr() > 0.0));
            let mask = &self.mask;
            pad_into(&mut self.mbuf, n, |k| {
                if mask[k] {
                    Complex32::new(1.0, 0.0)
                } else {
                    Complex32::new(0.0, 0.0)
                }
            });
            fft.process_with_scratch(&mut self.mbuf, &mut self.scratch);
            self.edge_mags.clear();
            self.edge_mags
                .extend(self.mbuf.iter().map(|c| magnitude(*c)));
            self.edge_m = signed_bin(leading_edge(&self.edge_mags).rem_euclid(len as f64), len);
        }
        let edge_m = self.edge_m;
        let direct_s = (edge_b - edge_m) * bin_s;
        let occupied = self.mask.iter().filter(|m| **m).count().max(1);
        if update_background || self.warm < 30 {
            for (k, b) in bg.iter_mut().enumerate().take(n) {
                let v = cur(k);
                if v.re.is_finite() && v.im.is_finite() {
                    *b = *b + (v - *b) * BACKGROUND_ALPHA;
                }
            }
        }
        self.background = bg;
        self.mags.clear();
        self.mags.extend(self.buf.iter().map(|c| magnitude(*c)));
        let (imax, pmax) =
            self.mags
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, 0.0f32),
                    |acc, (i, m)| if m > acc.1 { (i, m) } else { acc },
                );
        let m = |i: isize| f64::from(self.mags[i.rem_euclid(len as isize) as usize]);
        let (y0, y1, y2) = (m(imax as isize - 1), m(imax as isize), m(imax as isize + 1));
        let den = y0 - 2.0 * y1 + y2;
        let frac = if den < 0.0 {
            (0.5 * (y0 - y2) / den).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        let peak_s = signed_bin(imax as f64 + frac, len) * bin_s;
        // The median by selection (the same element a full sort puts in the middle).
        let mut sorted = std::mem::take(&mut self.sorted);
        sorted.clone_from(&self.mags);
        let mid = sorted.len() / 2;
        let median = *sorted.select_nth_unstable_by(mid, f32::total_cmp).1;
        self.sorted = sorted;
        let ratio = if median > 0.0 { pmax / median } else { 0.0 };
        self.diag = RangeDiag {
            peak_ratio: f64::from(ratio),
            peak_delay_ns: peak_s * 1e9,
            slope_delay_ns: slope_delay_s * 1e9,
            slope_coherence: coherence,
            direct_delay_ns: direct_s * 1e9,
        };
        if self.warm < 30 || pmax <= 0.0 || median <= 0.0 {
            self.recent.clear();
            self.range_m = None;
            self.strength = None;
            return;
        }
        self.strength = Some(f64::from(ratio));
        // Resolution cell of the occupied band: c / (occupied tones · Δf), ≈ 18 m of path for
        // the 52 used tones of a 20 MHz LLTF. A change closer to the direct path than this is
        // not separable from it, and its measured delay is set by the sanitisation reference
        // and the other paths in the same cell, not by the body.
        let cell_m = C / (occupied as f64 * SUBCARRIER_HZ);
        let excess_m = (slope_delay_s - direct_s) * C;
        let span_m = C / SUBCARRIER_HZ / 2.0;
        let candidate = ratio > PEAK_GATE
            && coherence >= COHERENCE_GATE
            && excess_m.is_finite()
            && excess_m >= cell_m
            && excess_m < span_m;
        if candidate {
            self.recent.push_back(excess_m);
            while self.recent.len() > PERSIST_TICKS {
                self.recent.pop_front();
            }
        } else {
            self.recent.clear();
        }
        self.range_m = None;
        if self.recent.len() == PERSIST_TICKS {
            let mut v: Vec<f64> = self.recent.iter().copied().collect();
            v.sort_by(f64::total_cmp);
            // Consistent across the window: spread within a quarter of a resolution cell.
            if v[v.len() - 1] - v[0] <= 0.25 * cell_m {
                self.range_m = Some(v[v.len() / 2]);
            }
        }
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
    fn the_ramp_recurrence_matches_the_direct_phasors() {
        for (n, slope) in [
            (64, 0.37f32),
            (56, -2.9),
            (57, 3.1),
            (4, 1e-3),
            (128, -0.05),
        ] {
            for (k, r) in ramp(n, slope).enumerate() {
                let f = if k < n / 2 {
                    k as f64
                } else {
                    k as f64 - n as f64
                };
                let want = num_complex::Complex64::from_polar(1.0, -f64::from(slope) * f);
                assert!(
                    (f64::from(r.re) - want.re).abs() < 1e-6
                        && (f64::from(r.im) - want.im).abs() < 1e-6,
                    "n {n} k {k}: {r} vs {want}"
                );
            }
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

    /// Synthetic, unsanitised ticks: a direct path at delay 0, a wall reflection 2 m later, and
    /// optionally a moving reflector at `excess_m` of extra path with phase `phi`.
    fn synthetic(n: usize, excess_m: Option<f64>, phi: f64) -> Vec<f32> {
        let mut h = Vec::with_capacity(2 * n);
        for k in 0..n {
            let f = if k < n / 2 {
                k as f64
            } else {
                k as f64 - n as f64
            };
            // 52 occupied tones, as in an HT20 LLTF: DC and the band edges are zero.
            if k == 0 || (27..=37).contains(&k) {
                h.extend([0.0, 0.0]);
                continue;
            }
            let path = |m: f64, len: f64, ph: f64| {
                let w = -2.0 * std::f64::consts::PI * f * SUBCARRIER_HZ * len / C + ph;
                num_complex::Complex64::from_polar(m, w)
            };
            let mut v = path(1.0, 0.0, 0.0) + path(0.7, 2.0, 1.0);
            if let Some(x) = excess_m {
                v += path(0.3, x, phi);
            }
            h.extend([v.re as f32, v.im as f32]);
        }
        h
    }

    #[test]
    fn resolvable_single_path_change_is_ranged() {
        let mut r = RangeEstimator::new();
        for _ in 0..40 {
            r.push_tick(&synthetic(64, None, 0.0), true);
        }
        let mut last = None;
        for t in 0..30 {
            r.push_tick(&synthetic(64, Some(40.0), 0.7 * t as f64), false);
            last = r.range_m;
        }
        let got = last.expect("a resolvable, persistent single path is reported");
        assert!((got - 40.0).abs() < 3.0, "{got}");
    }

    #[test]
    fn unresolvable_change_gives_no_range() {
        let mut r = RangeEstimator::new();
        for _ in 0..40 {
            r.push_tick(&synthetic(64, None, 0.0), true);
        }
        for t in 0..30 {
            r.push_tick(&synthetic(64, Some(2.0), 0.7 * t as f64), false);
            assert_eq!(r.range_m, None, "{:?}", r.diag);
        }
    }
}
