//! What the simulated person does: the scripted [`Activity`] of a segment, and the posture and
//! body action of each instant (the choreography's vocabulary and the ground truth's).

/// What the person in the scene is doing during one segment.
///
/// Every variant that needs the person somewhere else first (on the chair, in bed, inside the
/// room) walks them there at the start of the segment.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Activity {
    /// Nobody in the room. Someone still inside walks out through the door first.
    #[default]
    Absent,
    /// Walking between random spots in the room (entering first if outside).
    Walk,
    /// Sitting still on the desk chair, breathing at `breathing_bpm` with heart rate `heart_bpm`.
    SitStill { breathing_bpm: f64, heart_bpm: f64 },
    /// Lying still on the back in bed.
    LieStill { breathing_bpm: f64, heart_bpm: f64 },
    /// A few seconds of walking, then a fall: the chest drops ~1.15 m in 0.6 s, hits the floor
    /// (0.6 s of bouncing and flailing limbs), then the person lies still on the floor breathing.
    Fall { breathing_bpm: f64, heart_bpm: f64 },
    /// Walking to the chair and dropping onto it in 0.35 s (a hard landing that is not a fall),
    /// then sitting still.
    SitDownFast { breathing_bpm: f64, heart_bpm: f64 },
    /// Walking to the bed, sitting on its edge for 2.5 s and lying down over 6 s, then lying still.
    LieDownSlowly { breathing_bpm: f64, heart_bpm: f64 },
    /// Present and perfectly still with no chest motion at all (no breathing, no heartbeat):
    /// keeps the current sitting or lying posture, or sits down on the chair first.
    NoBreathing,
    /// Getting up if needed, walking out of the door, then staying away.
    Leave,
}

/// The person's posture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Posture {
    /// Not in the room.
    #[default]
    Outside,
    Standing,
    /// On the chair or the edge of the bed.
    Sitting,
    LyingBed,
    LyingFloor,
}

/// What the body is doing at this instant (finer than the scripted [`Activity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyAction {
    /// Outside the room.
    #[default]
    Away,
    Walking,
    SittingDown,
    StandingUp,
    LyingDown,
    /// Dropping to the floor, before the impact.
    Falling,
    /// Hitting the floor: the short burst of large motion.
    Impact,
    /// Holding a posture; only chest motion (if breathing) and slow postural sway.
    Still,
}
