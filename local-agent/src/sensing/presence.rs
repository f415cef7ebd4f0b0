//! Presence of one link: motion, breathing evidence, still bridge, debounce.
//!
//! Present = moving OR accepted breathing (held 3 s through a lapse of the gates) OR still
//! bridge (a real motion episode in the last 75 s, while the breathing estimator waits for its
//! window or still sees a breathing-band candidate; a short fragment that follows such an
//! episode within `EPISODE_GAP_S` belongs to it), debounced over 4 grid ticks. Breathing
//! evidence counts only until the room is sealed: a minute without motion and without presence
//! resting on breathing (`SEALED_AFTER_S`); then only motion, or one rhythm held over the
//! two-minute presence window (`BreathEvidence::long_accepted`), makes it present again. Moving
//! always implies present, at once. The motion decision itself, and the empty-room calibration
//! behind it, live in `motion` and `calibration`.

/// Seconds of presence kept after a motion episode while no breathing is accepted yet.
pub const STILL_BRIDGE_S: f64 = 75.0;
/// A motion episode shorter than this does not arm the bridge (a lone false alarm must not hold
/// the room occupied for 75 s), unless someone was present when it began: nobody leaves a room
/// in a blip, so a short episode (a shift of posture, a false alarm) must not drop a still person
/// while their breathing window refills.
pub const BRIDGE_ARM_S: f64 = 1.0;
/// A short motion episode that begins within this many seconds of the end of an episode that
/// armed the bridge is the same movement, not a new blip: the motion detector drops out for a
/// fraction of a second while someone walks and sits down (0.2–0.8 s gaps before the last short
/// episode of a walk-in on the tuning seeds), and judging that last fragment alone left the
/// bridge unarmed, so a person who had just sat down vanished until a breathing window filled
/// (26 s). Walk-out blips the bridge must not outlive (the Home Assistant demo's next loop,
/// ~34 s after a walk-out) come far later than this.
pub const EPISODE_GAP_S: f64 = 3.0;
/// Seconds presence is held after the last accepted breath while the room stays still: a
/// breathing rate lapsing for a window or two must not make a still person vanish. Longer holds
/// keep still people better (8 s: 100% on the `still` scene) but stretch every false breathing
/// episode in an empty room (8 s: 84% absent); 3 s gives 98% / 91%.
pub const BREATH_HOLD_S: f64 = 3.0;
/// Seconds without motion, and without presence resting on breathing evidence, after which the
/// room is sealed: breathing evidence alone no longer makes it present, only motion does. Nobody
/// enters a room without moving, while an empty room's noise passes the breathing gates now and
/// then (a creeping reflection's chance rhythms: 1 to 3 rooms in 40 over ten minutes, minutes
/// after the start or after a walk-out). The price is a still person whose breathing was lost
/// for a minute and came back without any motion in between: they read absent until they move
/// (the simulator's weak-breath seeds, whose breath is not above an empty room's noise on any
/// cue), unless the two-minute presence window finds their rhythm: an empty room's chance
/// rhythms last seconds, not two minutes (`pipeline::PRESENCE_BREATH_WINDOW`). Chosen on tuning
/// seeds (walk-outs 1–16: 271 ticks present after the bridge at 90 s and above, 62 at 60 s;
/// quiet rooms 17–36: none at 60 or 90 s); README, "Accuracy".
pub const SEALED_AFTER_S: f64 = 60.0;
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
    /// A breathing rate is accepted on the two-minute presence window
    /// (`pipeline::PRESENCE_BREATH_WINDOW`): the one breathing evidence that opens a sealed room.
    pub long_accepted: bool,
}

#[derive(Debug, Clone, Default)]
pub struct PresenceTracker {
    moving: bool,
    motion_episode_s: f64,
    /// Someone was present on breathing evidence when the current motion episode began.
    present_at_motion_start: bool,
    /// The current motion episode began within `EPISODE_GAP_S` of the end of one that armed
    /// the bridge: it continues that movement.
    continues_armed: bool,
    /// The last tick's presence rested on breathing evidence (an accepted or held rate, or the
    /// still cue), not on the bridge alone.
    breath_present: bool,
    last_motion_end: Option<f64>,
    bridge_armed: bool,
    last_breath: Option<f64>,
    present: bool,
    present_streak: u32,
    /// Seconds without motion during which presence did not rest on breathing evidence.
    unsupported_s: f64,
    /// The still bridge held presence at the last tick.
    bridging: bool,
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

    /// The still bridge is holding the room at the last tick: someone moved less than
    /// `STILL_BRIDGE_S` ago, and whether they stayed is still open.
    pub fn bridging(&self) -> bool {
        self.bridging
    }

    /// Absent and sealed: only motion can make the room present again (`SEALED_AFTER_S`).
    pub fn sealed(&self) -> bool {
        !self.present() && self.unsupported_s >= SEALED_AFTER_S
    }

    /// One grid tick at time `t_s`: `moving` is the link's motion decision now.
    pub fn on_tick(&mut self, t_s: f64, tick_s: f64, moving: bool, breath: BreathEvidence) {
        if moving && !self.moving {
            // Only breathing evidence counts: presence held by the bridge alone is the tail of a
            // walk-out, and a false blip in the just-emptied room must not extend it.
            self.present_at_motion_start = self.present && self.breath_present;
            self.continues_armed = self.bridge_armed
                && self
                    .last_motion_end
                    .is_some_and(|e| t_s - e >= 0.0 && t_s - e <= EPISODE_GAP_S);
        }
        if self.moving && !moving {
            self.last_motion_end = Some(t_s);
            self.bridge_armed = self.motion_episode_s >= BRIDGE_ARM_S
                || self.present_at_motion_start
                || self.continues_armed;
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
        self.bridging = bridge;
        if breath.accepted {
            self.last_breath = Some(t_s);
        }
        if moving {
            self.last_breath = None;
        }
        let breath_hold = self
            .last_breath
            .is_some_and(|b| t_s - b >= 0.0 && t_s - b <= BREATH_HOLD_S);
        self.breath_present =
            breath.accepted || breath.still_cue || (breath_hold && breath.analysed);
        if moving || (self.present && self.breath_present) {
            self.unsupported_s = 0.0;
        } else {
            self.unsupported_s += tick_s;
        }
        if breath.long_accepted {
            // Two minutes of one rhythm is not an empty room's chance rhythm (module notes).
            self.unsupported_s = 0.0;
        }
        let sealed = self.unsupported_s >= SEALED_AFTER_S;
        let raw = moving
            || (!sealed && self.breath_present)
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
        long_accepted: false,
    };

    const BREATHING: BreathEvidence = BreathEvidence {
        analysed: true,
        candidate: true,
        accepted: true,
        still_cue: true,
        long_accepted: false,
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
            long_accepted: false,
        };
        for i in 20..40 {
            p.on_tick(f64::from(i) * 0.1, 0.1, false, breathing);
        }
        assert!(p.present());
    }

    #[test]
    fn a_blip_does_not_drop_someone_already_present() {
        let mut p = PresenceTracker::new();
        let breathing = BREATHING;
        let mut t = 0.0;
        for _ in 0..50 {
            p.on_tick(t, 0.1, false, breathing);
            t += 0.1;
        }
        assert!(p.present());
        p.on_tick(t, 0.1, true, breathing);
        t += 0.1;
        // The vitals window restarts after motion: nothing analysed for a while.
        let waiting = BreathEvidence::default();
        for _ in 0..300 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
            assert!(p.present(), "dropped at {t:.1} s");
        }
    }

    #[test]
    fn a_walk_in_ending_in_a_short_fragment_still_arms_the_bridge() {
        let mut p = PresenceTracker::new();
        let waiting = BreathEvidence::default();
        let mut t = 0.0;
        // Walks in (a long episode), the detector drops out for 0.8 s, then the last 0.8 s of
        // sitting down reads as its own short episode.
        for _ in 0..100 {
            p.on_tick(t, 0.1, true, waiting);
            t += 0.1;
        }
        for _ in 0..8 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        for _ in 0..8 {
            p.on_tick(t, 0.1, true, waiting);
            t += 0.1;
        }
        for _ in 0..250 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
            assert!(p.present(), "dropped at {t:.1} s");
        }
        // The same fragment long after the walk (a lone blip) arms nothing.
        let mut p = PresenceTracker::new();
        for _ in 0..100 {
            p.on_tick(t, 0.1, true, waiting);
            t += 0.1;
        }
        for _ in 0..((EPISODE_GAP_S + 1.0) / 0.1) as usize {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        for _ in 0..8 {
            p.on_tick(t, 0.1, true, waiting);
            t += 0.1;
        }
        for _ in 0..20 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        assert!(!p.present(), "a blip after the gap arms no bridge");
    }

    #[test]
    fn a_blip_after_a_walk_out_does_not_extend_the_bridge() {
        let mut p = PresenceTracker::new();
        let waiting = BreathEvidence::default();
        let mut t = 0.0;
        // Someone walks out: a long motion episode, then the bridge alone holds presence.
        for _ in 0..50 {
            p.on_tick(t, 0.1, true, waiting);
            t += 0.1;
        }
        for _ in 0..100 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
        }
        // A false blip in the emptied room, then quiet analysed windows.
        p.on_tick(t, 0.1, true, waiting);
        t += 0.1;
        let mut absent_at = None;
        for _ in 0..1000 {
            p.on_tick(t, 0.1, false, waiting);
            t += 0.1;
            if !p.present() && absent_at.is_none() {
                absent_at = Some(t);
            }
        }
        // Without the blip the bridge ends 75 s after the walk-out (at 80 s); the blip must not
        // restart it.
        assert!(
            absent_at.is_some_and(|a| a <= 81.0),
            "absent at {absent_at:?}"
        );
    }

    /// Plays `secs` of ticks with the same evidence; returns the ticks read present.
    fn play(
        p: &mut PresenceTracker,
        t: &mut f64,
        secs: f64,
        moving: bool,
        e: BreathEvidence,
    ) -> usize {
        let mut present = 0;
        for _ in 0..(secs / 0.1).round() as usize {
            p.on_tick(*t, 0.1, moving, e);
            *t += 0.1;
            present += usize::from(p.present());
        }
        present
    }

    #[test]
    fn a_room_empty_for_a_minute_needs_motion_before_breathing_counts() {
        let mut p = PresenceTracker::new();
        let mut t = 0.0;
        assert_eq!(play(&mut p, &mut t, SEALED_AFTER_S + 5.0, false, QUIET), 0);
        // A breathing rhythm out of nowhere: the empty room's noise, nobody came in.
        assert!(p.sealed());
        assert_eq!(play(&mut p, &mut t, 60.0, false, BREATHING), 0, "sealed");
        // Someone walks in and sits down: present, and their breathing keeps them so.
        play(&mut p, &mut t, 3.0, true, QUIET);
        assert!(!p.sealed());
        assert_eq!(play(&mut p, &mut t, 300.0, false, BREATHING), 3000);
    }

    #[test]
    fn a_rhythm_held_for_two_minutes_opens_the_seal() {
        let mut p = PresenceTracker::new();
        let mut t = 0.0;
        play(&mut p, &mut t, 3.0, true, QUIET);
        // A breath too weak for the 30 s window: the bridge ends, the room seals.
        play(&mut p, &mut t, STILL_BRIDGE_S + 5.0, false, QUIET);
        assert!(p.sealed());
        assert_eq!(play(&mut p, &mut t, 20.0, false, BREATHING), 0, "sealed");
        // The two-minute presence window holds one rhythm: that is someone breathing.
        let long = BreathEvidence {
            long_accepted: true,
            ..BREATHING
        };
        let present = play(&mut p, &mut t, 60.0, false, long);
        assert!(present >= 590, "{present} of 600 ticks present");
        assert!(!p.sealed());
    }

    #[test]
    fn breathing_lost_for_less_than_the_seal_still_brings_a_still_person_back() {
        let mut p = PresenceTracker::new();
        let mut t = 0.0;
        play(&mut p, &mut t, 3.0, true, QUIET);
        play(&mut p, &mut t, 60.0, false, BREATHING);
        assert!(p.present());
        // The breath drops under the gates for 40 s, then comes back.
        let lost = play(&mut p, &mut t, 40.0, false, QUIET);
        assert!(lost < 400, "read absent while the breath was lost");
        play(&mut p, &mut t, 1.0, false, BREATHING);
        assert!(p.present(), "back with the breath");
        // Lost for longer than the seal: the breath alone no longer brings them back.
        // (The breath hold keeps the last breath for BREATH_HOLD_S first.)
        play(
            &mut p,
            &mut t,
            SEALED_AFTER_S + BREATH_HOLD_S + 1.0,
            false,
            QUIET,
        );
        assert_eq!(play(&mut p, &mut t, 30.0, false, BREATHING), 0);
    }

    #[test]
    fn the_bridge_is_not_sealed_and_breathing_found_during_it_keeps_the_person() {
        let mut p = PresenceTracker::new();
        let mut t = 0.0;
        play(&mut p, &mut t, 3.0, true, QUIET);
        // A weak breath: the window waits, then shows a candidate that no rate is accepted on
        // for most of the 75 s bridge.
        let waiting = BreathEvidence::default();
        let weak = BreathEvidence {
            analysed: true,
            candidate: true,
            accepted: false,
            still_cue: false,
            long_accepted: false,
        };
        assert_eq!(play(&mut p, &mut t, 30.0, false, waiting), 300);
        assert_eq!(play(&mut p, &mut t, 40.0, false, weak), 400);
        // Found 70 s after the walk-in, past the seal's minute: the bridge still holds the
        // room, so the breath is the person's.
        assert_eq!(play(&mut p, &mut t, 300.0, false, BREATHING), 3000);
    }
}
