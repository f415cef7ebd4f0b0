//! Routine learning over weeks of simulated life, with an injected clock and time zone.
//!
//! Nights are synthesised at the estimate level (what the pipeline publishes: present, moving,
//! breathing), one estimate every 30 s of wall time: simulating weeks of CSI frames would take
//! hours, and the learner only ever sees estimates. The person's evening, bedtime, bed exits and
//! wake time vary from night to night with a seeded generator; the learner gets the same calls
//! the engine's runner makes.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::{self, TimeZone};
use local_agent::sensing::pipeline::Estimates;
use local_agent::sensing::routine::{
    NIGHT_BOUTS, NO_WAKE, RoutineConfig, RoutineLearner, Status, night_start, plus_minutes,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const STEP_S: i64 = 30;

fn tz() -> TimeZone {
    TimeZone::fixed(tz::offset(2))
}

fn cfg() -> RoutineConfig {
    RoutineConfig {
        tz: tz(),
        ..RoutineConfig::default()
    }
}

/// One night's script, in minutes after 21:00.
#[derive(Debug, Clone)]
struct NightPlan {
    bed: i64,
    wake: i64,
    /// (start, length) of bed exits.
    exits: Vec<(i64, i64)>,
}

fn normal(rng: &mut ChaCha8Rng) -> NightPlan {
    let bed = 120 + rng.random_range(-20..=20); // ~23:00
    let wake = 600 + rng.random_range(-20..=20); // ~07:00
    let exits = if rng.random_bool(0.5) {
        vec![(bed + 200 + rng.random_range(0..60), 5)]
    } else {
        Vec::new()
    };
    NightPlan { bed, wake, exits }
}

fn estimates(present: bool, moving: bool, breathing: Option<f64>) -> Estimates {
    Estimates {
        present,
        moving,
        motion: if moving { 0.4 } else { 0.01 },
        breathing_bpm: breathing,
        ..Estimates::default()
    }
}

/// What the pipeline would publish at minute `m` after 21:00 of a night following `plan`.
fn at(plan: &NightPlan, m: i64, step: i64) -> (Estimates, bool) {
    let in_exit = plan.exits.iter().any(|(s, l)| m >= *s && m < s + l);
    if m < plan.bed {
        // Evening: at the desk, up and about now and then.
        let moving = step % 7 == 0;
        (estimates(true, moving, (!moving).then_some(14.5)), true)
    } else if m < plan.wake {
        if in_exit {
            (estimates(true, true, None), true)
        } else {
            // Asleep: breathing caught now and then; the fall monitor keeps the room occupied.
            let caught = step % 5 == 0;
            (estimates(caught, false, caught.then_some(12.5)), true)
        }
    } else if m < plan.wake + 60 {
        let moving = step % 2 == 0;
        (estimates(true, moving, None), true)
    } else {
        (estimates(false, false, None), false)
    }
}

/// Plays one night (20:30 to 10:00 the next morning) into the learner.
fn play_night(
    learner: &mut RoutineLearner,
    night: Date,
    plan: &NightPlan,
    live: bool,
) -> (u32, Vec<Status>) {
    let start = night_start(night, &tz()).unwrap();
    let mut entered = 0;
    let mut statuses = Vec::new();
    let mut step = 0i64;
    let mut s = -30 * 60;
    while s < 13 * 3600 {
        let now = start
            .checked_add(jiff::SignedDuration::from_secs(s))
            .unwrap();
        let (e, occupied) = at(plan, s.div_euclid(60), step);
        let ch = learner.observe(now, &e, occupied, live);
        if ch.anomaly_entered {
            entered += 1;
        }
        statuses.push(learner.status());
        s += STEP_S;
        step += 1;
    }
    (entered, statuses)
}

fn first_night() -> Date {
    Date::new(2026, 3, 2).unwrap()
}

fn nth(n: i64) -> Date {
    first_night()
        .checked_add(jiff::Span::new().days(n))
        .unwrap()
}

fn learned(seed: u64, nights: i64) -> (RoutineLearner, ChaCha8Rng) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut l = RoutineLearner::new(cfg(), Vec::new(), None, None);
    for n in 0..nights {
        let plan = normal(&mut rng);
        play_night(&mut l, nth(n), &plan, true);
    }
    (l, rng)
}

#[test]
fn learning_until_the_third_night_then_nominal_for_weeks_of_normal_nights() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut l = RoutineLearner::new(cfg(), Vec::new(), None, None);
    assert_eq!(l.status(), Status::LearningBaseline);
    for n in 0..3 {
        let plan = normal(&mut rng);
        let (entered, statuses) = play_night(&mut l, nth(n), &plan, true);
        assert_eq!(entered, 0);
        // Until the night ends at 09:00 (1500 steps from 20:30) nothing is judged.
        assert!(
            statuses[..1500]
                .iter()
                .all(|s| *s == Status::LearningBaseline)
        );
    }
    // The third night finished at 09:00; the next checks run on live data.
    assert_eq!(l.nights_observed(), 3);
    assert!(l.ready());
    assert_eq!(l.status(), Status::Nominal, "{}", l.detail());
    let b = l.baseline();
    let wake = b.features["wake_time"];
    assert!((wake.median - 600.0).abs() <= 25.0, "{wake:?}");
    assert_eq!(b.hourly_activity.iter().filter(|h| h.is_some()).count(), 12);

    for n in 3..24 {
        let plan = normal(&mut rng);
        let (entered, statuses) = play_night(&mut l, nth(n), &plan, true);
        assert_eq!(entered, 0, "night {n} {plan:?}: {}", l.detail());
        assert!(statuses.iter().all(|s| *s == Status::Nominal), "night {n}");
    }
    assert_eq!(l.nights_observed(), 21, "history is capped at 21 nights");
}

#[test]
fn a_night_without_wake_up_is_an_anomaly_named_in_the_detail_and_not_learned() {
    let (mut l, mut rng) = learned(5, 5);
    let before = l.nights_observed();
    let mut plan = normal(&mut rng);
    plan.wake = 13 * 60; // still in bed at 10:00
    plan.exits.clear();
    let start = night_start(nth(5), &tz()).unwrap();
    let mut entered = 0;
    let mut first_anomaly: Option<Timestamp> = None;
    for (step, s) in (-30 * 60..12 * 3600).step_by(STEP_S as usize).enumerate() {
        let now = plus_minutes(start, 0)
            .unwrap()
            .checked_add(jiff::SignedDuration::from_secs(s))
            .unwrap();
        let (e, occ) = at(&plan, s.div_euclid(60), step as i64);
        if l.observe(now, &e, occ, true).anomaly_entered {
            entered += 1;
        }
        if l.status() == Status::Anomaly && first_anomaly.is_none() {
            first_anomaly = Some(now);
            assert_eq!(l.signals()[0].name, NO_WAKE, "{:?}", l.signals());
            let detail = l.detail();
            assert!(detail.contains("up by 0"), "{detail}");
        }
    }
    assert_eq!(entered, 1, "one alert per episode");
    let at = first_anomaly.expect("the missing wake-up is flagged");
    let local = at.to_zoned(tz());
    // Usual wake ~07:00, margin max(2σ, 1 h), two consecutive 5-minute checks.
    assert!(
        local.hour() == 8 || (local.hour() == 9 && local.minute() == 0),
        "flagged at {local}"
    );
    // The night ends at 09:00: it was anomalous, so it is not learned.
    l.observe(
        start
            .checked_add(jiff::SignedDuration::from_hours(13))
            .unwrap(),
        &estimates(false, false, None),
        false,
        true,
    );
    assert_eq!(l.nights_observed(), before);
}

#[test]
fn a_restless_night_is_an_anomaly_about_night_time_activity() {
    let (mut l, mut rng) = learned(9, 6);
    let mut plan = normal(&mut rng);
    plan.exits = (0..9).map(|k| (plan.bed + 40 + 45 * k, 4)).collect();
    let (entered, statuses) = play_night(&mut l, nth(6), &plan, true);
    assert_eq!(entered, 1);
    assert!(statuses.contains(&Status::Anomaly));
    // During the night the bouts rule fired with the right name and a readable sentence.
    let mut l2 = learned(9, 6).0;
    let start = night_start(nth(6), &tz()).unwrap();
    let mut seen = None;
    for (step, s) in (-30 * 60..10 * 3600).step_by(STEP_S as usize).enumerate() {
        let now = start
            .checked_add(jiff::SignedDuration::from_secs(s))
            .unwrap();
        let (e, occ) = at(&plan, s.div_euclid(60), step as i64);
        l2.observe(now, &e, occ, true);
        if l2.status() == Status::Anomaly && seen.is_none() {
            seen = Some((l2.signals()[0].name, l2.detail()));
        }
    }
    let (name, detail) = seen.expect("flagged during the night");
    assert_eq!(name, NIGHT_BOUTS);
    assert!(detail.contains("restless"), "{detail}");
}

#[test]
fn simulated_or_replayed_data_never_teaches_the_routine() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut l = RoutineLearner::new(cfg(), Vec::new(), None, None);
    for n in 0..5 {
        let plan = normal(&mut rng);
        let (entered, _) = play_night(&mut l, nth(n), &plan, false);
        assert_eq!(entered, 0);
    }
    assert_eq!(l.nights_observed(), 0);
    assert_eq!(l.status(), Status::LearningBaseline);
    assert!(l.current().is_none());
}

#[test]
fn a_night_with_too_little_live_coverage_does_not_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut l = RoutineLearner::new(cfg(), Vec::new(), None, None);
    let plan = normal(&mut rng);
    let start = night_start(nth(0), &tz()).unwrap();
    // Live only from 03:30 (5.5 of 12 hours: 46%).
    for (step, s) in (0..13 * 3600).step_by(STEP_S as usize).enumerate() {
        let now = start
            .checked_add(jiff::SignedDuration::from_secs(s))
            .unwrap();
        let (e, occ) = at(&plan, s / 60, step as i64);
        l.observe(now, &e, occ, s >= 7 * 3600 - 1800);
    }
    assert_eq!(l.nights_observed(), 0);
}
