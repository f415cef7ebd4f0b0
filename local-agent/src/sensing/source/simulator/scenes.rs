//! Named scenes: the scripts users pick by name and the accuracy tests replay.

use super::{Activity, Segment};

fn seg(duration_s: f64, activity: Activity) -> Segment {
    Segment {
        duration_s,
        activity,
    }
}

/// Every name [`scene`] knows, in display order.
pub fn scene_names() -> &'static [&'static str] {
    &[
        "demo",
        "empty",
        "still",
        "walk",
        "fall",
        "sit-fast",
        "lie-bed",
        "leave",
        "no-breathing",
        "day",
    ]
}

/// The script of a named scene, or `None` for an unknown name.
///
/// - `demo` (180 s): empty room 20 s → someone walks in and around 40 s → walks to the chair, sits
///   and breathes at 15 br/min, heart 72 bpm, 100 s → gets up and leaves, 20 s. What a new user
///   sees first: every state the engine reports, in order.
/// - `empty` (120 s): nobody. Calibration material and the "empty room reads occupied" check.
/// - `still` (180 s): a person already sitting still at the computer from the very first frame,
///   breathing 14 br/min, heart 68 bpm: the most common start, with no walk-in to calibrate on.
/// - `walk` (60 s): someone walking around the room the whole time.
/// - `fall` (95 s): walking 20 s, then a fall (a few more seconds of walking, the drop, the impact)
///   and lying on the floor breathing 18 br/min, heart 90 bpm, for well over the 45 s alert delay.
/// - `sit-fast` (100 s): walking 25 s, then dropping hard onto the chair and sitting still
///   (15 br/min, 75 bpm): an impact-like event that must not raise a fall alert. The walk is long
///   enough that the landing comes after the fall monitor's 20 s start-up (with 15 s it fell
///   inside it, and the scene tested nothing).
/// - `lie-bed` (145 s): walking 25 s, then lying down slowly on the bed and lying still
///   (13 br/min, 62 bpm): slow posture change into a low, weakly coupled position (after the fall
///   monitor's start-up, like `sit-fast`).
/// - `leave` (120 s): sitting still 40 s (15 br/min, 70 bpm), leaving (walking out of the door),
///   then an empty room for the rest: vitals must drop out and not latch.
/// - `no-breathing` (120 s): sitting still and breathing 40 s, then still with no chest motion for
///   80 s: present but no breath, the no-breathing alarm case.
/// - `day` (24 h, t = 0 at midnight): one ordinary day for routine learning. Asleep in bed
///   until 07:00 with a 5-minute bed exit at 03:10; up, breakfast at the desk, out from 08:00 to
///   17:30; home, at the computer with breaks, in bed from 23:00. Step it with
///   `Simulator::next_truth` at a low rate when only the routine matters.
pub fn scene(name: &str) -> Option<Vec<Segment>> {
    use Activity::*;
    let script = match name {
        "demo" => vec![
            seg(20.0, Absent),
            seg(40.0, Walk),
            seg(
                100.0,
                SitStill {
                    breathing_bpm: 15.0,
                    heart_bpm: 72.0,
                },
            ),
            seg(20.0, Leave),
        ],
        "empty" => vec![seg(120.0, Absent)],
        "still" => vec![seg(
            180.0,
            SitStill {
                breathing_bpm: 14.0,
                heart_bpm: 68.0,
            },
        )],
        "walk" => vec![seg(60.0, Walk)],
        "fall" => vec![
            seg(20.0, Walk),
            seg(
                75.0,
                Fall {
                    breathing_bpm: 18.0,
                    heart_bpm: 90.0,
                },
            ),
        ],
        "sit-fast" => vec![
            seg(25.0, Walk),
            seg(
                75.0,
                SitDownFast {
                    breathing_bpm: 15.0,
                    heart_bpm: 75.0,
                },
            ),
        ],
        "lie-bed" => vec![
            seg(25.0, Walk),
            seg(
                120.0,
                LieDownSlowly {
                    breathing_bpm: 13.0,
                    heart_bpm: 62.0,
                },
            ),
        ],
        "leave" => vec![
            seg(
                40.0,
                SitStill {
                    breathing_bpm: 15.0,
                    heart_bpm: 70.0,
                },
            ),
            seg(10.0, Leave),
            seg(70.0, Absent),
        ],
        "no-breathing" => vec![
            seg(
                40.0,
                SitStill {
                    breathing_bpm: 15.0,
                    heart_bpm: 70.0,
                },
            ),
            seg(80.0, NoBreathing),
        ],
        "day" => day(),
        _ => return None,
    };
    Some(script)
}

/// One ordinary day from midnight, see [`scene`].
fn day() -> Vec<Segment> {
    use Activity::*;
    const H: f64 = 3600.0;
    const M: f64 = 60.0;
    let asleep = LieStill {
        breathing_bpm: 12.0,
        heart_bpm: 56.0,
    };
    let at_desk = |breathing_bpm, heart_bpm| SitStill {
        breathing_bpm,
        heart_bpm,
    };
    vec![
        seg(3.0 * H + 10.0 * M, asleep.clone()),
        seg(5.0 * M, Walk),
        seg(
            3.0 * H + 45.0 * M - 2.0 * M,
            LieDownSlowly {
                breathing_bpm: 12.5,
                heart_bpm: 58.0,
            },
        ),
        seg(2.0 * M, asleep),
        seg(15.0 * M, Walk),
        seg(30.0 * M, at_desk(15.0, 70.0)),
        seg(15.0 * M, Walk),
        seg(9.0 * H + 30.0 * M, Leave),
        seg(20.0 * M, Walk),
        seg(2.0 * H, at_desk(14.0, 68.0)),
        seg(30.0 * M, Walk),
        seg(2.0 * H, at_desk(14.5, 66.0)),
        seg(25.0 * M, Walk),
        seg(15.0 * M, at_desk(15.0, 67.0)),
        seg(
            1.0 * H,
            LieDownSlowly {
                breathing_bpm: 13.0,
                heart_bpm: 60.0,
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_scene_exists_and_has_length() {
        for name in scene_names() {
            let script = scene(name).unwrap_or_default();
            let total: f64 = script.iter().map(|s| s.duration_s).sum();
            assert!(total >= 60.0, "{name}: {total}");
        }
        let day: f64 = day().iter().map(|s| s.duration_s).sum();
        assert_eq!(day, 24.0 * 3600.0);
        assert!(scene("nope").is_none());
    }
}
