//! A cue that keeps a still person present without any motion: breathing-band energy on the
//! link's best series (the SNR of the combined breathing window's peak, when the series move
//! together), held against what the empty room showed while it was calibrated.
//!
//! Presence from motion lapses as soon as someone settles, and presence from an accepted
//! breathing rate lapses whenever one 30 s window misses a gate (a sigh, a shift of posture, an
//! AGC step). Between those, a seated person's chest still fills the breathing band of the
//! series that carry it: the combined window's breathing-band peak stays well above the band's
//! floor and the series move together, even when the concentration, persistence or rate-spread
//! gates that a *rate* needs fail. So:
//!
//! - **Armed** by an accepted breathing rate, or by the cue itself while presence already holds
//!   for another reason (someone just walked in and sat down: the motion bridge), never by
//!   energy alone: whatever an empty room does, this cue cannot make it occupied by itself.
//! - **Held** while the cue ([`crate::sensing::vitals::VitalsEstimator::breath_cue`]) stays above
//!   `max(HOLD_FLOOR, EMPTY_MARGIN × the empty room's P95)`; the empty-room level is learned while
//!   the link calibrates and nothing breathes.
//! - **Released** when the cue stays below for [`RELEASE_S`] (hysteresis: one low reading does not
//!   drop a person), when motion starts (the motion path owns presence then; the cue re-arms on
//!   the next accepted breath), or on recalibration.
//!
//! It feeds presence through `BreathEvidence::still_cue`; the presence tracker treats it like an
//! accepted breath for its debounce.

/// Least cue (breathing-band peak SNR) that holds presence, whatever the empty room showed.
pub const HOLD_FLOOR: f32 = 6.0;
/// The hold threshold is at least this multiple of the empty room's P95 cue.
pub const EMPTY_MARGIN: f32 = 3.0;
/// Seconds the cue may stay below the threshold before the person is released.
pub const RELEASE_S: f64 = 12.0;
/// Grid period the cue is fed at, seconds.
const TICK_S: f64 = 0.1;
/// Empty-room samples kept for the reference.
const MAX_SAMPLES: usize = 4096;

#[derive(Debug, Clone, Default)]
pub struct StillCue {
    armed: bool,
    below_s: f64,
    empty_samples: Vec<f32>,
    empty_p95: Option<f32>,
    was_calibrating: bool,
    last_cue: Option<f32>,
}

impl StillCue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the empty-room reference and any held person.
    pub fn recalibrate(&mut self) {
        *self = Self::default();
    }

    /// The threshold the cue must stay above.
    pub fn threshold(&self) -> f32 {
        HOLD_FLOOR.max(EMPTY_MARGIN * self.empty_p95.unwrap_or(0.0))
    }

    /// The latest cue value (None while the link is moving or warming up).
    pub fn level(&self) -> Option<f32> {
        self.last_cue
    }

    /// One grid tick. `cue` is the vitals estimator's breathing-band cue, `moving` the link's
    /// motion state, `breath_accepted` whether a breathing rate is accepted now, `calibrating`
    /// whether the link is still learning its empty room. Returns whether a still person is
    /// held present by the cue.
    pub fn on_tick(
        &mut self,
        cue: Option<f32>,
        moving: bool,
        breath_accepted: bool,
        calibrating: bool,
        present: bool,
    ) -> bool {
        let cue = cue.filter(|c| c.is_finite());
        self.last_cue = cue;
        // Learn the empty room while the link calibrates on calm, breath-free data.
        if calibrating && !moving && !breath_accepted {
            if let Some(c) = cue
                && self.empty_samples.len() < MAX_SAMPLES
            {
                self.empty_samples.push(c);
            }
        } else if self.was_calibrating && !calibrating && self.empty_samples.len() >= 50 {
            let mut s = std::mem::take(&mut self.empty_samples);
            s.sort_by(f32::total_cmp);
            self.empty_p95 = Some(s[(s.len() - 1) * 95 / 100]);
        }
        if calibrating && breath_accepted {
            // A breathing person during calibration: what was collected is not an empty room.
            self.empty_samples.clear();
        }
        self.was_calibrating = calibrating;
        if moving {
            self.armed = false;
            self.below_s = 0.0;
            return false;
        }
        if breath_accepted {
            self.armed = true;
            self.below_s = 0.0;
            return true;
        }
        if !self.armed {
            if present && cue.is_some_and(|c| c >= self.threshold()) {
                self.armed = true;
                self.below_s = 0.0;
            }
            return self.armed;
        }
        match cue {
            Some(c) if c >= self.threshold() => self.below_s = 0.0,
            _ => self.below_s += TICK_S,
        }
        if self.below_s > RELEASE_S {
            self.armed = false;
            self.below_s = 0.0;
        }
        self.armed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_alone_never_arms_and_a_breath_does() {
        let mut c = StillCue::new();
        for _ in 0..1000 {
            assert!(!c.on_tick(Some(50.0), false, false, false, false));
        }
        assert!(c.on_tick(Some(50.0), false, true, false, false));
        // Held through a lapse of the breathing rate while the cue stays high.
        for _ in 0..3000 {
            assert!(c.on_tick(Some(9.0), false, false, false, true));
        }
        // Released after RELEASE_S below the threshold, not before.
        let mut ticks = 0;
        while c.on_tick(Some(1.0), false, false, false, true) {
            ticks += 1;
            assert!(ticks < 1000);
        }
        assert!(
            (f64::from(ticks) * TICK_S - RELEASE_S).abs() < 0.3,
            "{ticks}"
        );
        // Someone already present (walked in) is taken over by a strong cue.
        let mut c = StillCue::new();
        assert!(!c.on_tick(Some(3.0), false, false, false, true));
        assert!(c.on_tick(Some(9.0), false, false, false, true));
    }

    #[test]
    fn motion_disarms_and_the_empty_room_sets_the_threshold() {
        let mut c = StillCue::new();
        for i in 0..200 {
            c.on_tick(
                Some(0.3 + 0.001 * (i % 10) as f32),
                false,
                false,
                true,
                false,
            );
        }
        c.on_tick(Some(0.3), false, false, false, false);
        assert!(
            (c.threshold() - HOLD_FLOOR).abs() < 1e-6,
            "{}",
            c.threshold()
        );
        let mut c = StillCue::new();
        for i in 0..200 {
            c.on_tick(
                Some(3.0 + 0.01 * (i % 10) as f32),
                false,
                false,
                true,
                false,
            );
        }
        c.on_tick(Some(3.0), false, false, false, false);
        assert!(
            (c.threshold() - 3.0 * 3.09).abs() < 0.01,
            "{}",
            c.threshold()
        );
        assert!(c.on_tick(Some(20.0), false, true, false, false));
        assert!(!c.on_tick(Some(20.0), true, false, false, true));
        assert!(!c.on_tick(Some(20.0), false, false, false, false));
    }
}
