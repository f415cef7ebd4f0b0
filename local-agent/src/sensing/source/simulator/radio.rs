//! What the ESP32 receiver does to the channel: thermal noise, automatic gain control, random
//! per-packet phase offsets and int8 quantisation.

use super::vitals::ou_step;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Automatic gain control of the receiver.
///
/// An unlocked ESP32 re-decides its gain from packet to packet: the CSI level jumps by 15–30 %
/// every few seconds and occasionally for a single packet (level relative std ≈ 0.15 in the
/// ESPectre ESP32 captures). A gain-locked C3/C5 only shows ≈ 3 % jitter.
#[derive(Debug, Clone, PartialEq)]
pub struct AgcModel {
    /// Mean rate of persistent gain steps (Poisson), per second.
    pub step_rate_hz: f64,
    /// Smallest relative size of a step or glitch.
    pub step_min: f64,
    /// Largest relative size of a step or glitch.
    pub step_max: f64,
    /// Chance that one packet alone is received with a gain error of a step's size.
    pub glitch_probability: f64,
    /// Relative standard deviation of the per-packet gain jitter.
    pub jitter: f64,
}

impl Default for AgcModel {
    fn default() -> Self {
        Self {
            step_rate_hz: 0.15,
            step_min: 0.15,
            step_max: 0.30,
            glitch_probability: 0.01,
            jitter: 0.01,
        }
    }
}

impl AgcModel {
    /// A gain-locked receiver (ESP32-C3/C5 with the AGC frozen).
    pub fn locked() -> Self {
        Self {
            step_rate_hz: 0.0,
            glitch_probability: 0.0,
            jitter: 0.025,
            ..Self::default()
        }
    }

    /// No gain changes at all, for isolating other effects in tests.
    pub fn off() -> Self {
        Self {
            step_rate_hz: 0.0,
            glitch_probability: 0.0,
            jitter: 0.0,
            ..Self::default()
        }
    }
}

/// The gain state between packets.
#[derive(Debug, Clone)]
pub(super) struct Agc {
    level: f64,
}

/// Bounds of the persistent gain level: the AGC never drifts far from its set point.
const LEVEL_MIN: f64 = 0.65;
const LEVEL_MAX: f64 = 1.45;

impl Agc {
    pub(super) fn new() -> Self {
        Self { level: 1.0 }
    }

    /// The gain applied to the next packet, `dt` seconds after the previous one.
    pub(super) fn next_gain(&mut self, model: &AgcModel, dt: f64, rng: &mut ChaCha8Rng) -> f64 {
        let step_size = |rng: &mut ChaCha8Rng| {
            if model.step_max > model.step_min {
                rng.random_range(model.step_min..model.step_max)
            } else {
                model.step_min
            }
        };
        let step_probability = 1.0 - (-model.step_rate_hz.max(0.0) * dt.max(0.0)).exp();
        if rng.random::<f64>() < step_probability {
            let size = step_size(rng);
            // Steps pull back towards the set point more often than away from it.
            let up_probability = (0.5 - 0.8 * (self.level - 1.0)).clamp(0.1, 0.9);
            let factor = if rng.random::<f64>() < up_probability {
                1.0 + size
            } else {
                1.0 / (1.0 + size)
            };
            self.level = (self.level * factor).clamp(LEVEL_MIN, LEVEL_MAX);
        }
        let mut gain = self.level;
        if rng.random::<f64>() < model.glitch_probability {
            let size = step_size(rng);
            gain *= if rng.random::<bool>() {
                1.0 + size
            } else {
                1.0 - size
            };
        }
        let jitter: f64 = rng.sample(StandardNormal);
        gain * (1.0 + model.jitter * jitter).max(0.1)
    }
}

/// A slow complex random walk (Ornstein–Uhlenbeck, 60 s memory) scaling the creeping reflection.
#[derive(Debug, Clone)]
pub(super) struct Creep {
    re: f64,
    im: f64,
}

impl Creep {
    pub(super) fn new(rng: &mut ChaCha8Rng) -> Self {
        Self {
            re: rng.sample(StandardNormal),
            im: rng.sample(StandardNormal),
        }
    }

    pub(super) fn step(&mut self, dt: f64, rng: &mut ChaCha8Rng) -> num_complex::Complex64 {
        self.re = ou_step(self.re, dt, 60.0, rng);
        self.im = ou_step(self.im, dt, 60.0, rng);
        num_complex::Complex64::new(self.re, self.im)
    }
}

/// Rounds to the int8 grid of the ESP32 buffer, saturating like the radio does.
pub(super) fn quantise(x: f64) -> f32 {
    x.round().clamp(-128.0, 127.0) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn unlocked_agc_level_varies_like_an_esp32() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut agc = Agc::new();
        let model = AgcModel::default();
        let gains: Vec<f64> = (0..60_000)
            .map(|_| agc.next_gain(&model, 0.01, &mut rng))
            .collect();
        let mean = gains.iter().sum::<f64>() / gains.len() as f64;
        let var = gains.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gains.len() as f64;
        let rel_std = var.sqrt() / mean;
        assert!(rel_std > 0.08 && rel_std < 0.25, "{rel_std}");
    }

    #[test]
    fn quantise_saturates() {
        assert_eq!(quantise(300.0), 127.0);
        assert_eq!(quantise(-300.0), -128.0);
        assert_eq!(quantise(2.5), 3.0);
    }
}
