//! Presence of one link: motion, breathing evidence, still bridge, debounce.
//!
//! Present = moving OR accepted breathing (held 3 s through a lapse of the gates) OR still
//! bridge (a real motion episode in the last 75 s, while the breathing estimator waits for its
//! window or still sees a breathing-band candidate), debounced over 4 grid ticks. Moving always
//! implies present, at once. The motion decision itself, and the empty-room calibration behind
//! it, live in `motion` and `calibration`.

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

#[derive(Debug, Clone, Default)]
pub struct PresenceTracker {
    moving: bool,
    motion_episode_s: f64,
    last_motion_end: Option<f64>,
    bridge_armed: bool,
    last_breath: Option<f64>,
    present: bool,
    present_streak: u32,
}

impl PresenceTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// The motion state seen at the last tick.
    pub fn moving(&self) -> bool {
        self.moving
    }

    /// Present at the last tick (moving implies present).
    pub fn present(&self) -> bool {
        self.present || self.moving
    }

    /// One grid tick at time `t_s`: `moving` is the link's motion decision now.
    pub fn on_tick(&mut self, t_s: f64, tick_s: f64, moving: bool, breath: BreathEvidence) {
        if self.moving && !moving {
            self.last_motion_end = Some(t_s);
            self.bridge_armed = self.motion_episode_s >= BRIDGE_ARM_S;
            self.motion_episode_s = 0.0;
        }
        self.moving = moving;
        if moving {
            self.motion_episode_s += tick_s;
        }
        let bridge = self.bridge_armed
            && self
                .last_motion_end
                .is_some_and(|e| t_s - e >= 0.0 && t_s - e <= STILL_BRIDGE_S);
        if breath.accepted {
            self.last_breath = Some(t_s);
        }
        if moving {
            self.last_breath = None;
        }
        let breath_hold = self
            .last_breath
            .is_some_and(|b| t_s - b >= 0.0 && t_s - b <= BREATH_HOLD_S);
        let raw = moving
            || breath.accepted
            || breath.still_cue
            || (breath_hold && breath.analysed)
            || (bridge && !breath.analysed)
            || (bridge && breath.candidate);
        if moving {
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
    fn motion_is_presence_and_arms_the_still_bridge() {
        let mut p = PresenceTracker::new();
        let mut t = 0.0;
        for _ in 0..60 {
            p.on_tick(t, 0.1, false, QUIET);
            t += 0.1;
        }
        assert!(!p.present());
        p.on_tick(t, 0.1, true, QUIET);
        assert!(p.present(), "moving is present at once");
        for _ in 0..30 {
            p.on_tick(t, 0.1, true, QUIET);
            t += 0.1;
        }
        let waiting = BreathEvidence::default();
        for _ in 0..100 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        assert!(!p.moving() && p.present(), "bridge holds a still person");
        for _ in 0..800 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        assert!(!p.present(), "bridge expires without breathing");
    }

    #[test]
    fn a_short_blip_does_not_arm_the_bridge_and_breathing_keeps_presence() {
        let mut p = PresenceTracker::new();
        let waiting = BreathEvidence::default();
        p.on_tick(0.0, 0.1, true, waiting);
        for i in 1..20 {
            p.on_tick(f64::from(i) * 0.1, 0.1, false, waiting);
        }
        assert!(!p.present(), "a 0.1 s blip arms no 75 s bridge");
        let breathing = BreathEvidence {
            analysed: true,
            candidate: true,
            accepted: true,
            still_cue: false,
        };
        for i in 20..40 {
            p.on_tick(f64::from(i) * 0.1, 0.1, false, breathing);
        }
        assert!(p.present());
    }
}
