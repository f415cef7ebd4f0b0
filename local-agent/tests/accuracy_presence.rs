//! A still person stays present; an empty room never is (issue 19).
//!
//! - Still person: walks in, sits down and stays still for 10 minutes breathing at 4 mm (the
//!   shallow end of a seated breath). Target: present on ≥ 99 % of the ticks once seated. Before
//!   the still-presence cue, presence rested on motion (75 s bridge) and on whichever 30 s
//!   windows happened to pass the breathing gates.
//! - Empty rooms: the simulator's empty scene and every quiet ESPectre capture
//!   (`espectre/baseline`, real ESP32 rooms with nobody moving), sampled after every frame from
//!   the first one: no vitals on any tick, and no presence on any tick.

mod sim_support;

use std::path::{Path, PathBuf};

use local_agent::sensing::csi::parse_npz;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::presence;
use local_agent::sensing::source::simulator::{Activity, BodyAction, Segment, SimConfig};
use sim_support::{present_and_vitals, run, still_ten_minutes_scene};

/// Runs `f` for each seed on its own thread (the runs are independent and long) and returns the
/// results in seed order.
fn per_seed<T: Send>(seeds: &[u64], f: impl Fn(u64) -> T + Sync) -> Vec<T> {
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = seeds
            .iter()
            .map(|&seed| scope.spawn(move || f(seed)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("run"))
            .collect()
    })
}

/// Plays "walks in for 20 s, sits still for 10 minutes breathing at 4 mm" for each seed (in
/// parallel) and returns (seed, seated ticks, present, breathing rate shown).
fn still_ten_minutes(seeds: &[u64]) -> Vec<(u64, usize, usize, usize)> {
    per_seed(seeds, |seed| {
        let cfg = still_ten_minutes_scene(seed);
        let ticks = run(cfg, PipelineConfig::default());
        let seated: Vec<_> = ticks
            .iter()
            .filter(|t| t.truth.segment == 1 && t.truth.action == BodyAction::Still)
            .collect();
        let present = seated.iter().filter(|t| t.est.present).count();
        let breathing = seated
            .iter()
            .filter(|t| t.est.breathing_bpm.is_some())
            .count();
        (seed, seated.len(), present, breathing)
    })
}

/// Prints each seed and returns the pooled share of seated ticks read present.
fn present_share(label: &str, results: &[(u64, usize, usize, usize)]) -> (f64, usize) {
    let (mut n, mut p) = (0, 0);
    for (seed, seated, present, breathing) in results {
        eprintln!(
            "still 10 min ({label}) seed {seed}: present on {present}/{seated} seated ticks ({:.4}), breathing rate on {breathing}",
            *present as f64 / (*seated).max(1) as f64
        );
        n += seated;
        p += present;
    }
    let share = p as f64 / n.max(1) as f64;
    eprintln!("still person ({label}), 4 mm breathing: present on {share:.4} of {n} seated ticks");
    (share, n)
}

/// Plays the seated person on `seeds` and asserts the pooled share of seated ticks read present
/// is at least `bound` (and that the people did sit down: about 5,960 seated ticks each).
fn still_set_present_on_at_least(label: &str, seeds: std::ops::RangeInclusive<u64>, bound: f64) {
    let seeds: Vec<u64> = seeds.collect();
    let (share, n) = present_share(label, &still_ten_minutes(&seeds));
    assert!(n > 5_000 * seeds.len(), "the person never sat down");
    assert!(share >= bound, "present on {share:.4}");
}

/// The seeds (41–44). The cue's constants (`sensing::still`, the presence tracker's
/// blip rule) were tuned on seeds 31–40; these were not looked at while tuning.
#[test]
fn a_still_person_stays_present_for_ten_minutes() {
    still_set_present_on_at_least("seeds 41-44", 41..=44, 0.99);
}

/// Eight further seeds nobody looked at while tuning (53–60). Measured 0.9933 (2026-11-26, seed
/// 58 0.946, the others 1.000) since a short motion fragment at the end of a walk-in arms the
/// still bridge (`sensing::presence::EPISODE_GAP_S`, found on tuning seeds 61–100; 0.9878
/// before, seed 53 0.956); 0.9920 since presence held by the bridge no longer arms the still
/// cue (`sensing::still::StillCue::note_bridge`, 2026-11-27). The target is asserted.
#[test]
fn a_still_person_stays_present_on_unseen_seeds() {
    still_set_present_on_at_least("unseen seeds 53-60", 53..=60, 0.99);
}

/// Sixteen seeds first run after the episode-gap rule was fixed (201–216), scored once. Measured
/// 0.9395 (2026-11-26; 0.9355 before the rule): seed 201 reads present on 3.9 % and never shows
/// a breathing rate (its 4 mm breath is below the simulated room's noise on every cue, like
/// tuning seeds 37 and 38), the other fifteen 0.9995 together. The 0.99 is not met on
/// this set; the bound holds the measured figure so that a regression fails. 0.9376 since
/// presence held by the bridge no longer arms the still cue (2026-11-27), 0.9380 with the
/// two-minute presence window (`pipeline::PRESENCE_BREATH_WINDOW`, seed 206 kept throughout).
#[test]
fn a_still_person_stays_present_on_a_fresh_set() {
    still_set_present_on_at_least("fresh seeds 201-216", 201..=216, FRESH_BOUND);
}

/// See `a_still_person_stays_present_on_a_fresh_set`.
const FRESH_BOUND: f64 = 0.935;

/// The same seated person with no walk-in: someone already sitting still when the agent starts
/// (a restart, an agent started in an occupied room), seeds 1–40, ticks from 60 s on. Nothing
/// moved, so once their breathing has been lost for `presence::SEALED_AFTER_S` they read absent
/// until they move or the two-minute presence window finds their rhythm
/// (`pipeline::PRESENCE_BREATH_WINDOW`). Measured 0.9265 (0.8524 with the seal alone, 0.9017
/// before it; seeds 8, 11, 25, 26, 37 and 38 lose most); the bound holds the measured figure.
#[test]
fn a_person_seated_from_the_first_frame_is_found_and_kept() {
    let (share, n) = seated_from_the_first_frame(1..=40);
    assert!(n > 200_000 && share >= 0.92, "present on {share:.4} of {n}");
}

/// Plays the seated person without the walk-in on `seeds`; returns the pooled share of ticks
/// from 60 s on read present, and their count (each seed below 1 printed).
fn seated_from_the_first_frame(seeds: impl IntoIterator<Item = u64>) -> (f64, usize) {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let results: Vec<(u64, usize, usize)> = per_seed(&seeds, |seed| {
        let mut cfg = still_ten_minutes_scene(seed);
        cfg.script.remove(0);
        let ticks = run(cfg, PipelineConfig::default());
        let after: Vec<&sim_support::Tick> = ticks.iter().filter(|t| t.t >= 60.0).collect();
        let present = after.iter().filter(|t| t.est.present).count();
        (seed, after.len(), present)
    });
    let (mut n, mut p) = (0, 0);
    for (seed, ticks, present) in &results {
        if present < ticks {
            eprintln!(
                "seated from the start, seed {seed}: present on {present}/{ticks} ticks from 60 s"
            );
        }
        n += ticks;
        p += present;
    }
    let share = p as f64 / n.max(1) as f64;
    eprintln!("seated from the start: present on {share:.4} of {n} ticks from 60 s");
    (share, n)
}

/// Forty seated people (401–440), never tuned on: first run 2026-11-26 for an earlier form of
/// the two-minute presence window that was not kept, since then only scored. With the window
/// (`pipeline::PRESENCE_BREATH_WINDOW`, 2026-11-27): 0.9442 (0.9207 without it; seeds 421 and
/// 434 show no rhythm on either window). The bound holds the measured figure.
#[test]
fn a_still_person_stays_present_on_forty_more_seeds() {
    still_set_present_on_at_least("seeds 401-440", 401..=440, 0.94);
}

/// The seeds in `SEEDS` (`31-40,61-100`), for the by-hand runs below.
fn seeds_from_env() -> Vec<u64> {
    let spec = std::env::var("SEEDS").unwrap_or_default();
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
            (Ok(a), Ok(b)) => out.extend(a..=b),
            _ => panic!("SEEDS: {part:?} is not a seed or a range a-b"),
        }
    }
    assert!(!out.is_empty(), "set SEEDS, e.g. SEEDS=31-40,61-100");
    out
}

/// By hand, for the README's figures on sets no test asserts (tuning seeds, sets run once):
/// `SEEDS=31-40,61-100 cargo test -p local-agent --test accuracy_presence -- --ignored
/// --nocapture on_seeds` plays the still person, the quiet room, the walk-out and the person
/// seated from the first frame on those seeds (add the test's name to run one of them).
#[test]
#[ignore]
fn still_person_on_seeds() {
    present_share("SEEDS", &still_ten_minutes(&seeds_from_env()));
}

/// See `still_person_on_seeds`.
#[test]
#[ignore]
fn quiet_rooms_on_seeds() {
    quiet_rooms_that_read_present("SEEDS", seeds_from_env());
}

/// See `still_person_on_seeds`.
#[test]
#[ignore]
fn walk_outs_on_seeds() {
    walk_outs_held_after_the_bridge("SEEDS", seeds_from_env());
}

/// See `still_person_on_seeds`.
#[test]
#[ignore]
fn seated_from_the_first_frame_on_seeds() {
    seated_from_the_first_frame(seeds_from_env());
}

/// Someone who sat still for two and a half minutes (long enough for every breathing window to
/// fill) walks out: once the still bridge has run out the room should read empty and stay empty
/// for the four minutes after. Found 2026-11-26 and **not met**: on seeds 1–16 seed 9 reads
/// present again on 1,016 ticks (about 100 s) after the bridge (440 since the still cue learns
/// the empty room's level while it reads empty: `sensing::still::EMPTY_WINDOW`), and on seeds
/// 17–56, run to see how common it is, 5 of 40 did (17, 19, 31, 46, 54; 3,681 ticks, unchanged
/// by that rule: it needs a minute of the room read empty before it counts). In each case the
/// just-emptied room passed the breathing gates (seed 9: SNR 10–35 at coherence 0.3–0.7 under
/// the still cue's hold floor; seed 19: a "clear" breath at 8 br/min, SNR 62, coherence 0.89),
/// the same thing `ten_quiet_minutes_on_forty_more_seeds` measures in rooms nobody entered.
/// Since a room that has shown a red breathing band while empty measures breathing against a
/// fitted floor (`sensing::vitals::RoomFloor`, 2026-11-27): seed 9 on 271 ticks; 17–56
/// unchanged (the room must read empty for half a minute first, and this scene starts with
/// someone seated). Since a room is sealed after a minute without motion or breathing-based
/// presence (`sensing::presence::SEALED_AFTER_S`, 2026-11-27): seed 9 on 62 ticks; 17–56
/// unchanged (5 rooms, 3,621 ticks: their presence never lapses after the walk-out, so the
/// seal never closes). Since the breathing windows of a room held by the still bridge are
/// measured against their own fitted floor (`sensing::vitals::VitalsEstimator::note_bridge`):
/// none on 1–16 (asserted), and 4 rooms (2,461 ticks) on 17–56 instead of 5 (3,621); on forty
/// walk-outs first run for these two changes (57–96), 4 rooms (3,781 ticks) instead of 5
/// (4,143). Since presence held by the bridge no longer arms the still cue (only an accepted
/// breath does: `sensing::still::StillCue::note_bridge`): 1–16 none, 17–56 one room (31, 228
/// ticks), 57–96 none (`walk_outs_on_eighty_more_seeds`).
#[test]
fn walk_outs_read_present_after_the_bridge_no_more_often_than_measured() {
    let (rooms, ticks) = walk_outs_held_after_the_bridge("1-16", 1..=16);
    assert_eq!((rooms, ticks), (0, 0));
}

/// The walk-outs of `walk_outs_read_present_after_the_bridge_no_more_often_than_measured` on
/// seeds 17–96 (57–96 first run 2026-11-27 and scored once): one room of 80 (seed 31, 228
/// ticks, about 23 s after the bridge). The bound holds the measured figures.
#[test]
fn walk_outs_on_eighty_more_seeds() {
    let (rooms, ticks) = walk_outs_held_after_the_bridge("17-96", 17..=96);
    assert!(rooms <= 1 && ticks <= 230, "{rooms} rooms, {ticks} ticks");
}

/// Someone seated 150 s walks out and the room stays empty 240 s, for each seed: how many rooms
/// read present after the still bridge ran out, and on how many ticks (each room printed).
fn walk_outs_held_after_the_bridge(
    label: &str,
    seeds: impl IntoIterator<Item = u64>,
) -> (usize, usize) {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let late: Vec<(u64, usize, Option<f64>)> = per_seed(&seeds, |seed| {
        // The still-person scene's seated person (4 mm breath, 25 Hz), seated from the start.
        let mut cfg = still_ten_minutes_scene(seed);
        let seated = cfg.script[1].activity.clone();
        cfg.script = vec![
            Segment {
                duration_s: 150.0,
                activity: seated,
            },
            Segment {
                duration_s: 10.0,
                activity: Activity::Leave,
            },
            Segment {
                duration_s: 240.0,
                activity: Activity::Absent,
            },
        ];
        let ticks = run(cfg, PipelineConfig::default());
        let gone = ticks
            .iter()
            .find(|t| t.truth.segment == 2 && !t.truth.present)
            .map_or(f64::INFINITY, |t| t.t);
        // The bridge holds a still room for 75 s after the last motion; allow the debounce.
        let present = ticks
            .iter()
            .filter(|t| t.t > gone + presence::STILL_BRIDGE_S + 1.0 && t.est.present)
            .count();
        let last = ticks
            .iter()
            .rev()
            .find(|t| t.est.present)
            .map(|t| t.t - gone);
        (seed, present, last)
    });
    let held: Vec<&(u64, usize, Option<f64>)> = late.iter().filter(|(_, p, _)| *p > 0).collect();
    for (seed, present, last) in &held {
        eprintln!(
            "walk-out seed {seed}: present on {present} ticks after the bridge, last present {last:?} s after leaving"
        );
    }
    let ticks: usize = held.iter().map(|(_, p, _)| p).sum();
    eprintln!(
        "walk-outs, seeds {label}: {} of {} read present after the bridge, on {ticks} ticks",
        held.len(),
        seeds.len()
    );
    (held.len(), ticks)
}

/// The ten quiet minutes of `ten_quiet_minutes_stay_empty` on forty seeds that no presence or
/// vitals rule was tuned or scored on (17–56), first run 2026-11-26. The target (0 presence, 0
/// vitals on every tick) is **not met**: 8 of the 40 rooms read present at some point (seeds 17,
/// 19, 27, 31, 37, 54, 55, 56) and 7 of them show a breathing rate. Each begins with the empty
/// room passing the breathing gates: the simulator's creeping reflection (one path, so coherent
/// on every subcarrier) wanders slowly enough to leave a narrow peak at 6–9 br/min now and then
/// (seed 19 at 200 s: SNR 62, coherence 0.89, a "clear" breath), and the still cue then held the
/// room on cues of 10–50, above its floor of 6: 13,444 of 240,000 ticks (5.6 %), vitals on 1,186.
/// Since the cue's bar follows what the room showed while it read empty
/// (`sensing::still::EMPTY_WINDOW`): 6,231 ticks (2.6 %), vitals on 1,150. Since a room that
/// has shown a red breathing band while empty measures each breathing window against its own
/// fitted power-law floor (`sensing::vitals::RoomFloor`, 2026-11-27; chosen on seeds 17–36,
/// where it left seed 31 only, whose uncalibrated start reads as motion): 4 of 40 rooms (31,
/// 37, 54, 56), 1,959 ticks (0.8 %), vitals on 130; seeds 37–56 alone, not looked at while
/// choosing: 3 rooms, 1,145 ticks, vitals on 130, against 4, 3,347 and 648 before. Seeds 1–16,
/// on which the breathing rules were tuned and scored, are clean. Since a room that has shown
/// neither motion nor breathing-based presence for a minute is sealed until something moves
/// (`sensing::presence::SEALED_AFTER_S`, 2026-11-27; chosen on the walk-outs of seeds 1–16 and
/// on seeds 17–36): one room (31, whose uncalibrated start reads as motion), 814 ticks, vitals
/// on none; seeds 37–56, scored: none. The bound holds the measured figures so that a
/// regression fails.
#[test]
fn ten_quiet_minutes_on_forty_more_seeds() {
    let (rooms, present, vitals) = quiet_rooms_that_read_present("17-56", 17..=56);
    assert!(rooms <= 1 && present <= 850 && vitals == 0);
}

/// Plays the ten quiet minutes on `seeds` and returns how many rooms read present at some
/// point, and on how many ticks they showed presence and vitals (each room printed).
fn quiet_rooms_that_read_present(
    label: &str,
    seeds: impl IntoIterator<Item = u64>,
) -> (usize, usize, usize) {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let results = quiet_ten_minutes(&seeds);
    let bad: Vec<(u64, usize, usize)> = results
        .iter()
        .filter(|(_, _, p, v)| *p > 0 || *v > 0)
        .map(|(seed, _, p, v)| (*seed, *p, *v))
        .collect();
    let present: usize = bad.iter().map(|r| r.1).sum();
    let vitals: usize = bad.iter().map(|r| r.2).sum();
    let ticks: usize = results.iter().map(|r| r.1).sum();
    eprintln!(
        "quiet 10 min, seeds {label}: {} of {} rooms read present at some point, on {present} of {ticks} ticks; vitals on {vitals}: (seed, present, vitals) {bad:?}",
        bad.len(),
        seeds.len()
    );
    (bad.len(), present, vitals)
}

/// Forty quiet rooms first run after the fitted floor was chosen (seeds 301–340), scored once
/// (2026-11-27): 3 of 40 read present at some point (307, 310, 314), on 1,345 of 240,000 ticks,
/// vitals on 240; without the fitted floor the same rooms read present in 8 cases, on 7,134
/// ticks, vitals on 1,595. Since the seal after a minute without motion
/// (`sensing::presence::SEALED_AFTER_S`, 2026-11-27, scored here): none of the 40, which is the
/// issue's target and asserted.
#[test]
fn ten_quiet_minutes_on_a_fresh_forty() {
    let (rooms, present, vitals) = quiet_rooms_that_read_present("301-340", 301..=340);
    assert_eq!((rooms, present, vitals), (0, 0, 0));
}

#[test]
fn the_simulated_empty_room_is_empty_on_every_tick() {
    for seed in [1u64, 2, 3, 4] {
        let Some(mut cfg) = SimConfig::for_scene("empty", seed) else {
            panic!("no empty scene")
        };
        cfg.rate_hz = 50.0;
        let ticks = run(cfg, PipelineConfig::default());
        let (present, vitals) = present_and_vitals(&ticks);
        let first = ticks.iter().find(|t| t.est.present).map(|t| t.t);
        eprintln!(
            "sim empty seed {seed}: present on {present}/{} ticks (first at {first:?}), vitals on {vitals}",
            ticks.len()
        );
        assert_eq!((present, vitals), (0, 0), "seed {seed}");
        // A minute after calibration the room is sealed: only motion can make it present.
        let sealed_at = ticks.iter().find(|t| t.est.sealed).map(|t| t.t);
        assert!(
            sealed_at.is_some_and(|s| s <= 70.0) && ticks.last().is_some_and(|t| t.est.sealed),
            "seed {seed}: sealed at {sealed_at:?}"
        );
    }
}

/// Ten minutes of an empty room at 25 Hz for each seed: (seed, ticks, present, vitals).
fn quiet_ten_minutes(seeds: &[u64]) -> Vec<(u64, usize, usize, usize)> {
    per_seed(seeds, |seed| {
        let cfg = SimConfig {
            seed,
            rate_hz: 25.0,
            script: vec![Segment {
                duration_s: 600.0,
                activity: Activity::Absent,
            }],
            ..SimConfig::default()
        };
        let ticks = run(cfg, PipelineConfig::default());
        let (present, vitals) = present_and_vitals(&ticks);
        (seed, ticks.len(), present, vitals)
    })
}

/// Longer quiet rooms than the scene's 120 s: 10 minutes at 25 Hz. Seeds 1–4 were used to tune
/// the breathing rhythm rule (`sensing::vitals::RHYTHM_SPAN_S` and the clear-breath gates);
/// seeds 5–8 (the earlier scored set) and 9–16 (never run while tuning) are scored. The
/// target, 0 presence and 0 vitals on every tick, is met on all of them (2026-11-26) and asserted
/// on the scored seeds.
#[test]
fn ten_quiet_minutes_stay_empty() {
    let seeds: Vec<u64> = (1..=16).collect();
    let results = quiet_ten_minutes(&seeds);
    let mut scored = (0, 0, 0);
    for (label, range) in [
        ("tuning seeds 1-4", 1..=4),
        ("scored seeds 5-8", 5..=8),
        ("unseen seeds 9-16", 9..=16),
    ] {
        let (mut n, mut p, mut v) = (0, 0, 0);
        for (seed, ticks, present, vitals) in results.iter().filter(|r| range.contains(&r.0)) {
            eprintln!(
                "quiet 10 min seed {seed}: present on {present}/{ticks} ticks, vitals on {vitals}"
            );
            n += ticks;
            p += present;
            v += vitals;
        }
        eprintln!("quiet 10 min, {label}: present on {p}/{n} ticks, vitals on {v}");
        if *range.start() > 4 {
            scored = (scored.0 + n, scored.1 + p, scored.2 + v);
        }
    }
    let (n, p, v) = scored;
    assert!(n > 70_000);
    assert_eq!((p, v), (0, 0), "scored seeds 5-16: present, vitals");
}

fn baseline_files() -> Vec<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi/espectre/baseline"
    ));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "npz"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 10);
    v
}

/// Every quiet ESPectre capture from its first frame, with the production pipeline (its warm-up
/// and 2 s calibration included): vitals never, motion never, presence never.
#[test]
fn every_quiet_espectre_room_has_no_vitals_and_no_presence_from_the_first_frame() {
    let mut failures = Vec::new();
    for path in baseline_files() {
        let rec = parse_npz(&std::fs::read(&path).expect("read"), "b").expect("npz");
        let mut p = Pipeline::new(PipelineConfig::default());
        let (mut present, mut vitals, mut moving) = (0, 0, 0);
        for f in &rec.frames {
            p.push(f);
            let e = p.estimates();
            present += usize::from(e.present);
            moving += usize::from(e.moving);
            vitals += usize::from(e.breathing_bpm.is_some() || e.heart_bpm.is_some());
        }
        let name = path.file_name().map(|f| f.to_string_lossy().into_owned());
        eprintln!(
            "{name:?}: {} frames, present on {present}, moving on {moving}, vitals on {vitals}",
            rec.frames.len()
        );
        if vitals > 0 || present > 0 || moving > 0 {
            failures.push(format!(
                "{name:?}: present on {present}, moving on {moving}, vitals on {vitals} frames"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
