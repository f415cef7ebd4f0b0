//! Hampel outlier filter (window 7).
//!
//! ESP32 CSI carries isolated spikes (AGC steps, corrupted packets) that would dominate a spectrum
//! or a motion average. A Hampel filter replaces a sample that lies beyond k·1.4826·MAD from the
//! median of its window by that median, leaving ordinary samples untouched.

/// Window length used throughout (the ESPectre choice).
pub const WINDOW: usize = 7;
/// Outlier threshold in robust standard deviations.
pub const K: f32 = 3.0;

fn median7(buf: &mut [f32]) -> f32 {
    buf.sort_unstable_by(f32::total_cmp);
    buf[buf.len() / 2]
}

/// Filters `x` in place with a centred window of `WINDOW` samples (shrunk at the ends).
pub fn hampel_in_place(x: &mut [f32], scratch: &mut Vec<f32>) {
    let n = x.len();
    if n < 3 {
        return;
    }
    let half = WINDOW / 2;
    scratch.clear();
    scratch.extend_from_slice(x);
    let mut w = [0.0f32; WINDOW];
    let mut d = [0.0f32; WINDOW];
    for i in 0..n {
        let lo = i.saturating_sub(half);
        let hi = (i + half + 1).min(n);
        let len = hi - lo;
        w[..len].copy_from_slice(&scratch[lo..hi]);
        let med = median7(&mut w[..len]);
        for j in 0..len {
            d[j] = (scratch[lo + j] - med).abs();
        }
        let mad = median7(&mut d[..len]);
        if (scratch[i] - med).abs() > K * 1.4826 * mad {
            x[i] = med;
        }
    }
}

/// Causal streaming variant: judges each new sample against the previous `WINDOW - 1` samples.
#[derive(Debug, Clone, Default)]
pub struct HampelStream {
    buf: [f32; WINDOW],
    len: usize,
    pos: usize,
}

impl HampelStream {
    /// Returns the sample, or the window median if the sample is an outlier.
    pub fn filter(&mut self, v: f32) -> f32 {
        if !v.is_finite() {
            return self.median().unwrap_or(0.0);
        }
        self.buf[self.pos] = v;
        self.pos = (self.pos + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
        if self.len < WINDOW {
            return v;
        }
        let mut w = self.buf;
        let med = median7(&mut w);
        let mut d = [0.0f32; WINDOW];
        for (di, wi) in d.iter_mut().zip(self.buf.iter()) {
            *di = (wi - med).abs();
        }
        let mad = median7(&mut d);
        // The raw value stays in the window: a lasting level change (someone starts moving) takes
        // over the median after four samples instead of being suppressed forever.
        if (v - med).abs() > K * 1.4826 * mad {
            med
        } else {
            v
        }
    }

    fn median(&self) -> Option<f32> {
        if self.len == 0 {
            return None;
        }
        let mut w = self.buf;
        Some(median7(&mut w[..self.len]))
    }

    pub fn reset(&mut self) {
        self.len = 0;
        self.pos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_isolated_spikes_and_keeps_a_sine() {
        let mut x: Vec<f32> = (0..200).map(|i| (i as f32 * 0.1).sin()).collect();
        let clean = x.clone();
        x[50] = 40.0;
        x[120] = -30.0;
        let mut s = Vec::new();
        hampel_in_place(&mut x, &mut s);
        for (a, b) in x.iter().zip(clean.iter()) {
            assert!((a - b).abs() < 0.25, "{a} vs {b}");
        }
    }

    #[test]
    fn stream_replaces_spike() {
        let mut h = HampelStream::default();
        let mut out = Vec::new();
        for i in 0..50 {
            let v = if i == 30 {
                100.0
            } else {
                1.0 + 0.01 * (i % 3) as f32
            };
            out.push(h.filter(v));
        }
        assert!(out[30] < 2.0);
        assert!(h.filter(f32::NAN).is_finite());
    }
}
