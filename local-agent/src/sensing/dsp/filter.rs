//! Band-pass filtering (two cascaded RBJ biquads from the `biquad` crate).
//!
//! Used where a time-domain band-limited signal is needed, e.g. to compare the sign of the
//! breathing component on two subcarriers without slow drift dominating the correlation.

use biquad::{Biquad, Coefficients, DirectForm2Transposed, Q_BUTTERWORTH_F32, ToHertz, Type};

/// Second-order high-pass at `lo` followed by second-order low-pass at `hi`.
#[derive(Debug, Clone, Copy)]
pub struct BandPass {
    hp: DirectForm2Transposed<f32>,
    lp: DirectForm2Transposed<f32>,
}

impl BandPass {
    /// `None` when the band does not fit below Nyquist or is empty.
    pub fn new(fs: f32, lo: f32, hi: f32) -> Option<Self> {
        if !(fs > 0.0 && lo > 0.0 && hi > lo && hi < fs / 2.0) {
            return None;
        }
        let hp =
            Coefficients::<f32>::from_params(Type::HighPass, fs.hz(), lo.hz(), Q_BUTTERWORTH_F32)
                .ok()?;
        let lp =
            Coefficients::<f32>::from_params(Type::LowPass, fs.hz(), hi.hz(), Q_BUTTERWORTH_F32)
                .ok()?;
        Some(Self {
            hp: DirectForm2Transposed::<f32>::new(hp),
            lp: DirectForm2Transposed::<f32>::new(lp),
        })
    }

    pub fn run(&mut self, x: f32) -> f32 {
        self.lp.run(self.hp.run(x))
    }

    /// Filters a whole series from a zero state into `out`, starting the filter on the first
    /// sample's level so the step at the start does not ring through the band.
    pub fn filter_series(mut self, x: &[f32], out: &mut Vec<f32>) {
        out.clear();
        let first = x.first().copied().unwrap_or(0.0);
        out.extend(x.iter().map(|v| self.run(v - first)));
    }
}

/// Zero-phase 8th-order high-pass (two Butterworth biquads, run forwards then backwards).
///
/// A quadratic detrend over a 30 s window is a gentle high-pass whose edge turns slow drift
/// (red noise) into a tone-like hump at 0.13–0.16 Hz, right in the breathing band. A sharp
/// high-pass at 0.07 Hz removes the drift instead, so what remains of it slopes down across the
/// band (a band-edge maximum, rejected) rather than peaking inside it.
pub fn highpass_zero_phase(x: &mut [f32], fs: f32, fc: f32) {
    if x.len() < 8 || !(fs > 0.0 && fc > 0.0 && fc < fs / 2.0) {
        return;
    }
    let Ok(c) =
        Coefficients::<f32>::from_params(Type::HighPass, fs.hz(), fc.hz(), Q_BUTTERWORTH_F32)
    else {
        return;
    };
    // Start from zero level: remove the mean and slope so the filters do not ring on a step.
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    x.iter_mut().for_each(|v| *v -= mean);
    for _pass in 0..2 {
        let mut a = DirectForm2Transposed::<f32>::new(c);
        let mut b = DirectForm2Transposed::<f32>::new(c);
        for v in x.iter_mut() {
            *v = b.run(a.run(*v));
        }
        x.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn passes_the_band_and_rejects_drift_and_noise() {
        let fs = 10.0;
        let n = 600;
        let tone = |f: f32| -> Vec<f32> {
            (0..n)
                .map(|i| (2.0 * std::f32::consts::PI * f * i as f32 / fs).sin())
                .collect()
        };
        let mut out = Vec::new();
        let Some(bp) = BandPass::new(fs, 0.1, 0.6) else {
            panic!("valid band")
        };
        bp.filter_series(&tone(0.25), &mut out);
        assert!(rms(&out[200..]) > 0.6);
        bp.filter_series(&tone(0.01), &mut out);
        assert!(rms(&out[200..]) < 0.05);
        bp.filter_series(&tone(3.0), &mut out);
        assert!(rms(&out[200..]) < 0.1);
        assert!(BandPass::new(10.0, 0.1, 6.0).is_none());
    }
}
