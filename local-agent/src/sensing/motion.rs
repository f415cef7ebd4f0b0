//! Motion level of one link.
//!
//! m = mean_k |ΔA_k| / mean_k A_k on gain-normalised amplitudes: a person moving changes many
//! subcarriers, an empty room only adds noise. Raw per-packet values do not separate quiet from
//! moving on the unlocked ESP32 (both ~0.2), so amplitudes are averaged over ~0.1 s blocks
//! (10 packets at 100 pps; the block length follows the measured rate) before differencing, and m
//! is Hampel-filtered and smoothed by an EMA (α = 0.15 per block) before any threshold is applied;
//! the threshold itself is per link (see `presence`).

use super::dsp::hampel::HampelStream;

/// Seconds of packets averaged into one motion block.
pub const BLOCK_S: f64 = 0.1;
/// EMA weight per block.
pub const EMA_ALPHA: f32 = 0.15;

#[derive(Debug, Clone)]
pub struct MotionDetector {
    prev: Vec<f32>,
    sum: Vec<f32>,
    hampel: HampelStream,
    block_len: usize,
    block_n: usize,
    ema: Option<f32>,
    /// Largest block mean of the packet-to-packet change since the last
    /// [`MotionDetector::take_peak`].
    peak: f32,
    last_packet: Vec<f32>,
    fast_sum: f32,
    fast_n: u32,
}

impl Default for MotionDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl MotionDetector {
    pub fn new() -> Self {
        Self {
            prev: Vec::new(),
            sum: Vec::new(),
            hampel: HampelStream::default(),
            block_len: 1,
            block_n: 0,
            ema: None,
            peak: 0.0,
            last_packet: Vec::new(),
            fast_sum: 0.0,
            fast_n: 0,
        }
    }

    /// Re-derives the block length from a newly measured packet rate.
    pub fn set_rate(&mut self, rate_hz: f64) {
        if rate_hz.is_finite() && rate_hz > 0.0 {
            self.block_len = ((rate_hz * BLOCK_S).round() as usize).clamp(1, 1000);
        }
    }

    /// Forgets the previous block (after a gap the difference would be meaningless).
    pub fn break_continuity(&mut self) {
        self.prev.clear();
        self.last_packet.clear();
        self.fast_sum = 0.0;
        self.fast_n = 0;
        self.block_n = 0;
        self.sum.iter_mut().for_each(|s| *s = 0.0);
    }

    /// Feeds one packet of gain-normalised amplitudes (0 marks an invalid subcarrier).
    ///
    /// Amplitudes are averaged over a block of packets first and m is taken between consecutive
    /// block means: averaging N packets cuts the per-packet noise floor by √N, which is what
    /// separates a quiet room from a moving person (0.03 → ~0.008 on the ESPectre captures).
    pub fn push(&mut self, amp: &[f32]) {
        if self.sum.len() != amp.len() {
            self.sum.clear();
            self.sum.resize(amp.len(), 0.0);
            self.prev.clear();
            self.block_n = 0;
        }
        for (s, a) in self.sum.iter_mut().zip(amp) {
            *s += *a;
        }
        if self.last_packet.len() == amp.len() {
            let mut num = 0.0f32;
            let mut den = 0.0f32;
            for (p, a) in self.last_packet.iter().zip(amp) {
                if *a > 0.0 && *p > 0.0 {
                    num += (a - p).abs();
                    den += a;
                }
            }
            if den > 0.0 && num.is_finite() {
                self.fast_sum += num / den;
                self.fast_n += 1;
            }
        }
        self.last_packet.clear();
        self.last_packet.extend_from_slice(amp);
        self.block_n += 1;
        if self.block_n < self.block_len {
            return;
        }
        let inv = 1.0 / self.block_n as f32;
        self.block_n = 0;
        if self.prev.len() != self.sum.len() {
            self.prev.clear();
            self.prev.extend(self.sum.iter().map(|s| s * inv));
            self.sum.iter_mut().for_each(|s| *s = 0.0);
            return;
        }
        let mut num = 0.0f32;
        let mut den = 0.0f32;
        for (s, p) in self.sum.iter_mut().zip(self.prev.iter_mut()) {
            let a = *s * inv;
            if a > 0.0 && *p > 0.0 {
                num += (a - *p).abs();
                den += a;
            }
            *p = a;
            *s = 0.0;
        }
        if den <= 0.0 || !num.is_finite() {
            return;
        }
        if self.fast_n > 0 {
            self.peak = self.peak.max(self.fast_sum / self.fast_n as f32);
        }
        self.fast_sum = 0.0;
        self.fast_n = 0;
        let m = self.hampel.filter(num / den);
        self.ema = Some(match self.ema {
            None => m,
            Some(e) => e + EMA_ALPHA * (m - e),
        });
    }

    /// The largest unsmoothed block value since the previous call, then forgets it. The EMA and
    /// Hampel filter that make `level` robust also flatten a 0.6 s impact into the walking that
    /// precedes it; the fall monitor needs the burst itself.
    pub fn take_peak(&mut self) -> f32 {
        std::mem::take(&mut self.peak)
    }

    /// The smoothed motion level, once a block completed.
    pub fn level(&self) -> Option<f32> {
        self.ema
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn moving_reads_far_above_quiet() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let Ok(noise) = Normal::new(0.0f32, 0.01) else {
            return;
        };
        let mut md = MotionDetector::new();
        md.set_rate(100.0);
        let mut frame = |md: &mut MotionDetector, t: f32, moving: bool| {
            let a: Vec<f32> = (0..64)
                .map(|k| {
                    let m = if moving {
                        0.2 * (t * 3.0 + k as f32 * 0.3).sin()
                    } else {
                        0.0
                    };
                    (1.0 + m + noise.sample(&mut rng)).max(0.01)
                })
                .collect();
            md.push(&a);
        };
        for i in 0..500 {
            frame(&mut md, i as f32 / 100.0, false);
        }
        let quiet = md.level().unwrap_or(1.0);
        for i in 500..1000 {
            frame(&mut md, i as f32 / 100.0, true);
        }
        let moving = md.level().unwrap_or(0.0);
        assert!(moving > 2.0 * quiet, "quiet {quiet} moving {moving}");
    }
}
