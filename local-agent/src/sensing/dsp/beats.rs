//! Heart rate from beat-to-beat intervals: an estimator independent of the spectrum.
//!
//! A spectral peak can be a breathing harmonic's leftover, an intermodulation product or a lucky
//! noise bump; a heartbeat is also a train of pulses whose spacing is regular to within a few
//! percent (heart-rate variability at rest). The series is band-passed around the heart band
//! (zero phase), pulses are taken as local maxima at least a refractory time apart, refined by a
//! parabola, and the rate is 60 / the median interval. The interval train must be regular (most
//! intervals within ±20 % of the median) to count: noise gives a wildly varying spacing.

use super::filter::BandPass;

/// Result of [`beat_rate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeatRate {
    /// 60 / median interval.
    pub bpm: f32,
    /// Intervals measured.
    pub intervals: usize,
    /// Share of intervals within ±20 % of the median.
    pub regularity: f32,
}

/// Largest relative deviation of an interval from the median that counts as regular.
const REGULAR_DEVIATION: f32 = 0.2;

/// Estimates the beat rate of `x` (sampled at `fs`) within `band` (Hz). `expected_hz`, when
/// given, sets the refractory distance between pulses to 60 % of its period (a pulse cannot come
/// sooner); otherwise the band's top sets it. `None` when fewer than 4 intervals are found.
pub fn beat_rate(
    x: &[f32],
    fs: f32,
    band: (f32, f32),
    expected_hz: Option<f32>,
    scratch: &mut Vec<f32>,
) -> Option<BeatRate> {
    let bp = BandPass::new(fs, band.0, band.1)?;
    if x.len() < 8 {
        return None;
    }
    // Zero phase: forward, then backward, so pulse times are not delayed.
    let mut fwd = Vec::with_capacity(x.len());
    bp.filter_series(x, &mut fwd);
    fwd.reverse();
    scratch.clear();
    bp.filter_series(&fwd, scratch);
    scratch.reverse();
    let y = &scratch[..];
    let refractory_s = 0.6 / expected_hz.filter(|f| *f > 0.0).unwrap_or(band.1);
    let min_gap = (refractory_s * fs).max(1.0);
    // Skip the filter's settling at both ends.
    let edge = (fs / band.0.max(0.1)).ceil() as usize / 2;
    let mut peaks: Vec<f32> = Vec::new();
    let mut last: Option<f32> = None;
    let level = {
        let n = y.len().max(1) as f32;
        (y.iter().map(|v| v * v).sum::<f32>() / n).sqrt()
    };
    for i in edge.max(1)..y.len().saturating_sub(edge.max(1)) {
        if !(y[i] > y[i - 1] && y[i] >= y[i + 1] && y[i] > 0.3 * level) {
            continue;
        }
        let den = y[i - 1] - 2.0 * y[i] + y[i + 1];
        let off = if den.abs() > 1e-12 {
            (0.5 * (y[i - 1] - y[i + 1]) / den).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        let t = i as f32 + off;
        match last {
            Some(l) if t - l < min_gap => {
                // Keep the taller of two pulses too close together.
                let li = l.round() as usize;
                if y[i] > y[li.min(y.len() - 1)] {
                    peaks.pop();
                    peaks.push(t);
                    last = Some(t);
                }
            }
            _ => {
                peaks.push(t);
                last = Some(t);
            }
        }
    }
    if peaks.len() < 5 {
        return None;
    }
    let mut ibi: Vec<f32> = peaks.windows(2).map(|w| (w[1] - w[0]) / fs).collect();
    let n = ibi.len();
    ibi.sort_unstable_by(f32::total_cmp);
    let median = ibi[n / 2];
    if median <= 0.0 {
        return None;
    }
    let regular = ibi
        .iter()
        .filter(|v| ((*v - median) / median).abs() <= REGULAR_DEVIATION)
        .count();
    Some(BeatRate {
        bpm: 60.0 / median,
        intervals: n,
        regularity: regular as f32 / n as f32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn finds_a_pulse_train_with_variability() {
        let fs = 10.0;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let Ok(jit) = Normal::new(0.0f32, 0.03) else {
            return;
        };
        for bpm in [52.0f32, 68.0, 85.0, 110.0] {
            let mut x = vec![0.0f32; 300];
            let mut t = 0.3f32;
            while t < 30.0 {
                for (i, v) in x.iter_mut().enumerate() {
                    let d = i as f32 / fs - t;
                    *v += (-(d / 0.08).powi(2)).exp();
                }
                t += 60.0 / bpm * (1.0 + jit.sample(&mut rng));
            }
            let mut s = Vec::new();
            let r = beat_rate(&x, fs, (0.7, 2.5), Some(bpm / 60.0), &mut s).unwrap();
            assert!((r.bpm - bpm).abs() < 3.0, "{bpm}: {r:?}");
            assert!(r.regularity > 0.8, "{r:?}");
        }
    }

    #[test]
    fn noise_is_irregular() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let Ok(nd) = Normal::new(0.0f32, 1.0) else {
            return;
        };
        let mut irregular = 0;
        for _ in 0..20 {
            let x: Vec<f32> = (0..300).map(|_| nd.sample(&mut rng)).collect();
            let mut s = Vec::new();
            if beat_rate(&x, 10.0, (0.7, 2.5), None, &mut s).is_none_or(|r| r.regularity < 0.75) {
                irregular += 1;
            }
        }
        assert!(irregular >= 15, "{irregular}");
    }
}
