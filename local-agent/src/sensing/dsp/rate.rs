//! Sample-rate tracking from arrival times.
//!
//! ESP32 nodes do not send at a fixed rate (beacons ~10 Hz, pings 13–180 Hz, with gaps and
//! jitter), and estimates built on an assumed rate are wrong (RuView read ~45 bpm for 87 because
//! it assumed 10 Hz). The tracker therefore measures the rate per stream as an EMA of the
//! inter-arrival time, robust to jitter, dropped packets, gaps and clocks going backwards.

/// What one arrival time meant to the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The first timestamp of the stream (or the first after a reset).
    First,
    /// A regular arrival; the rate estimate was updated.
    Regular,
    /// The stream paused for much longer than its period; the EMA was left alone.
    Gap,
    /// The timestamp is slightly earlier than the previous one (reordering): drop the frame.
    Reordered,
    /// The clock jumped back far (node reboot): the stream restarts from this timestamp.
    ClockReset,
}

/// EMA inter-arrival tracker for one (node, layout) stream.
#[derive(Debug, Clone)]
pub struct RateTracker {
    last_t: Option<f64>,
    ema_dt: Option<f64>,
    warmup: Vec<f64>,
    consecutive_gaps: u32,
    derived_for: Option<f64>,
}

/// Inter-arrival samples whose median seeds the EMA (a median ignores the odd burst or gap).
const WARMUP: usize = 9;
/// EMA weight per arrival: with ±30% jitter the rate estimate wobbles by ~1%.
const ALPHA: f64 = 0.01;
/// An interval longer than this many periods is a gap, not a rate change.
const GAP_FACTOR: f64 = 4.0;
/// Backwards steps shorter than this are reordering; longer ones are a clock reset.
const REORDER_S: f64 = 1.0;
/// Relative change that makes rate-derived windows stale.
pub const REDERIVE_CHANGE: f64 = 0.08;

impl Default for RateTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl RateTracker {
    pub fn new() -> Self {
        Self {
            last_t: None,
            ema_dt: None,
            warmup: Vec::with_capacity(WARMUP),
            consecutive_gaps: 0,
            derived_for: None,
        }
    }

    /// Feeds one arrival time (seconds). Non-finite times are reported as `Reordered` (dropped).
    pub fn observe(&mut self, t: f64) -> Arrival {
        if !t.is_finite() {
            return Arrival::Reordered;
        }
        let Some(last) = self.last_t else {
            self.last_t = Some(t);
            return Arrival::First;
        };
        let dt = t - last;
        if dt < 0.0 {
            if -dt < REORDER_S {
                return Arrival::Reordered;
            }
            self.last_t = Some(t);
            return Arrival::ClockReset;
        }
        self.last_t = Some(t);
        if dt == 0.0 {
            // Same timestamp (batched delivery): counts as an arrival at an unknown spacing.
            return Arrival::Regular;
        }
        match self.ema_dt {
            None => {
                self.warmup.push(dt);
                if self.warmup.len() >= WARMUP {
                    let mut w = self.warmup.clone();
                    w.sort_by(f64::total_cmp);
                    self.ema_dt = Some(w[w.len() / 2]);
                    self.warmup.clear();
                }
                Arrival::Regular
            }
            Some(ema) => {
                if dt > GAP_FACTOR * ema && dt > 0.05 {
                    self.consecutive_gaps += 1;
                    // Several "gaps" in a row are a genuine slow-down: re-seed the estimate.
                    if self.consecutive_gaps >= 5 {
                        self.ema_dt = None;
                        self.warmup.clear();
                        self.consecutive_gaps = 0;
                    }
                    return Arrival::Gap;
                }
                self.consecutive_gaps = 0;
                // Clamp single intervals so one burst cannot swing the estimate.
                let d = dt.clamp(0.25 * ema, GAP_FACTOR * ema);
                self.ema_dt = Some(ema + ALPHA * (d - ema));
                Arrival::Regular
            }
        }
    }

    /// The measured rate, Hz, once enough arrivals were seen.
    pub fn rate_hz(&self) -> Option<f64> {
        self.ema_dt.filter(|d| *d > 0.0).map(|d| 1.0 / d)
    }

    /// The measured period, seconds.
    pub fn period_s(&self) -> Option<f64> {
        self.ema_dt
    }

    /// Returns the new rate once when it moved more than 8% from the rate the caller last derived
    /// its windows for (or when the first estimate appears); `None` otherwise.
    pub fn take_rederive(&mut self) -> Option<f64> {
        let rate = self.rate_hz()?;
        match self.derived_for {
            Some(old) if ((rate - old) / old).abs() <= REDERIVE_CHANGE => None,
            _ => {
                self.derived_for = Some(rate);
                Some(rate)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn feed(tr: &mut RateTracker, rate: f64, n: usize, jitter: f64, t0: f64, seed: u64) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut t = t0;
        for i in 0..n {
            let j = if jitter > 0.0 {
                rng.random_range(-jitter..jitter) / rate
            } else {
                0.0
            };
            tr.observe(t0 + i as f64 / rate + j);
            t = t0 + i as f64 / rate;
        }
        t
    }

    #[test]
    fn measures_rate_with_jitter() {
        for rate in [10.0, 20.0, 50.0, 100.0, 143.0] {
            let mut tr = RateTracker::new();
            feed(&mut tr, rate, 3000, 0.3, 0.0, 7);
            let got = tr.rate_hz().unwrap_or(0.0);
            assert!(
                (got / rate - 1.0).abs() < 0.03,
                "rate {rate}: measured {got}"
            );
        }
    }

    #[test]
    fn gaps_and_reordering_do_not_bias_the_rate() {
        let mut tr = RateTracker::new();
        let t = feed(&mut tr, 50.0, 500, 0.0, 0.0, 1);
        assert_eq!(tr.observe(t + 10.0), Arrival::Gap);
        assert_eq!(tr.observe(t + 9.995), Arrival::Reordered);
        feed(&mut tr, 50.0, 500, 0.0, t + 10.02, 1);
        let got = tr.rate_hz().unwrap_or(0.0);
        assert!((got - 50.0).abs() < 0.5, "{got}");
        assert_eq!(tr.observe(0.0), Arrival::ClockReset);
        assert_eq!(tr.observe(f64::NAN), Arrival::Reordered);
    }

    #[test]
    fn follows_a_real_rate_change_and_asks_to_rederive() {
        let mut tr = RateTracker::new();
        let t = feed(&mut tr, 100.0, 1000, 0.1, 0.0, 2);
        assert!(tr.take_rederive().is_some());
        assert!(tr.take_rederive().is_none());
        feed(&mut tr, 20.0, 1000, 0.1, t + 0.05, 3);
        let got = tr.rate_hz().unwrap_or(0.0);
        assert!((got / 20.0 - 1.0).abs() < 0.05, "{got}");
        assert!(tr.take_rederive().is_some());
    }
}
