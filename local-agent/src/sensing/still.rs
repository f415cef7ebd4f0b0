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
//!   `max(HOLD_FLOOR, EMPTY_MARGIN × the empty room's P95)`. The empty-room level is learned
//!   while the link calibrates and nothing breathes, and, since calibration lasts a few seconds
//!   and a breathing window needs 24, mostly from the cue over the last ten minutes the room
//!   read empty and still ([`EMPTY_WINDOW`]): a room whose breathing band carries something
//!   breath-like with nobody in it (a curtain, a slow drift) raises its own bar. On the
//!   simulator's quiet rooms that read present at all (8 of seeds 17–56, after an empty room
//!   passed the breathing gates) it cut the ticks read present from 13,444 to 6,231; the price
//!   is that someone so faintly coupled that they read empty for minutes raises the bar for
//!   their own cue (tuning seeds 31–40 and 61–100: 92.7 % → 92.3 % of seated ticks present).
//! - **Released** when the cue stays below for [`RELEASE_S`] (hysteresis: one low reading does not
//!   drop a person), when motion starts (the motion path owns presence then; the cue re-arms on
//!   the next accepted breath), or on recalibration.
//! - **Taken back** after a release by a strong cue from series that move together ([`REARM_SNR`],
//!   [`REARM_COHERENCE`]), for [`REARM_S`] after the cue last held someone and only while nothing
//!   moved since: nobody leaves without moving. Without it, a person whose cue dipped for a
//!   window waited for three agreeing breathing windows (up to 20 s) to come back.
//!
//! It feeds presence through `BreathEvidence::still_cue`; the presence tracker treats it like an
//! accepted breath for its debounce.

use super::dsp::running::RunningQuantile;

/// Least cue (breathing-band peak SNR) that holds presence, whatever the empty room showed.
pub const HOLD_FLOOR: f32 = 6.0;
/// The hold threshold is at least this multiple of the empty room's P95 cue.
pub const EMPTY_MARGIN: f32 = 3.0;
/// Seconds the cue may stay below the threshold before the person is released.
pub const RELEASE_S: f64 = 20.0;
/// A person the cue released may be taken back by a strong, coherent cue alone for this long
/// after it last held them, provided nothing moved since: nobody leaves a room without moving,
/// so a still room in which someone was just held is far more likely to still hold them than to
/// have emptied.
pub const REARM_S: f64 = 120.0;
/// Least cue (breathing-band peak SNR) that takes a released person back...
pub const REARM_SNR: f32 = 20.0;
/// ...and least coherence of the selected series it must come with. An empty simulated room
/// reads 0.26–0.34 at its 95th percentile; a seated person's breath 0.5–1.0.
pub const REARM_COHERENCE: f32 = 0.5;
/// Grid period the cue is fed at, seconds.
const TICK_S: f64 = 0.1;
/// Empty-room samples kept for the reference.
const MAX_SAMPLES: usize = 4096;
/// Cue samples of the room read empty kept for the running reference (10 minutes of ticks).
pub const EMPTY_WINDOW: usize = 6000;
/// Samples between recomputations of the running reference's 95th percentile.
const EMPTY_EVERY: usize = 100;
/// Least samples before the running reference counts.
const EMPTY_MIN: usize = 600;

#[derive(Debug, Clone, Default)]
pub struct StillCue {
    armed: bool,
    below_s: f64,
    empty_samples: Vec<f32>,
    empty_p95: Option<f32>,
    was_calibrating: bool,
    last_cue: Option<f32>,
    /// Seconds since the cue last held someone, while nothing moved since (`None` otherwise).
    since_held_s: Option<f64>,
    /// 95th percentile of the cue over the last [`EMPTY_WINDOW`] ticks the room read empty and
    /// still, once it holds [`EMPTY_MIN`] of them.
    empty_running: EmptyLevel,
    /// The still bridge is holding the link ([`Self::note_bridge`]).
    bridging: bool,
}

/// The running reference's quantile, with the cue's window.
#[derive(Debug, Clone)]
struct EmptyLevel(RunningQuantile);

impl Default for EmptyLevel {
    fn default() -> Self {
        Self(RunningQuantile::new(
            EMPTY_WINDOW,
            EMPTY_MIN,
            EMPTY_EVERY,
            |n| (n - 1) * 95 / 100,
        ))
    }
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
        let reference = self
            .empty_p95
            .unwrap_or(0.0)
            .max(self.empty_running.0.value().unwrap_or(0.0));
        HOLD_FLOOR.max(EMPTY_MARGIN * reference)
    }

    /// Called before [`Self::on_tick`] with whether the still bridge is holding the link
    /// (someone moved less than a bridge ago). Presence then does not arm the cue; only an
    /// accepted breath does: after a walk-out the emptied room's
    /// breathing band, which has not read empty long enough to raise the cue's bar, armed it
    /// and held the room for minutes (one walk-out in ten). Someone who sat down arms it with
    /// their first accepted breath; a breath too weak to be accepted within the bridge is lost
    /// until they move (`presence::SEALED_AFTER_S`).
    pub fn note_bridge(&mut self, bridging: bool) {
        self.bridging = bridging;
    }

    /// The latest cue value (None while the link is moving or warming up).
    pub fn level(&self) -> Option<f32> {
        self.last_cue
    }

    /// One grid tick. `cue` is the vitals estimator's breathing-band cue and `coherence` the
    /// coherence behind it, `moving` the link's motion state, `breath_accepted` whether a
    /// breathing rate is accepted now, `calibrating` whether the link is still learning its empty
    /// room. Returns whether a still person is held present by the cue.
    pub fn on_tick(
        &mut self,
        cue: Option<f32>,
        coherence: Option<f32>,
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
        if !present
            && !moving
            && !calibrating
            && !breath_accepted
            && let Some(c) = cue
        {
            self.learn_empty(c);
        }
        if moving {
            self.armed = false;
            self.below_s = 0.0;
            self.since_held_s = None;
            return false;
        }
        if breath_accepted {
            self.armed = true;
            self.below_s = 0.0;
            self.since_held_s = Some(0.0);
            return true;
        }
        if !self.armed {
            let recent = self.since_held_s.is_some_and(|s| s <= REARM_S);
            let strong = cue.is_some_and(|c| c >= REARM_SNR.max(self.threshold()))
                && coherence.is_some_and(|c| c >= REARM_COHERENCE);
            if (present && !self.bridging && cue.is_some_and(|c| c >= self.threshold()))
                || (recent && strong)
            {
                self.armed = true;
                self.below_s = 0.0;
                self.since_held_s = Some(0.0);
            } else if let Some(s) = &mut self.since_held_s {
                *s += TICK_S;
            }
            return self.armed;
        }
        self.since_held_s = Some(0.0);
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

    /// One cue sample from a room read empty: the running reference follows what this room's
    /// breathing band shows with nobody in it (the calibration's few seconds hold no breathing
    /// window at all, so that reference is rarely learned).
    fn learn_empty(&mut self, c: f32) {
        self.empty_running.0.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_alone_never_arms_and_a_breath_does() {
        let mut c = StillCue::new();
        for _ in 0..1000 {
            assert!(!c.on_tick(Some(50.0), None, false, false, false, false));
        }
        // What the empty room showed is now its bar.
        assert!((c.threshold() - EMPTY_MARGIN * 50.0).abs() < 1e-3);
        let mut c = StillCue::new();
        assert!(c.on_tick(Some(50.0), None, false, true, false, false));
        // Held through a lapse of the breathing rate while the cue stays high.
        for _ in 0..3000 {
            assert!(c.on_tick(Some(9.0), None, false, false, false, true));
        }
        // Released after RELEASE_S below the threshold, not before.
        let mut ticks = 0;
        while c.on_tick(Some(1.0), None, false, false, false, true) {
            ticks += 1;
            assert!(ticks < 1000);
        }
        assert!(
            (f64::from(ticks) * TICK_S - RELEASE_S).abs() < 0.3,
            "{ticks}"
        );
        // Someone already present (walked in) is taken over by a strong cue.
        let mut c = StillCue::new();
        assert!(!c.on_tick(Some(3.0), None, false, false, false, true));
        assert!(c.on_tick(Some(9.0), None, false, false, false, true));
    }

    #[test]
    fn presence_held_by_the_bridge_alone_does_not_arm_the_cue() {
        let mut c = StillCue::new();
        c.note_bridge(true);
        for _ in 0..600 {
            assert!(!c.on_tick(Some(50.0), None, false, false, false, true));
        }
        // An accepted breath arms it whatever holds the room.
        assert!(c.on_tick(Some(50.0), None, false, true, false, true));
        let mut c = StillCue::new();
        c.note_bridge(false);
        assert!(c.on_tick(Some(50.0), None, false, false, false, true));
    }

    #[test]
    fn motion_disarms_and_the_empty_room_sets_the_threshold() {
        let mut c = StillCue::new();
        for i in 0..200 {
            c.on_tick(
                Some(0.3 + 0.001 * (i % 10) as f32),
                None,
                false,
                false,
                true,
                false,
            );
        }
        c.on_tick(Some(0.3), None, false, false, false, false);
        assert!(
            (c.threshold() - HOLD_FLOOR).abs() < 1e-6,
            "{}",
            c.threshold()
        );
        let mut c = StillCue::new();
        for i in 0..200 {
            c.on_tick(
                Some(3.0 + 0.01 * (i % 10) as f32),
                None,
                false,
                false,
                true,
                false,
            );
        }
        c.on_tick(Some(3.0), None, false, false, false, false);
        assert!(
            (c.threshold() - 3.0 * 3.09).abs() < 0.01,
            "{}",
            c.threshold()
        );
        assert!(c.on_tick(Some(20.0), None, false, true, false, false));
        assert!(!c.on_tick(Some(20.0), None, true, false, false, true));
        assert!(!c.on_tick(Some(20.0), None, false, false, false, false));
    }

    #[test]
    fn a_room_read_empty_raises_its_own_bar() {
        let mut c = StillCue::new();
        assert!((c.threshold() - HOLD_FLOOR).abs() < 1e-6);
        // An empty room whose cue wanders up to 12 for ten minutes.
        for i in 0..EMPTY_WINDOW {
            let cue = if i % 10 == 0 { 12.0 } else { 2.0 };
            assert!(!c.on_tick(Some(cue), Some(0.3), false, false, false, false));
        }
        let bar = c.threshold();
        assert!((bar - EMPTY_MARGIN * 12.0).abs() < 1e-3, "{bar}");
        // A breath arms the cue; a cue the empty room reached is no longer enough to hold it.
        assert!(c.on_tick(Some(200.0), Some(0.9), false, true, false, false));
        let mut ticks = 0;
        while c.on_tick(Some(12.0), Some(0.3), false, false, false, true) {
            ticks += 1;
            assert!(ticks < 1000);
        }
        // Nothing is learned while someone is present or moving, or from an accepted breath.
        let mut c = StillCue::new();
        for _ in 0..EMPTY_WINDOW {
            c.on_tick(Some(50.0), Some(0.9), false, false, false, true);
            c.on_tick(Some(50.0), Some(0.9), true, false, false, false);
            c.on_tick(Some(50.0), Some(0.9), false, true, false, false);
        }
        assert!(
            (c.threshold() - HOLD_FLOOR).abs() < 1e-6,
            "{}",
            c.threshold()
        );
    }

    #[test]
    fn a_released_person_is_taken_back_by_a_strong_coherent_cue_until_motion() {
        let mut c = StillCue::new();
        assert!(c.on_tick(Some(50.0), Some(0.9), false, true, false, false));
        // The cue fades: released after RELEASE_S.
        let mut ticks = 0;
        while c.on_tick(Some(0.0), Some(0.1), false, false, false, false) {
            ticks += 1;
            assert!(ticks < 1000);
        }
        // Incoherent energy does not take them back; a strong coherent cue does.
        assert!(!c.on_tick(Some(80.0), Some(0.3), false, false, false, false));
        assert!(!c.on_tick(Some(10.0), Some(0.9), false, false, false, false));
        assert!(c.on_tick(Some(30.0), Some(0.6), false, false, false, false));
        // After motion (someone may have left), energy alone never arms again.
        assert!(!c.on_tick(None, None, true, false, false, true));
        assert!(!c.on_tick(Some(30.0), Some(0.6), false, false, false, false));
        // Nor long after the cue last held someone.
        let mut c = StillCue::new();
        assert!(c.on_tick(Some(50.0), Some(0.9), false, true, false, false));
        for _ in 0..((RELEASE_S + REARM_S) / TICK_S) as usize + 20 {
            c.on_tick(Some(0.0), Some(0.1), false, false, false, false);
        }
        assert!(!c.on_tick(Some(30.0), Some(0.6), false, false, false, false));
    }
}
