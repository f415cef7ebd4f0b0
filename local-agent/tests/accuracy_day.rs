//! False alarms over the simulator's ordinary `day`: no fall and no no-breathing alarm, and (the
//! whole day) no presence while nobody is home (measured 2026-11-26: 0 of 341,066 ticks more
//! than 90 s after the walk-out).
//!
//! The full day is 24 h of 100 Hz frames (8.6 M frames); with the sensing crates optimised in the
//! dev profile it plays at 400–500 simulated seconds per wall second on one thread of the shared
//! 2-core machine, about 3 min. The default run therefore plays the day's script with every
//! segment capped (`CAP_S`, sleep `SLEEP_CAP_S`), keeping every transition of the day in order: getting into and out of bed, the
//! 03:10 bed exit, sitting at and leaving the desk, leaving the home and coming back. Those
//! transitions are where a fall detector false-alarms; long stretches of unchanged stillness are
//! covered by the sleep segments' caps. Frames, pipeline and monitor are the real ones, at full
//! rate; the monitor sees the estimates every 0.1 s of scene time as the runner would.
//! `the_whole_day_raises_no_alarm_and_no_presence_while_away` plays the uncapped 24 h: 0 alarms
//! (measured 2026-11-22; before the fall monitor required a breathing track held since the
//! stillness began it raised 4 false `no_breathing` alarms while asleep). It takes about 3 min in the dev profile on the shared
//! machine, one thread the whole time; it runs in CI all the same, because "no false alarm over a
//! whole day" is the promise. `the_first_twenty_minutes_asleep_raise_no_alarm` plays the start of
//! the day's night (where the first of those alarms fell) for four more seeds in parallel.

use local_agent::sensing::fall::{AlarmEntry, FallConfig, FallMonitor};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{
    Activity, NoiseModel, Segment, SimConfig, Simulator, scene,
};

const CAP_S: f64 = 150.0;
const SLEEP_CAP_S: f64 = 600.0;

fn capped(script: &[Segment]) -> Vec<Segment> {
    script
        .iter()
        .map(|s| {
            let cap = match s.activity {
                Activity::LieStill { .. } | Activity::LieDownSlowly { .. } => SLEEP_CAP_S,
                _ => CAP_S,
            };
            Segment {
                duration_s: s.duration_s.min(cap),
                activity: s.activity.clone(),
            }
        })
        .collect()
}

/// What a day's run returns: how long it ran, the alarms, and the ticks on which the pipeline
/// read someone present more than [`AWAY_AFTER_S`] after anyone was last in the room (what
/// would raise an Away Alert while the home is empty).
struct Played {
    t_end: f64,
    alarms: Vec<AlarmEntry>,
    present_while_away: usize,
    away_ticks: usize,
}

/// Seconds after someone was last in the room from which a presence reading is false: the
/// still bridge (75 s) and its debounce.
const AWAY_AFTER_S: f64 = 90.0;

fn play(script: Vec<Segment>, seed: u64) -> (f64, Vec<AlarmEntry>) {
    let p = play_counting(script, seed);
    (p.t_end, p.alarms)
}

fn play_counting(script: Vec<Segment>, seed: u64) -> Played {
    play_under(script, seed, NoiseModel::white())
}

fn play_under(script: Vec<Segment>, seed: u64, noise: NoiseModel) -> Played {
    let mut sim = Simulator::new(SimConfig {
        seed,
        script,
        noise,
        ..SimConfig::default()
    });
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut m = FallMonitor::new(FallConfig::default());
    let mut next = 0.0;
    let mut alarms = Vec::new();
    let mut t_end = 0.0;
    let (mut last_in, mut present_while_away, mut away_ticks) = (0.0, 0, 0);
    while let Some((frame, truth)) = sim.next_frame() {
        p.push(&frame);
        t_end = frame.t_s;
        if truth.present {
            last_in = frame.t_s;
        }
        if frame.t_s >= next {
            next += 0.1;
            let e = p.estimates();
            if !truth.present && frame.t_s - last_in > AWAY_AFTER_S {
                away_ticks += 1;
                present_while_away += usize::from(e.present);
            }
            if let Some(a) = m.observe(frame.t_s, &e) {
                alarms.push(a);
            }
        }
    }
    Played {
        t_end,
        alarms,
        present_while_away,
        away_ticks,
    }
}

fn day() -> Vec<Segment> {
    scene("day").expect("the day scene exists")
}

/// Night half: asleep, the bed exit, getting up, breakfast at the desk, leaving home.
#[test]
fn the_morning_of_an_ordinary_day_raises_no_alarm() {
    let script = capped(&day()[..8]);
    let (t, alarms) = play(script, 21);
    println!("morning: {t:.0} s simulated, alarms {alarms:?}");
    assert!(alarms.is_empty(), "{alarms:?}");
}

/// The capped day, morning and evening, under the noise measured on real quiet rooms
/// (interference packets, correlated noise, a per-packet tilt): the hold that lets the fall
/// monitor see falls through that noise must not turn the day's sit-downs and bedtimes into
/// alarms.
#[test]
fn the_capped_day_under_measured_noise_raises_no_alarm() {
    for (part, script, seed) in [
        ("morning", capped(&day()[..8]), 21),
        ("evening", capped(&day()[8..]), 22),
    ] {
        let p = play_under(script, seed, NoiseModel::measured());
        println!(
            "measured noise, {part}: {:.0} s simulated, alarms {:?}, present while away on {} of {} ticks",
            p.t_end, p.alarms, p.present_while_away, p.away_ticks
        );
        assert!(p.alarms.is_empty(), "{part}: {:?}", p.alarms);
    }
}

/// Evening half: coming home, the desk with breaks, going to bed.
#[test]
fn the_evening_of_an_ordinary_day_raises_no_alarm() {
    let script = capped(&day()[8..]);
    let (t, alarms) = play(script, 22);
    println!("evening: {t:.0} s simulated, alarms {alarms:?}");
    assert!(alarms.is_empty(), "{alarms:?}");
}

/// The night as the day starts it: asleep in bed from the first frame, breathing near the noise
/// floor, caught now and then. The full day's first false `no_breathing` (seed 23, 670 s) fell
/// here: a 28 s run of accepted breathing ten minutes into the night, then 45 s without.
#[test]
fn the_first_twenty_minutes_asleep_raise_no_alarm() {
    let script: Vec<Segment> = day()[..1]
        .iter()
        .map(|s| Segment {
            duration_s: 1200.0,
            activity: s.activity.clone(),
        })
        .collect();
    let results: Vec<(u64, f64, Vec<AlarmEntry>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (23..=26)
            .map(|seed| {
                let script = script.clone();
                scope.spawn(move || {
                    let (t, alarms) = play(script, seed);
                    (seed, t, alarms)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (seed, t, alarms) in &results {
        println!("asleep seed {seed}: {t:.0} s simulated, alarms {alarms:?}");
    }
    assert!(results.iter().all(|(_, _, a)| a.is_empty()), "{results:?}");
}

#[test]
fn the_whole_day_raises_no_alarm_and_no_presence_while_away() {
    let Played {
        t_end: t,
        alarms,
        present_while_away,
        away_ticks,
    } = play_counting(day(), 23);
    println!("day: {t:.0} s simulated, alarms {alarms:?}");
    println!(
        "day: read present on {present_while_away} of {away_ticks} ticks more than {AWAY_AFTER_S} s after anyone was in the room"
    );
    assert!(alarms.is_empty(), "{alarms:?}");
    // The 9.5 h away, from 90 s after the walk-out: an Away Alert would fire on any of these.
    assert!(away_ticks > 300_000, "the day has no time away");
    assert_eq!(present_while_away, 0);
}

/// One uninterrupted hour asleep in bed (the exposure the capped day shortens): no
/// no-breathing alarm while the sleeper's breathing is only caught now and then.
#[test]
fn an_hour_asleep_raises_no_alarm() {
    let script = vec![
        Segment {
            duration_s: 60.0,
            activity: Activity::Walk,
        },
        Segment {
            duration_s: 3600.0,
            activity: Activity::LieDownSlowly {
                breathing_bpm: 12.5,
                heart_bpm: 58.0,
            },
        },
    ];
    let (t, alarms) = play(script, 24);
    println!("asleep: {t:.0} s simulated, alarms {alarms:?}");
    assert!(alarms.is_empty(), "{alarms:?}");
}
