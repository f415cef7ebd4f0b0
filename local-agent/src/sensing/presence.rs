//! Presence of one link: calibrated motion label, breathing evidence, still bridge, debounce.
//!
//! The motion threshold is learned per link from an empty room (P95 × 1.1 of the smoothed motion
//! level) because quiet levels differ 5× between links. Calibration refuses to learn a person:
//! it discards what it has collected whenever the vitals estimator sees a breathing-band
//! periodicity, or when the collected levels are not stationary (someone walked through), and it
//! only completes once the breathing check has had a full window to look. Until then a default
//! threshold applies, so the engine never assumes the room is empty.
//!
//! Present = moving OR accepted breathing (held 3 s through a lapse of the gates) OR still
//! bridge (a real motion episode in the last 75 s, while the breathing estimator waits for its
//! window or still sees a breathing-band candidate), debounced over 4 grid ticks. Moving always
//! implies present.

/// Motion level above which a link counts as moving before it is calibrated (ESPectre's quiet
/// links average 0.005–0.027, moving 0.022–0.110).
pub const DEFAULT_THRESHOLD: f32 = 0.03;
/// Calibration threshold multiplier on the 95th percentile. ESPectre uses 1.1 on long
/// calibrations; short ones (5 s on the 10 s captures) see too little of a noisy link's slow
/// wander and 1.1 false-triggered on the noisiest capture, while moving people score 5–20× the
/// threshold, so the wider margin costs no recall.
pub const P95_MARGIN: f32 = 1.3;
/// A calibration whose P95 exceeds this multiple of its median saw motion, not an empty room.
pub const STATIONARITY: f32 = 4.0;
/// Seconds of presence kept after a motion episode while no breathing is accepted yet.
pub const STILL_BRIDGE_S: f64 = 75.0;
/// A motion episode shorter than this does not arm the bridge (a lone false alarm must not hold
/// the room occupied for 75 s).
pub const BRIDGE_ARM_S: f64 = 1.0;
/// Seconds presence is held after the last accepted breath while the room stays still: a
/// breathing rate lapsing for a window or two must not make a still person vanish. Longer holds
/// keep still people better (8 s: 100% on the `still` scene) but stretch every false breathing
/// episode in an empty room (8 s: 84% absent); 3 s gives 98% / 91%.
pub const BREATH_HOLD_S: f64 = 3.0;
/// Ticks a new state must persist before it is reported.
pub const DEBOUNCE_TICKS: u32 = 4;
/// Ticks the motion label must persist to switch on: shorter, because the block average, Hampel
/// and EMA already delay it by ~0.5 s and onset must be reported within 2 s.
pub const MOTION_ON_TICKS: u32 = 2;
/// Moving is left when the score falls below this fraction of the threshold (hysteresis).
pub const RELEASE: f32 = 0.7;

/// Why an unfinished empty-room calibration last threw its samples away: the "why not yet" a
/// person needs when calibration never finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationHold {
    /// A breathing-band periodicity: someone is in view, and a person is never learned as the
    /// empty room.
    Breathing,
    /// The link saw motion.
    Motion,
    /// The motion level jumped or was not steady enough to be an empty room.
    Unsteady,
}

/// Evidence from the vitals estimator for this tick.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BreathEvidence {
    /// A full still window was analysed.
    pub analysed: bool,
    /// The latest window has a gated breathing-band peak.
    pub candidate: bool,
    /// A breathing rate is accepted (gates and persistence).
    pub accepted: bool,
    /// The still-presence cue holds a still person (`sensing::still`): armed by an accepted
    /// breath, held by breathing-band energy while no rate is accepted.
    pub still_cue: bool,
}

#[derive(Debug, Clone)]
pub struct PresenceTracker {
    calibration_ticks: usize,
    samples: Vec<f32>,
    threshold: Option<f32>,
    /// The threshold was learned and a full breathing window has since confirmed the room empty.
    confirmed: bool,
    moving_raw: bool,
    moving: bool,
    moving_streak: u32,
    motion_episode_s: f64,
    last_motion_end: Option<f64>,
    bridge_armed: bool,
    last_breath: Option<f64>,
    present: bool,
    present_streak: u32,
    score: f32,
    hold: Option<CalibrationHold>,
}

impl PresenceTracker {
    /// `calibration_s` of calm, breath-free data are needed; 0 disables calibration.
    pub fn new(calibration_s: f64, tick_s: f64) -> Self {
        let calibration_ticks = if calibration_s > 0.0 && tick_s > 0.0 {
            (calibration_s / tick_s).ceil() as usize
        } else {
            0
        };
        Self {
            calibration_ticks,
            samples: Vec::with_capacity(calibration_ticks),
            threshold: None,
            confirmed: false,
            moving_raw: false,
            moving: false,
            moving_streak: 0,
            motion_episode_s: 0.0,
            last_motion_end: None,
            bridge_armed: false,
            last_breath: None,
            present: false,
            present_streak: 0,
            score: 0.0,
            hold: None,
        }
    }

    /// Share of the calm data a calibration needs that has been collected (1 once calibrated).
    pub fn calibration_progress(&self) -> f64 {
        if !self.calibrating() {
            return 1.0;
        }
        (self.samples.len() as f64 / self.calibration_ticks.max(1) as f64).min(1.0)
    }

    /// Why the calibration in progress last started over; `None` when it has not (or is done).
    pub fn calibration_hold(&self) -> Option<CalibrationHold> {
        if self.calibrating() { self.hold } else { None }
    }

    pub fn calibrating(&self) -> bool {
        self.calibration_ticks > 0 && self.threshold.is_none()
    }

    pub fn threshold(&self) -> f32 {
        self.threshold.unwrap_or(DEFAULT_THRESHOLD)
    }

    /// Starts a new calibration.
    pub fn recalibrate(&mut self) {
        self.threshold = None;
        self.confirmed = false;
        self.samples.clear();
        self.hold = None;
    }

    pub fn moving(&self) -> bool {
        self.moving
    }

    pub fn present(&self) -> bool {
        self.present || self.moving
    }

    /// Motion level relative to the link's threshold (1.0 = threshold).
    pub fn score(&self) -> f32 {
        self.score
    }

    /// Reported motion in 0..1: below 0.05 whenever the link is not moving, at least 0.05 when
    /// it is, saturating for vigorous motion.
    pub fn motion_value(&self) -> f64 {
        let s = f64::from(self.score.max(0.0));
        if self.moving {
            (0.05 + 0.95 * (1.0 - (-(s - RELEASE as f64).max(0.0) / 3.0).exp())).clamp(0.05, 1.0)
        } else {
            0.045 * s.min(1.0)
        }
    }

    /// One grid tick at time `t_s` with smoothed motion `level`.
    pub fn on_tick(&mut self, t_s: f64, tick_s: f64, level: Option<f32>, breath: BreathEvidence) {
        let level = level.filter(|l| l.is_finite()).unwrap_or(0.0);
        self.calibrate(level, breath);
        let thr = self.threshold().max(1e-6);
        self.score = level / thr;
        self.moving_raw = if self.moving_raw {
            self.score > RELEASE
        } else {
            self.score > 1.0
        };
        if self.moving_raw != self.moving {
            self.moving_streak += 1;
            let needed = if self.moving_raw {
                MOTION_ON_TICKS
            } else {
                DEBOUNCE_TICKS
            };
            if self.moving_streak >= needed {
                self.moving = self.moving_raw;
                self.moving_streak = 0;
                if !self.moving {
                    self.last_motion_end = Some(t_s);
                    self.bridge_armed = self.motion_episode_s >= BRIDGE_ARM_S;
                    self.motion_episode_s = 0.0;
                }
            }
        } else {
            self.moving_streak = 0;
        }
        if self.moving {
            self.motion_episode_s += tick_s;
        }
        let bridge = self.bridge_armed
            && self
                .last_motion_end
                .is_some_and(|e| t_s - e >= 0.0 && t_s - e <= STILL_BRIDGE_S);
        if breath.accepted {
            self.last_breath = Some(t_s);
        }
        if self.moving {
            self.last_breath = None;
        }
        let breath_hold = self
            .last_breath
            .is_some_and(|b| t_s - b >= 0.0 && t_s - b <= BREATH_HOLD_S);
        let raw = self.moving
            || breath.accepted
            || breath.still_cue
            || (breath_hold && breath.analysed)
            || (bridge && !breath.analysed)
            || (bridge && breath.candidate);
        if self.moving {
            self.present = true;
            self.present_streak = 0;
        } else if raw != self.present {
            self.present_streak += 1;
            if self.present_streak >= DEBOUNCE_TICKS {
                self.present = raw;
                self.present_streak = 0;
            }
        } else {
            self.present_streak = 0;
        }
    }

    /// Learns the threshold from `calibration_s` of calm data (provisionally if the breathing
    /// window has not been analysed yet), and throws it away if a breathing-band periodicity
    /// shows up before a full breathing window confirmed the room empty.
    fn calibrate(&mut self, level: f32, breath: BreathEvidence) {
        if self.calibration_ticks == 0 || self.confirmed {
            return;
        }
        let person = breath.candidate || breath.accepted;
        if self.threshold.is_some() {
            if person {
                // A breathing person: this was not the empty room.
                self.threshold = None;
                self.samples.clear();
                self.hold = Some(CalibrationHold::Breathing);
            } else if breath.analysed {
                self.confirmed = true;
            }
            return;
        }
        if person || self.moving {
            // A breathing periodicity or motion is a person: never learn them as the empty room.
            self.samples.clear();
            self.hold = Some(if person {
                CalibrationHold::Breathing
            } else {
                CalibrationHold::Motion
            });
            return;
        }
        if level > 2.0 * DEFAULT_THRESHOLD.max(self.median_sample() * STATIONARITY) {
            self.samples.clear();
            self.hold = Some(CalibrationHold::Unsteady);
            return;
        }
        if self.samples.len() >= 4 * self.calibration_ticks {
            self.samples.drain(..self.calibration_ticks);
        }
        self.samples.push(level);
        if self.samples.len() < self.calibration_ticks {
            return;
        }
        let mut s = self.samples.clone();
        s.sort_by(f32::total_cmp);
        let p95 = s[((s.len() - 1) as f32 * 0.95).round() as usize];
        let median = s[s.len() / 2];
        if p95 > STATIONARITY * median {
            let half = self.samples.len() / 2;
            self.samples.drain(..half);
            self.hold = Some(CalibrationHold::Unsteady);
            return;
        }
        if p95 > 0.0 {
            self.hold = None;
            self.threshold = Some(p95 * P95_MARGIN);
            self.confirmed = breath.analysed;
            self.samples.clear();
            // The calm stretch just learned is taken as the empty room; an earlier motion episode
            // (someone leaving) no longer bridges presence. A still person is re-found by the
            // breathing check, which also throws this calibration away.
            self.bridge_armed = false;
            if !self.moving && !breath.accepted {
                self.present = false;
                self.present_streak = 0;
            }
        }
    }

    fn median_sample(&self) -> f32 {
        if self.samples.len() < 10 {
            return DEFAULT_THRESHOLD;
        }
        let mut s = self.samples.clone();
        s.sort_by(f32::total_cmp);
        s[s.len() / 2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: BreathEvidence = BreathEvidence {
        analysed: true,
        candidate: false,
        accepted: false,
        still_cue: false,
    };

    #[test]
    fn learns_threshold_then_flags_motion_and_bridges_stillness() {
        let mut p = PresenceTracker::new(5.0, 0.1);
        let mut t = 0.0;
        for i in 0..60 {
            p.on_tick(t, 0.1, Some(0.004 + 0.001 * (i % 5) as f32), QUIET);
            t += 0.1;
        }
        assert!(!p.calibrating());
        assert!(!p.present());
        for _ in 0..30 {
            p.on_tick(t, 0.1, Some(0.05), QUIET);
            t += 0.1;
        }
        assert!(p.moving() && p.present() && p.motion_value() >= 0.05);
        let waiting = BreathEvidence::default();
        for _ in 0..100 {
            p.on_tick(t, 0.1, Some(0.004), waiting);
            t += 0.1;
        }
        assert!(!p.moving() && p.present(), "bridge holds a still person");
        assert!(p.motion_value() < 0.05);
        for _ in 0..800 {
            p.on_tick(t, 0.1, Some(0.004), waiting);
            t += 0.1;
        }
        assert!(!p.present(), "bridge expires without breathing");
    }

    #[test]
    fn refuses_to_learn_a_breathing_person() {
        let mut p = PresenceTracker::new(5.0, 0.1);
        let breathing = BreathEvidence {
            analysed: true,
            candidate: true,
            accepted: true,
            still_cue: false,
        };
        for i in 0..600 {
            p.on_tick(f64::from(i) * 0.1, 0.1, Some(0.004), breathing);
        }
        assert!(p.calibrating());
        assert!(p.present());
        // A provisional calibration (breathing window not yet analysed) is dropped when the
        // breathing shows up.
        let mut p = PresenceTracker::new(5.0, 0.1);
        for i in 0..60 {
            p.on_tick(
                f64::from(i) * 0.1,
                0.1,
                Some(0.004),
                BreathEvidence::default(),
            );
        }
        assert!(!p.calibrating());
        p.on_tick(6.1, 0.1, Some(0.004), breathing);
        assert!(p.calibrating());
    }
}
