//! Where the person is and what they are doing, segment by segment, with continuous transitions:
//! someone told to sit still walks to the chair and sits down first; someone told to leave gets
//! up and walks out of the door.

use super::activity::{Activity, BodyAction, Posture};
use super::room::{CHEST_BED_EDGE_M, CHEST_FLOOR_M, CHEST_SITTING_M, CHEST_STANDING_M, Room, Vec3};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Breathing and heart rates the person has while holding still.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Vitals {
    pub breathing_bpm: f64,
    pub heart_bpm: f64,
}

/// Where the chest is and in which posture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Pose {
    pub xy: [f64; 2],
    pub z: f64,
    pub posture: Posture,
}

/// The body's intended state at one instant (before inertia, gait and chest motion).
#[derive(Debug, Clone, Copy)]
pub(super) struct Kinematics {
    pub pose: Pose,
    pub action: BodyAction,
    /// Walking speed (legs and arms swing while it is above zero).
    pub speed_m_s: f64,
    /// Unit walking direction.
    pub heading: [f64; 2],
    /// Direction the chest faces; breathing moves the chest along it.
    pub normal: Vec3,
    /// `Some` while holding still and breathing.
    pub vitals: Option<Vitals>,
    /// 0..1 intensity of uncontrolled limb motion (a fall's impact, a hard landing on a chair).
    pub flail: f64,
    /// Seconds since the flailing began, to drive the limb trajectories.
    pub flail_s: f64,
    pub impact: bool,
    /// 0 upright, 1 lying: tilts the head–hips axis of the body from vertical to horizontal.
    pub tilt: f64,
    /// Horizontal direction of the head when lying.
    pub lying_dir: [f64; 2],
}

/// Upright (0) or lying (1).
fn tilt_of(posture: Posture) -> f64 {
    match posture {
        Posture::LyingBed | Posture::LyingFloor => 1.0,
        _ => 0.0,
    }
}

/// Where the head points when lying: towards the wall at the bed's head end, or (on the floor)
/// along the room's length.
fn lying_dir_of(posture: Posture) -> [f64; 2] {
    match posture {
        Posture::LyingBed => [-1.0, 0.0],
        _ => [1.0, 0.0],
    }
}

/// Walking acceleration: people start and stop within about half a second.
const WALK_ACCEL_M_S2: f64 = 2.0;

/// One straight stretch of walking, starting and ending at rest with bounded acceleration, so
/// walking never looks like an impact.
#[derive(Debug, Clone, Copy)]
struct Leg {
    from: [f64; 2],
    to: [f64; 2],
    speed_m_s: f64,
}

impl Leg {
    fn length_m(&self) -> f64 {
        distance(self.from, self.to)
    }

    /// Cruise speed actually reached (short legs never get to `speed_m_s`).
    fn peak_speed(&self) -> f64 {
        self.speed_m_s
            .min((self.length_m() * WALK_ACCEL_M_S2).sqrt())
            .max(1e-6)
    }

    fn duration_s(&self) -> f64 {
        let v = self.peak_speed();
        self.length_m() / v + v / WALK_ACCEL_M_S2
    }

    /// Distance covered and speed after `t` seconds.
    fn progress(&self, t: f64) -> (f64, f64) {
        let a = WALK_ACCEL_M_S2;
        let v = self.peak_speed();
        let total = self.duration_s();
        let ramp = v / a;
        let t = t.clamp(0.0, total);
        if t < ramp {
            (0.5 * a * t * t, a * t)
        } else if t > total - ramp {
            let left = total - t;
            (self.length_m() - 0.5 * a * left * left, a * left)
        } else {
            (0.5 * a * ramp * ramp + v * (t - ramp), v)
        }
    }

    fn at(&self, t: f64) -> ([f64; 2], f64) {
        let (covered, speed) = self.progress(t);
        let d = self.length_m();
        let u = if d > 0.0 { (covered / d).min(1.0) } else { 1.0 };
        (lerp2(self.from, self.to, u), speed)
    }
}

/// How a posture change runs in time.
#[derive(Debug, Clone, Copy)]
enum Profile {
    /// Accelerate and decelerate gently (raised cosine).
    Smooth,
    /// Let gravity do it: accelerate all the way, stop abruptly, bounce on the cushion.
    Drop,
}

/// Time the body takes to settle after a `Profile::Drop`.
const SETTLE_S: f64 = 0.4;

#[derive(Debug, Clone)]
enum Motion {
    /// Outside the room, indefinitely.
    Away { xy: [f64; 2] },
    /// Still in one pose, indefinitely.
    Hold {
        pose: Pose,
        normal: Vec3,
        vitals: Option<Vitals>,
    },
    /// Walking between random waypoints, indefinitely.
    Wander { leg: Leg },
    /// Walking one leg.
    Walk { leg: Leg },
    /// A posture change from one pose to another.
    Move {
        from: Pose,
        to: Pose,
        duration_s: f64,
        profile: Profile,
        action: BodyAction,
    },
    /// Losing balance: the chest drops to the floor under gravity, hits it, limbs flail.
    Fall {
        from: Pose,
        to: Pose,
        drop_s: f64,
        impact_s: f64,
    },
}

impl Motion {
    /// `None` for motions that last until the next segment.
    fn duration_s(&self) -> Option<f64> {
        match self {
            Motion::Away { .. } | Motion::Hold { .. } | Motion::Wander { .. } => None,
            Motion::Walk { leg } => Some(leg.duration_s()),
            Motion::Move {
                duration_s,
                profile,
                ..
            } => Some(match profile {
                Profile::Smooth => *duration_s,
                Profile::Drop => duration_s + SETTLE_S,
            }),
            Motion::Fall {
                drop_s, impact_s, ..
            } => Some(drop_s + impact_s),
        }
    }

    fn at(&self, s: f64, room: &Room) -> Kinematics {
        let still = |pose: Pose, action, normal, vitals| Kinematics {
            pose,
            action,
            speed_m_s: 0.0,
            heading: [0.0, 0.0],
            normal,
            vitals,
            flail: 0.0,
            flail_s: 0.0,
            impact: false,
            tilt: tilt_of(pose.posture),
            lying_dir: lying_dir_of(pose.posture),
        };
        match self {
            Motion::Away { xy } => still(
                Pose {
                    xy: *xy,
                    z: CHEST_STANDING_M,
                    posture: Posture::Outside,
                },
                BodyAction::Away,
                facing(room),
                None,
            ),
            Motion::Hold {
                pose,
                normal,
                vitals,
            } => still(*pose, BodyAction::Still, *normal, *vitals),
            Motion::Wander { leg } | Motion::Walk { leg } => {
                let (xy, speed_m_s) = leg.at(s);
                let dir = direction(leg.from, leg.to);
                Kinematics {
                    speed_m_s,
                    heading: dir,
                    ..still(
                        Pose {
                            xy,
                            z: CHEST_STANDING_M,
                            posture: if room.contains(xy) {
                                Posture::Standing
                            } else {
                                Posture::Outside
                            },
                        },
                        BodyAction::Walking,
                        [dir[0], dir[1], 0.0],
                        None,
                    )
                }
            }
            Motion::Move {
                from,
                to,
                duration_s,
                profile,
                action,
            } => {
                let u = (s / duration_s).clamp(0.0, 1.0);
                let w = match profile {
                    Profile::Smooth => 0.5 * (1.0 - (std::f64::consts::PI * u).cos()),
                    Profile::Drop => u * u,
                };
                let mut pose = Pose {
                    xy: lerp2(from.xy, to.xy, w),
                    z: from.z + (to.z - from.z) * w,
                    posture: if u < 0.5 { from.posture } else { to.posture },
                };
                let after = s - duration_s;
                // Legs fold or unfold and the arms brace during the whole change, not just the
                // chest: slow limb motion peaking mid-way.
                let mut flail = 0.5 * (std::f64::consts::PI * u).sin();
                let mut flail_s = 0.3 * s;
                if after > 0.0 {
                    // Cushion rebound after a hard landing.
                    pose.z +=
                        0.03 * (-after / 0.1).exp() * (std::f64::consts::TAU * 4.0 * after).sin();
                    flail = 0.3 * (-after / 0.15).exp();
                    flail_s = after;
                }
                Kinematics {
                    flail,
                    flail_s,
                    tilt: tilt_of(from.posture) + (tilt_of(to.posture) - tilt_of(from.posture)) * w,
                    lying_dir: if tilt_of(to.posture) > 0.0 {
                        lying_dir_of(to.posture)
                    } else {
                        lying_dir_of(from.posture)
                    },
                    ..still(pose, *action, normal_for(to.posture, room), None)
                }
            }
            Motion::Fall {
                from,
                to,
                drop_s,
                impact_s: _,
            } => {
                if s < *drop_s {
                    let u = s / drop_s;
                    let w = u * u;
                    let pose = Pose {
                        xy: lerp2(from.xy, to.xy, w),
                        z: from.z + (to.z - from.z) * w,
                        posture: Posture::Standing,
                    };
                    Kinematics {
                        // Arms thrown out to break the fall.
                        flail: 0.6 * u,
                        flail_s: s,
                        tilt: w,
                        lying_dir: lying_dir_of(Posture::LyingFloor),
                        ..still(pose, BodyAction::Falling, facing(room), None)
                    }
                } else {
                    let after = s - drop_s;
                    let mut pose = *to;
                    pose.z += 0.08
                        * (-after / 0.12).exp()
                        * (std::f64::consts::TAU * 6.0 * after).sin().abs();
                    Kinematics {
                        flail: (-after / 0.3).exp(),
                        flail_s: after,
                        impact: true,
                        ..still(pose, BodyAction::Impact, [0.0, 0.0, 1.0], None)
                    }
                }
            }
        }
    }
}

/// The script's person, one motion at a time.
#[derive(Debug, Clone)]
pub(super) struct Choreography {
    room: Room,
    current: Motion,
    started_s: f64,
    queue: VecDeque<Motion>,
}

impl Choreography {
    /// Places the person in the steady state of the first activity, so a scene that starts with
    /// someone sitting still has them seated from the very first frame.
    pub(super) fn new(room: Room, first: Option<&Activity>, rng: &mut ChaCha8Rng) -> Self {
        let seated = Pose {
            xy: xy(room.chair),
            z: room.chair[2],
            posture: Posture::Sitting,
        };
        let lying = Pose {
            xy: xy(room.bed),
            z: room.bed[2],
            posture: Posture::LyingBed,
        };
        let standing = Pose {
            xy: random_spot(&room, None, rng),
            z: CHEST_STANDING_M,
            posture: Posture::Standing,
        };
        let outside = Pose {
            xy: room.door_outside,
            z: CHEST_STANDING_M,
            posture: Posture::Outside,
        };
        let pose = match first {
            None | Some(Activity::Absent) => outside,
            Some(Activity::SitStill { .. } | Activity::NoBreathing) => seated,
            Some(Activity::LieStill { .. }) => lying,
            Some(_) => standing,
        };
        let mut choreography = Self {
            current: Motion::Hold {
                pose,
                normal: normal_for(pose.posture, &room),
                vitals: None,
            },
            room,
            started_s: 0.0,
            queue: VecDeque::new(),
        };
        if pose.posture == Posture::Outside {
            choreography.current = Motion::Away { xy: pose.xy };
        }
        if let Some(activity) = first {
            choreography.start(0.0, activity, rng);
        }
        choreography
    }

    /// Replaces the plan from `t_s` on with the way to carry out `activity` from wherever the
    /// person is at that moment.
    pub(super) fn start(&mut self, t_s: f64, activity: &Activity, rng: &mut ChaCha8Rng) {
        let now = self.at(t_s, rng).pose;
        let plan = self.plan(now, activity, rng);
        self.queue = plan.into();
        self.started_s = t_s;
        self.current = self.queue.pop_front().unwrap_or(Motion::Hold {
            pose: now,
            normal: normal_for(now.posture, &self.room),
            vitals: None,
        });
    }

    /// The intended state at `t_s` (non-decreasing between calls).
    pub(super) fn at(&mut self, t_s: f64, rng: &mut ChaCha8Rng) -> Kinematics {
        loop {
            let elapsed = t_s - self.started_s;
            match (&self.current, self.current.duration_s()) {
                (_, Some(d)) if elapsed >= d => {
                    let end = self.current.at(d, &self.room).pose;
                    self.started_s += d;
                    self.current = self.queue.pop_front().unwrap_or(Motion::Hold {
                        pose: end,
                        normal: normal_for(end.posture, &self.room),
                        vitals: None,
                    });
                }
                (Motion::Wander { leg }, None) if elapsed >= leg.duration_s() => {
                    let from = leg.to;
                    self.started_s += leg.duration_s();
                    self.current = Motion::Wander {
                        leg: self.random_leg(from, rng),
                    };
                }
                _ => return self.current.at(elapsed, &self.room),
            }
        }
    }

    fn random_leg(&self, from: [f64; 2], rng: &mut ChaCha8Rng) -> Leg {
        Leg {
            from,
            to: random_spot(&self.room, Some(from), rng),
            speed_m_s: rng.random_range(0.7..1.3),
        }
    }

    fn plan(&self, now: Pose, activity: &Activity, rng: &mut ChaCha8Rng) -> Vec<Motion> {
        let room = &self.room;
        let chair = Pose {
            xy: xy(room.chair),
            z: room.chair[2],
            posture: Posture::Sitting,
        };
        let in_bed = Pose {
            xy: xy(room.bed),
            z: room.bed[2],
            posture: Posture::LyingBed,
        };
        let on_chair = now.posture == Posture::Sitting && distance(now.xy, chair.xy) < 0.05;
        let on_bed = now.posture == Posture::LyingBed && distance(now.xy, in_bed.xy) < 0.05;
        let hold = |pose: Pose, vitals: Option<Vitals>| Motion::Hold {
            pose,
            normal: normal_for(pose.posture, room),
            vitals,
        };
        let mut plan = Vec::new();
        match *activity {
            Activity::Absent | Activity::Leave => {
                if now.posture == Posture::Outside {
                    plan.push(Motion::Away { xy: now.xy });
                } else {
                    let standing = self.stand_up(now, &mut plan);
                    walk(&mut plan, standing.xy, room.door_inside, 1.0);
                    walk(&mut plan, room.door_inside, room.door_outside, 1.0);
                    plan.push(Motion::Away {
                        xy: room.door_outside,
                    });
                }
            }
            Activity::Walk => {
                let standing = self.stand_up(now, &mut plan);
                plan.push(Motion::Wander {
                    leg: self.random_leg(standing.xy, rng),
                });
            }
            Activity::SitStill {
                breathing_bpm,
                heart_bpm,
            } => {
                let vitals = Vitals {
                    breathing_bpm,
                    heart_bpm,
                };
                if !on_chair {
                    self.sit_on_chair(now, Profile::Smooth, 1.5, &mut plan);
                }
                plan.push(hold(chair, Some(vitals)));
            }
            Activity::SitDownFast {
                breathing_bpm,
                heart_bpm,
            } => {
                self.sit_on_chair(now, Profile::Drop, 0.35, &mut plan);
                plan.push(hold(
                    chair,
                    Some(Vitals {
                        breathing_bpm,
                        heart_bpm,
                    }),
                ));
            }
            Activity::NoBreathing => match now.posture {
                Posture::Sitting | Posture::LyingBed | Posture::LyingFloor => {
                    plan.push(hold(now, None));
                }
                Posture::Standing | Posture::Outside => {
                    self.sit_on_chair(now, Profile::Smooth, 1.5, &mut plan);
                    plan.push(hold(chair, None));
                }
            },
            Activity::LieStill {
                breathing_bpm,
                heart_bpm,
            } => {
                if !on_bed {
                    self.lie_on_bed(now, 1.5, 3.0, &mut plan);
                }
                plan.push(hold(
                    in_bed,
                    Some(Vitals {
                        breathing_bpm,
                        heart_bpm,
                    }),
                ));
            }
            Activity::LieDownSlowly {
                breathing_bpm,
                heart_bpm,
            } => {
                if !on_bed {
                    self.lie_on_bed(now, 2.5, 6.0, &mut plan);
                }
                plan.push(hold(
                    in_bed,
                    Some(Vitals {
                        breathing_bpm,
                        heart_bpm,
                    }),
                ));
            }
            Activity::Fall {
                breathing_bpm,
                heart_bpm,
            } => {
                let standing = self.stand_up(now, &mut plan);
                // A few seconds of walking (at least 3 m), then the fall in the walking
                // direction.
                let mut from = standing.xy;
                let mut walked = 0.0;
                let mut dir = [1.0, 0.0];
                for _ in 0..8 {
                    if walked >= 3.0 {
                        break;
                    }
                    let to = random_spot(room, Some(from), rng);
                    // The last stretch ends within the link's sensing zone: a fall far from every
                    // link is a coverage problem, not a detection one, and this scene tests
                    // detection.
                    let to = if walked + distance(from, to) >= 3.0 {
                        spot_near_link(room, rng)
                    } else {
                        to
                    };
                    walked += distance(from, to);
                    dir = direction(from, to);
                    walk(&mut plan, from, to, 1.0);
                    from = to;
                }
                let target = from;
                let [x0, y0, x1, y1] = room.walk_area;
                let landing = [
                    (target[0] + 0.9 * dir[0]).clamp(x0 - 0.3, x1 + 0.3),
                    (target[1] + 0.9 * dir[1]).clamp(y0 - 0.2, y1 + 0.3),
                ];
                let floor = Pose {
                    xy: landing,
                    z: CHEST_FLOOR_M,
                    posture: Posture::LyingFloor,
                };
                plan.push(Motion::Fall {
                    from: Pose {
                        xy: target,
                        z: CHEST_STANDING_M,
                        posture: Posture::Standing,
                    },
                    to: floor,
                    // Free fall of the chest from 1.3 m takes ~0.5 s; a body pivoting over its
                    // feet is a little slower.
                    drop_s: 0.6,
                    impact_s: 0.6,
                });
                plan.push(hold(
                    floor,
                    Some(Vitals {
                        breathing_bpm,
                        heart_bpm,
                    }),
                ));
            }
        }
        plan
    }

    /// Appends the motions that bring the person from `now` to standing inside the room.
    fn stand_up(&self, now: Pose, plan: &mut Vec<Motion>) -> Pose {
        let room = &self.room;
        let standing_here = Pose {
            xy: now.xy,
            z: CHEST_STANDING_M,
            posture: Posture::Standing,
        };
        match now.posture {
            Posture::Outside => {
                walk(plan, now.xy, room.door_inside, 1.0);
                Pose {
                    xy: room.door_inside,
                    ..standing_here
                }
            }
            Posture::Standing => standing_here,
            Posture::LyingBed => {
                let edge = bed_edge(room);
                plan.push(Motion::Move {
                    from: now,
                    to: edge,
                    duration_s: 2.5,
                    profile: Profile::Smooth,
                    action: BodyAction::StandingUp,
                });
                let up = Pose {
                    xy: room.bed_side,
                    ..standing_here
                };
                plan.push(Motion::Move {
                    from: edge,
                    to: up,
                    duration_s: 1.2,
                    profile: Profile::Smooth,
                    action: BodyAction::StandingUp,
                });
                up
            }
            Posture::Sitting | Posture::LyingFloor => {
                let rise = CHEST_STANDING_M - now.z;
                if rise > 0.01 {
                    let per_metre = if now.posture == Posture::LyingFloor {
                        3.0
                    } else {
                        3.4
                    };
                    plan.push(Motion::Move {
                        from: now,
                        to: standing_here,
                        duration_s: (rise * per_metre).clamp(0.6, 3.5),
                        profile: Profile::Smooth,
                        action: BodyAction::StandingUp,
                    });
                }
                standing_here
            }
        }
    }

    fn sit_on_chair(&self, now: Pose, profile: Profile, duration_s: f64, plan: &mut Vec<Motion>) {
        let room = &self.room;
        let standing = self.stand_up(now, plan);
        let at_chair = xy(room.chair);
        walk(plan, standing.xy, at_chair, 1.0);
        plan.push(Motion::Move {
            from: Pose {
                xy: at_chair,
                ..standing
            },
            to: Pose {
                xy: at_chair,
                z: CHEST_SITTING_M,
                posture: Posture::Sitting,
            },
            duration_s,
            profile,
            action: BodyAction::SittingDown,
        });
    }

    fn lie_on_bed(&self, now: Pose, sit_s: f64, lie_s: f64, plan: &mut Vec<Motion>) {
        let room = &self.room;
        let standing = self.stand_up(now, plan);
        walk(plan, standing.xy, room.bed_side, 1.0);
        let edge = bed_edge(room);
        plan.push(Motion::Move {
            from: Pose {
                xy: room.bed_side,
                ..standing
            },
            to: edge,
            duration_s: sit_s,
            profile: Profile::Smooth,
            action: BodyAction::SittingDown,
        });
        plan.push(Motion::Move {
            from: edge,
            to: Pose {
                xy: xy(room.bed),
                z: room.bed[2],
                posture: Posture::LyingBed,
            },
            duration_s: lie_s,
            profile: Profile::Smooth,
            action: BodyAction::LyingDown,
        });
    }
}

fn bed_edge(room: &Room) -> Pose {
    Pose {
        xy: [room.bed_side[0], room.bed_side[1] + 0.3],
        z: CHEST_BED_EDGE_M,
        posture: Posture::Sitting,
    }
}

fn walk(plan: &mut Vec<Motion>, from: [f64; 2], to: [f64; 2], speed_m_s: f64) {
    if distance(from, to) > 0.02 {
        plan.push(Motion::Walk {
            leg: Leg {
                from,
                to,
                speed_m_s,
            },
        });
    }
}

fn facing(room: &Room) -> Vec3 {
    [room.chair_facing[0], room.chair_facing[1], 0.0]
}

/// Chest normal: horizontal when upright, up when lying on the back.
fn normal_for(posture: Posture, room: &Room) -> Vec3 {
    match posture {
        Posture::LyingBed | Posture::LyingFloor => [0.0, 0.0, 1.0],
        _ => facing(room),
    }
}

/// A random waypoint in the walkable area, at least 1 m from `away_from` when possible.
fn random_spot(room: &Room, away_from: Option<[f64; 2]>, rng: &mut ChaCha8Rng) -> [f64; 2] {
    let [x0, y0, x1, y1] = room.walk_area;
    let mut spot = [x0, y0];
    for _ in 0..20 {
        spot = [rng.random_range(x0..=x1), rng.random_range(y0..=y1)];
        match away_from {
            Some(p) if distance(p, spot) < 1.0 => continue,
            _ => break,
        }
    }
    spot
}

/// A random spot in the walkable area within 1.2 m (horizontally) of the direct link.
fn spot_near_link(room: &Room, rng: &mut ChaCha8Rng) -> [f64; 2] {
    let (a, b) = (xy(room.tx), xy(room.rx));
    let mut best = random_spot(room, None, rng);
    let mut best_d = f64::INFINITY;
    for _ in 0..30 {
        let spot = random_spot(room, None, rng);
        let ab = [b[0] - a[0], b[1] - a[1]];
        let t = (((spot[0] - a[0]) * ab[0] + (spot[1] - a[1]) * ab[1])
            / (ab[0] * ab[0] + ab[1] * ab[1]))
            .clamp(0.0, 1.0);
        let d = distance(spot, [a[0] + t * ab[0], a[1] + t * ab[1]]);
        if d < 1.2 {
            return spot;
        }
        if d < best_d {
            best = spot;
            best_d = d;
        }
    }
    best
}

pub(super) fn xy(p: Vec3) -> [f64; 2] {
    [p[0], p[1]]
}

fn distance(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

fn direction(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    let d = distance(a, b);
    if d > 1e-9 {
        [(b[0] - a[0]) / d, (b[1] - a[1]) / d]
    } else {
        [1.0, 0.0]
    }
}

fn lerp2(a: [f64; 2], b: [f64; 2], w: f64) -> [f64; 2] {
    [a[0] + (b[0] - a[0]) * w, a[1] + (b[1] - a[1]) * w]
}
