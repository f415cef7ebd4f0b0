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
    if let Ok(w) = <&mut [f32; WINDOW]>::try_from(&mut *buf) {
        return median_of_7(w);
    }
    buf.sort_unstable_by(f32::total_cmp);
    buf[buf.len() / 2]
}

/// An optimal sorting network for 7 (16 compare-exchanges).
const SORT7: [(usize, usize); 16] = [
    (0, 6),
    (2, 3),
    (4, 5),
    (0, 2),
    (1, 4),
    (3, 6),
    (0, 1),
    (2, 5),
    (3, 4),
    (1, 2),
    (4, 6),
    (2, 3),
    (4, 5),
    (1, 2),
    (3, 4),
    (5, 6),
];

/// `f32` bits mapped so that signed integer order is `f32::total_cmp` order (an involution).
#[inline]
fn order_key(v: f32) -> i32 {
    let b = v.to_bits() as i32;
    b ^ (((b >> 31) as u32) >> 1) as i32
}

#[inline]
fn from_order_key(k: i32) -> f32 {
    f32::from_bits((k ^ (((k >> 31) as u32) >> 1) as i32) as u32)
}

/// The middle of 7 in `total_cmp` order, the element a full sort puts there: a branch-free
/// 16-exchange sorting network on the integer keys. A Hampel pass takes two medians per sample,
/// and the sort's data-dependent branches made it a tenth of a vitals analysis.
#[inline]
fn median_of_7(w: &[f32; WINDOW]) -> f32 {
    let mut k = w.map(order_key);
    sort7(&mut k);
    from_order_key(k[WINDOW / 2])
}

#[inline]
fn sort7(k: &mut [i32; WINDOW]) {
    for (a, b) in SORT7 {
        let (x, y) = (k[a], k[b]);
        k[a] = x.min(y);
        k[b] = x.max(y);
    }
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
    fn sorting_network_sorts_every_input() {
        // 0-1 principle: a network that sorts every 0/1 input sorts every input.
        for bits in 0u32..(1 << WINDOW) {
            let mut k: [i32; WINDOW] = std::array::from_fn(|i| ((bits >> i) & 1) as i32);
            sort7(&mut k);
            assert!(k.windows(2).all(|p| p[0] <= p[1]), "{bits:07b} -> {k:?}");
        }
    }

    #[test]
    fn median_of_7_is_the_sorted_middle_bit_for_bit() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MIN_POSITIVE,
            1e-42,
            -3.5,
        ];
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for round in 0..20_000 {
            let w: [f32; WINDOW] = std::array::from_fn(|_| {
                let r = next();
                if round % 2 == 0 {
                    specials[(r % specials.len() as u64) as usize]
                } else {
                    f32::from_bits(r as u32)
                }
            });
            let mut sorted = w;
            sorted.sort_unstable_by(f32::total_cmp);
            assert_eq!(median_of_7(&w).to_bits(), sorted[3].to_bits(), "{w:?}");
        }
    }

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
