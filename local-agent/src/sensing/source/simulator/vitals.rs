//! Chest motion: irregular breathing and a heartbeat, as displacements in metres.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::f64::consts::{PI, TAU};

/// One exact step of an Ornstein–Uhlenbeck process with unit stationary variance, so the
/// statistics do not depend on the frame rate.
pub(super) fn ou_step(x: f64, dt: f64, tau_s: f64, rng: &mut ChaCha8Rng) -> f64 {
    let decay = (-dt / tau_s).exp();
    let noise: f64 = rng.sample(StandardNormal);
    x * decay + (1.0 - decay * decay).sqrt() * noise
}

/// Breathing: a phase oscillator whose rate wanders (±3 %, 15 s memory) and whose depth varies
/// breath to breath (±12 %, with an occasional sigh twice as deep); inhalation takes 40 % of the
/// cycle, so the waveform has harmonics like a real respiration belt trace.
#[derive(Debug, Clone)]
pub(super) struct Breathing {
    /// Phase in cycles, in `[0, 1)`.
    phase: f64,
    /// Rate deviation, OU state with unit variance.
    rate_wander: f64,
    /// Depth of the current breath relative to the configured depth.
    depth: f64,
}

const BREATH_RATE_WANDER: f64 = 0.03;
const BREATH_INHALE_FRACTION: f64 = 0.4;

impl Breathing {
    pub(super) fn new(rng: &mut ChaCha8Rng) -> Self {
        Self {
            phase: rng.random(),
            rate_wander: rng.sample(StandardNormal),
            depth: 1.0,
        }
    }

    /// The actual rate at this instant, breaths per minute.
    pub(super) fn rate_bpm(&self, base_bpm: f64) -> f64 {
        base_bpm * (1.0 + BREATH_RATE_WANDER * self.rate_wander)
    }

    /// Phase in cycles, for coupling the heart's respiratory sinus arrhythmia.
    pub(super) fn phase(&self) -> f64 {
        self.phase
    }

    /// Advances by `dt` at `base_bpm` and returns the chest displacement for a breath
    /// `depth_m` deep peak to peak.
    pub(super) fn step(
        &mut self,
        dt: f64,
        base_bpm: f64,
        depth_m: f64,
        rng: &mut ChaCha8Rng,
    ) -> f64 {
        self.rate_wander = ou_step(self.rate_wander, dt, 15.0, rng);
        self.phase += dt * self.rate_bpm(base_bpm) / 60.0;
        if self.phase >= 1.0 {
            self.phase = self.phase.fract();
            let sigh = rng.random::<f64>() < 0.03;
            let variation: f64 = rng.sample(StandardNormal);
            self.depth = (1.0 + 0.12 * variation).clamp(0.6, 1.4) * if sigh { 2.0 } else { 1.0 };
        }
        // Rises during inhalation and falls during the longer exhalation; zero at the cycle
        // boundary, where the depth changes, so the trace stays continuous.
        let shape = if self.phase < BREATH_INHALE_FRACTION {
            0.5 * (1.0 - (PI * self.phase / BREATH_INHALE_FRACTION).cos())
        } else {
            let u = (self.phase - BREATH_INHALE_FRACTION) / (1.0 - BREATH_INHALE_FRACTION);
            0.5 * (1.0 + (PI * u).cos())
        };
        depth_m * (self.depth * shape - 0.5)
    }
}

/// One beat's chest displacement over its cycle (phase 0..1): a sharp systolic pulse and a
/// smaller recoil.
pub(super) fn pulse_shape(phase: f64) -> f64 {
    (-((phase - 0.2) / 0.07).powi(2)).exp() - 0.35 * (-((phase - 0.45) / 0.1).powi(2)).exp()
}

/// Heartbeat: a sharp systolic pulse per beat (rich in harmonics, like a ballistocardiogram),
/// with slow rate variability (±2 %) and respiratory sinus arrhythmia (±3 % with the breath).
#[derive(Debug, Clone)]
pub(super) struct Heartbeat {
    phase: f64,
    rate_wander: f64,
}

const HEART_RATE_WANDER: f64 = 0.02;
const HEART_RSA: f64 = 0.03;

impl Heartbeat {
    pub(super) fn new(rng: &mut ChaCha8Rng) -> Self {
        Self {
            phase: rng.random(),
            rate_wander: rng.sample(StandardNormal),
        }
    }

    /// The rate without the within-breath arrhythmia, beats per minute.
    pub(super) fn rate_bpm(&self, base_bpm: f64) -> f64 {
        base_bpm * (1.0 + HEART_RATE_WANDER * self.rate_wander)
    }

    pub(super) fn step(
        &mut self,
        dt: f64,
        base_bpm: f64,
        breath_phase: f64,
        depth_m: f64,
        rng: &mut ChaCha8Rng,
    ) -> f64 {
        self.rate_wander = ou_step(self.rate_wander, dt, 20.0, rng);
        let rsa = 1.0 + HEART_RSA * (TAU * breath_phase).sin();
        self.phase = (self.phase + dt * self.rate_bpm(base_bpm) * rsa / 60.0).fract();
        depth_m * pulse_shape(self.phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn breathing_keeps_its_mean_rate_and_depth() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut b = Breathing::new(&mut rng);
        let dt = 0.01;
        let mut rates = 0.0;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let n = 60_000;
        for _ in 0..n {
            let x = b.step(dt, 15.0, 0.006, &mut rng);
            lo = lo.min(x);
            hi = hi.max(x);
            rates += b.rate_bpm(15.0);
        }
        let mean = rates / f64::from(n);
        assert!((mean - 15.0).abs() < 0.5, "{mean}");
        assert!(hi - lo > 0.005 && hi - lo < 0.02, "{lo} {hi}");
    }
}
