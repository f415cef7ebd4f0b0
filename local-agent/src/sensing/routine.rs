//! Routine learning: what a normal night looks like, and whether tonight is unusual.
//!
//! **Nights.** A night is 21:00–09:00 local time, keyed by the date it starts on (22:00 Monday
//! and 03:00 Tuesday both belong to Monday's night). The learner keeps one accumulator per night
//! in one-minute slots (720 of them): whether live data covered the minute, whether anyone was
//! there, whether they moved, and the breathing rates seen while resting. Only live sensor data
//! is ever accumulated; the caller says which observations are live.
//!
//! **Features** (per night, from the slots): sleep onset (first minute starting ≥ 20 minutes of
//! rest, i.e. present and not moving), wake time (end of the last such rest run; a person still
//! resting at 09:00 wakes "at 09:00"), active minutes per hour (12 buckets, 21:00 first),
//! night-time activity bouts between onset and wake (active spells at least 5 quiet minutes
//! apart), the longest still period, mean breathing rate during rest, and the fraction of covered
//! minutes with someone present.
//!
//! **Baseline.** Median and MAD per feature over the last `history_nights` good nights: live
//! coverage ≥ `min_coverage` and no anomaly raised during the night. A robust z-score is
//! `(x − median) / (1.4826 · max(MAD, floor))`; the floor keeps a very regular person's tiny MAD
//! from turning minutes into alarms.
//!
//! **Checks** run every `check_every_s` of live data once `nights_required` nights are learned:
//! - the finished night's features against the baseline (|z| > `z_threshold`; bouts only when
//!   more than usual; the longest stillness is summarised but not judged, see `night_signals`),
//!   shown during the day that follows it;
//! - during the night in progress: no activity after sleep onset by the usual wake time plus
//!   max(2·σ, 1 h) ("no wake-up"), and more activity bouts so far than the baseline allows
//!   (z > `z_threshold`).
//!
//! A signal must fire on two consecutive checks before the status becomes `anomaly`; it stays
//! `anomaly` while any signal fires. A night during which the status was `anomaly` is never
//! learned from.

use std::collections::BTreeMap;

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};
use serde::{Deserialize, Serialize};

use super::pipeline::Estimates;

/// Minutes in the 21:00–09:00 window.
pub const NIGHT_MINUTES: usize = 720;
/// Hour the night starts, local time.
pub const NIGHT_START_HOUR: i8 = 21;
/// Minutes of rest that mark sleep onset.
pub const ONSET_REST_MIN: usize = 20;
/// Quiet minutes that separate two activity bouts.
pub const BOUT_GAP_MIN: usize = 5;
/// Consistency constant: 1.4826 · MAD estimates σ for normal data.
pub const MAD_SCALE: f64 = 1.4826;

/// Feature names, as served in `/baseline` `features` and `/anomaly` `signals`.
pub const SLEEP_ONSET: &str = "sleep_onset";
pub const WAKE_TIME: &str = "wake_time";
pub const NIGHT_BOUTS: &str = "night_bouts";
pub const LONGEST_STILL: &str = "longest_still_min";
pub const REST_BREATHING: &str = "rest_breathing_bpm";
pub const FRACTION_PRESENT: &str = "fraction_present";
pub const ACTIVE_MINUTES: &str = "active_minutes";
/// Compound rule's signal name.
pub const NO_WAKE: &str = "no_wake_up";

/// Tunables. Build with `..RoutineConfig::default()`.
#[derive(Debug, Clone)]
pub struct RoutineConfig {
    /// The user's time zone (the night window is local).
    pub tz: TimeZone,
    pub nights_required: u32,
    /// Good nights kept for the baseline.
    pub history_nights: usize,
    /// Live coverage a night needs to count.
    pub min_coverage: f64,
    pub z_threshold: f64,
    /// Seconds of live data between anomaly checks.
    pub check_every_s: f64,
}

impl Default for RoutineConfig {
    fn default() -> Self {
        Self {
            tz: TimeZone::system(),
            nights_required: 3,
            history_nights: 21,
            min_coverage: 0.6,
            z_threshold: 3.5,
            check_every_s: 300.0,
        }
    }
}

/// One-minute slots of one night in progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NightAccumulator {
    /// Local date the night starts on (YYYY-MM-DD).
    pub night: String,
    /// Per minute: bit 0 covered by live data, bit 1 someone present, bit 2 moving.
    pub slots: Vec<u8>,
    /// Per minute: sum and count of breathing rates seen while present and still.
    pub breath_sum: Vec<f32>,
    pub breath_n: Vec<u16>,
    /// An anomaly was raised during this night: it must not be learned.
    pub anomalous: bool,
}

const COVERED: u8 = 1;
const PRESENT: u8 = 2;
const MOVING: u8 = 4;

impl NightAccumulator {
    pub fn new(night: Date) -> Self {
        Self {
            night: night.to_string(),
            slots: vec![0; NIGHT_MINUTES],
            breath_sum: vec![0.0; NIGHT_MINUTES],
            breath_n: vec![0; NIGHT_MINUTES],
            anomalous: false,
        }
    }

    /// A stored accumulator is only trusted when its arrays have the right length.
    pub fn is_well_formed(&self) -> bool {
        self.slots.len() == NIGHT_MINUTES
            && self.breath_sum.len() == NIGHT_MINUTES
            && self.breath_n.len() == NIGHT_MINUTES
            && self.night.parse::<Date>().is_ok()
    }

    fn record(&mut self, minute: usize, present: bool, moving: bool, breathing: Option<f64>) {
        let Some(slot) = self.slots.get_mut(minute) else {
            return;
        };
        *slot |= COVERED;
        if present || moving {
            *slot |= PRESENT;
        }
        if moving {
            *slot |= MOVING;
        }
        if let Some(b) = breathing.filter(|b| b.is_finite())
            && !moving
        {
            self.breath_sum[minute] += b as f32;
            self.breath_n[minute] = self.breath_n[minute].saturating_add(1);
        }
    }

    pub fn coverage(&self) -> f64 {
        self.slots.iter().filter(|s| **s & COVERED != 0).count() as f64 / NIGHT_MINUTES as f64
    }

    /// The features of the night so far (up to minute `upto`, exclusive).
    pub fn features(&self, upto: usize) -> NightFeatures {
        let upto = upto.min(NIGHT_MINUTES);
        let slots = &self.slots[..upto];
        let covered = |s: u8| s & COVERED != 0;
        let active = |s: u8| covered(s) && s & MOVING != 0;
        let rest = |s: u8| covered(s) && s & PRESENT != 0 && s & MOVING == 0;
        let mut hourly = [0.0; 12];
        for (m, s) in slots.iter().enumerate() {
            if active(*s) {
                hourly[m / 60] += 1.0;
            }
        }
        // Rest runs of at least ONSET_REST_MIN minutes.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut start = None;
        for (m, s) in slots.iter().enumerate() {
            match (rest(*s), start) {
                (true, None) => start = Some(m),
                (false, Some(st)) => {
                    runs.push((st, m));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(st) = start {
            runs.push((st, slots.len()));
        }
        runs.retain(|(a, b)| b - a >= ONSET_REST_MIN);
        let onset = runs.first().map(|r| r.0);
        let wake = runs.last().map(|r| r.1);
        let mut bouts = 0u32;
        if let (Some(on), Some(wk)) = (onset, wake) {
            let mut quiet = BOUT_GAP_MIN;
            for s in &slots[on..wk] {
                if active(*s) {
                    if quiet >= BOUT_GAP_MIN {
                        bouts += 1;
                    }
                    quiet = 0;
                } else {
                    quiet += 1;
                }
            }
        }
        let mut longest = 0usize;
        let mut run = 0usize;
        for s in slots {
            if covered(*s) && !active(*s) {
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        let (mut bsum, mut bn) = (0.0f64, 0u32);
        for (m, s) in slots.iter().enumerate() {
            if rest(*s) && self.breath_n[m] > 0 {
                bsum += f64::from(self.breath_sum[m]) / f64::from(self.breath_n[m]);
                bn += 1;
            }
        }
        let n_cov = slots.iter().filter(|s| covered(**s)).count();
        let n_present = slots
            .iter()
            .filter(|s| covered(**s) && **s & PRESENT != 0)
            .count();
        NightFeatures {
            sleep_onset_min: onset.map(|m| m as f64),
            wake_min: wake.map(|m| m as f64),
            hourly_active: hourly,
            bouts: f64::from(bouts),
            longest_still_min: longest as f64,
            rest_breathing_bpm: (bn > 0).then(|| bsum / f64::from(bn)),
            fraction_present: (n_cov > 0).then(|| n_present as f64 / n_cov as f64),
            coverage: n_cov as f64 / NIGHT_MINUTES as f64,
        }
    }
}

/// What one night looked like. Times are minutes after 21:00.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NightFeatures {
    pub sleep_onset_min: Option<f64>,
    pub wake_min: Option<f64>,
    pub hourly_active: [f64; 12],
    pub bouts: f64,
    pub longest_still_min: f64,
    pub rest_breathing_bpm: Option<f64>,
    pub fraction_present: Option<f64>,
    pub coverage: f64,
}

impl NightFeatures {
    /// The scalar features by name (those with a value).
    pub fn scalars(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        if let Some(x) = self.sleep_onset_min {
            v.push((SLEEP_ONSET, x));
        }
        if let Some(x) = self.wake_min {
            v.push((WAKE_TIME, x));
        }
        v.push((NIGHT_BOUTS, self.bouts));
        v.push((LONGEST_STILL, self.longest_still_min));
        if let Some(x) = self.rest_breathing_bpm {
            v.push((REST_BREATHING, x));
        }
        if let Some(x) = self.fraction_present {
            v.push((FRACTION_PRESENT, x));
        }
        v.push((ACTIVE_MINUTES, self.hourly_active.iter().sum()));
        v
    }
}

/// Smallest MAD used in z-scores, per feature (units of the feature).
fn mad_floor(name: &str) -> f64 {
    match name {
        SLEEP_ONSET | WAKE_TIME => 20.0,
        LONGEST_STILL => 30.0,
        NIGHT_BOUTS => 1.0,
        REST_BREATHING => 1.0,
        FRACTION_PRESENT => 0.05,
        ACTIVE_MINUTES => 5.0,
        _ => 1.0,
    }
}

/// Robust statistics of one feature.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub median: f64,
    pub mad: f64,
    pub n: u32,
}

impl Stat {
    fn of(values: &[f64]) -> Option<Self> {
        let median = median(values)?;
        let dev: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
        Some(Self {
            median,
            mad: median_or_zero(&dev),
            n: values.len() as u32,
        })
    }

    /// Robust z-score of `x` with the feature's MAD floor.
    pub fn z(&self, name: &str, x: f64) -> f64 {
        (x - self.median) / (MAD_SCALE * self.mad.max(mad_floor(name)))
    }
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn median_or_zero(values: &[f64]) -> f64 {
    median(values).unwrap_or(0.0)
}

/// The learned model: robust statistics over the good nights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    pub features: BTreeMap<&'static str, Stat>,
    /// Mean active minutes per hour bucket, 21:00 first.
    pub hourly_activity: [Option<f64>; 12],
    pub nights: u32,
}

impl Baseline {
    pub fn from_nights(nights: &[NightFeatures]) -> Self {
        let mut by_name: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        for n in nights {
            for (name, x) in n.scalars() {
                by_name.entry(name).or_default().push(x);
            }
        }
        let features = by_name
            .into_iter()
            .filter_map(|(k, v)| Stat::of(&v).map(|s| (k, s)))
            .collect();
        let mut hourly = [None; 12];
        if !nights.is_empty() {
            for (h, slot) in hourly.iter_mut().enumerate() {
                let sum: f64 = nights.iter().map(|n| n.hourly_active[h]).sum();
                *slot = Some(sum / nights.len() as f64);
            }
        }
        Self {
            features,
            hourly_activity: hourly,
            nights: nights.len() as u32,
        }
    }
}

/// A night the learner finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedNight {
    pub night: String,
    pub features: NightFeatures,
    /// Counted towards the baseline (enough live coverage, not anomalous).
    pub learned: bool,
    pub anomalous: bool,
}

/// One signal that fired on a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    pub name: &'static str,
    pub value: String,
    pub baseline: String,
    pub z: f64,
    /// One sentence for a person.
    pub sentence: String,
}

/// The `/anomaly` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    LearningBaseline,
    Nominal,
    Anomaly,
}

/// What an observation changed, for the caller to persist and alert on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// A night ended (persist it).
    pub finished: Option<FinishedNight>,
    /// The status just became `anomaly` (raise one alert).
    pub anomaly_entered: bool,
    /// The in-progress night should be checkpointed.
    pub checkpoint: bool,
}

/// The learner: the good nights, the night in progress and the anomaly checks.
#[derive(Debug, Clone)]
pub struct RoutineLearner {
    cfg: RoutineConfig,
    /// Good nights, oldest first (at most `history_nights`).
    learned: Vec<NightFeatures>,
    /// When the baseline last changed.
    updated_at: Option<Timestamp>,
    baseline: Baseline,
    current: Option<NightAccumulator>,
    /// The most recently finished night, judged during the following day.
    last_night: Option<NightFeatures>,
    status: Status,
    signals: Vec<Signal>,
    /// Signal names that fired on the previous check.
    previous: Vec<&'static str>,
    live_s_since_check: f64,
    live_s_since_checkpoint: f64,
    last_live: Option<Timestamp>,
}

/// Seconds of live data between checkpoints of the night in progress.
pub const CHECKPOINT_EVERY_S: f64 = 300.0;

impl RoutineLearner {
    /// A learner with the given good nights (oldest first) and night in progress, as loaded.
    pub fn new(
        cfg: RoutineConfig,
        learned: Vec<NightFeatures>,
        updated_at: Option<Timestamp>,
        current: Option<NightAccumulator>,
    ) -> Self {
        let mut learned = learned;
        if learned.len() > cfg.history_nights {
            learned.drain(..learned.len() - cfg.history_nights);
        }
        let baseline = Baseline::from_nights(&learned);
        let mut me = Self {
            cfg,
            learned,
            updated_at,
            baseline,
            current: current.filter(NightAccumulator::is_well_formed),
            last_night: None,
            status: Status::LearningBaseline,
            signals: Vec::new(),
            previous: Vec::new(),
            live_s_since_check: 0.0,
            live_s_since_checkpoint: 0.0,
            last_live: None,
        };
        me.status = me.idle_status();
        me
    }

    pub fn config(&self) -> &RoutineConfig {
        &self.cfg
    }

    pub fn nights_observed(&self) -> u32 {
        self.learned.len() as u32
    }

    pub fn ready(&self) -> bool {
        self.nights_observed() >= self.cfg.nights_required
    }

    pub fn baseline(&self) -> &Baseline {
        &self.baseline
    }

    pub fn updated_at(&self) -> Option<Timestamp> {
        self.updated_at
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn signals(&self) -> &[Signal] {
        &self.signals
    }

    pub fn current(&self) -> Option<&NightAccumulator> {
        self.current.as_ref()
    }

    fn idle_status(&self) -> Status {
        if self.ready() {
            Status::Nominal
        } else {
            Status::LearningBaseline
        }
    }

    /// The night (start date) and minute within it for `now`, or `None` outside 21:00–09:00.
    pub fn night_slot(&self, now: Timestamp) -> Option<(Date, usize)> {
        let z: Zoned = now.to_zoned(self.cfg.tz.clone());
        let date = z.date();
        let t = z.time();
        let minute_of_day = i32::from(t.hour()) * 60 + i32::from(t.minute());
        let start = i32::from(NIGHT_START_HOUR) * 60;
        if minute_of_day >= start {
            Some((date, (minute_of_day - start) as usize))
        } else if minute_of_day < 9 * 60 {
            let night = date.yesterday().ok()?;
            Some((night, (minute_of_day + 24 * 60 - start) as usize))
        } else {
            None
        }
    }

    /// Feeds the estimates published at wall time `now`. `occupied` is the fall monitor's belief
    /// that someone is in the room (a sleeper's breathing is not always measurable); `live` is
    /// false for simulated or replayed data, which is never learned from.
    pub fn observe(
        &mut self,
        now: Timestamp,
        e: &Estimates,
        occupied: bool,
        live: bool,
    ) -> Changes {
        let mut changes = Changes::default();
        let slot = self.night_slot(now);
        // A night ends when its window is over (or a later night begins).
        let ended = match (&self.current, slot) {
            (Some(cur), Some((date, _))) => cur.night != date.to_string(),
            (Some(_), None) => true,
            _ => false,
        };
        if ended && let Some(cur) = self.current.take() {
            changes.finished = Some(self.finish(cur));
        }
        if !live {
            self.last_live = None;
            return changes;
        }
        let dt = self
            .last_live
            .map(|p| (now.as_millisecond() - p.as_millisecond()) as f64 / 1000.0)
            .filter(|d| *d >= 0.0)
            .unwrap_or(0.0)
            .min(60.0);
        self.last_live = Some(now);
        if let Some((date, minute)) = slot {
            let cur = self
                .current
                .get_or_insert_with(|| NightAccumulator::new(date));
            cur.record(
                minute,
                e.present || occupied,
                e.moving,
                e.breathing_bpm.filter(|_| e.present),
            );
            self.live_s_since_checkpoint += dt;
            if self.live_s_since_checkpoint >= CHECKPOINT_EVERY_S {
                self.live_s_since_checkpoint = 0.0;
                changes.checkpoint = true;
            }
        }
        self.live_s_since_check += dt;
        if self.live_s_since_check >= self.cfg.check_every_s {
            self.live_s_since_check = 0.0;
            changes.anomaly_entered = self.check(slot.map(|s| s.1));
        }
        changes
    }

    fn finish(&mut self, cur: NightAccumulator) -> FinishedNight {
        let features = cur.features(NIGHT_MINUTES);
        // A night flagged during the night, or whose finished features are far off the
        // baseline, is never learned from.
        let anomalous =
            cur.anomalous || (self.ready() && !self.night_signals(&features, None).is_empty());
        let learned = !anomalous && features.coverage >= self.cfg.min_coverage;
        if learned {
            self.learned.push(features.clone());
            if self.learned.len() > self.cfg.history_nights {
                self.learned.remove(0);
            }
            self.baseline = Baseline::from_nights(&self.learned);
            self.updated_at = Some(Timestamp::now());
        }
        tracing::info!(
            night = %cur.night,
            coverage = features.coverage,
            learned,
            anomalous,
            "night finished"
        );
        self.last_night = (features.coverage >= self.cfg.min_coverage).then(|| features.clone());
        FinishedNight {
            night: cur.night,
            features,
            learned,
            anomalous,
        }
    }

    /// Runs one check; true when the status just became `anomaly`.
    fn check(&mut self, minute: Option<usize>) -> bool {
        if !self.ready() {
            self.status = Status::LearningBaseline;
            self.signals.clear();
            self.previous.clear();
            return false;
        }
        let fired = match (&self.current, minute) {
            (Some(cur), Some(m)) => self.night_signals(&cur.features(m + 1), Some(m)),
            _ => match &self.last_night {
                Some(n) => self.night_signals(n, None),
                None => Vec::new(),
            },
        };
        let names_now: Vec<&'static str> = fired.iter().map(|s| s.name).collect();
        // Entering needs the same signal on two consecutive checks; an episode already under
        // way lasts while any signal fires (the finished night's verdict taking over from the
        // in-night rule at 09:00 is the same episode, not a new alert).
        let confirmed: Vec<Signal> = if self.status == Status::Anomaly {
            fired
        } else {
            fired
                .into_iter()
                .filter(|s| self.previous.contains(&s.name))
                .collect()
        };
        self.previous = names_now;
        let was = self.status;
        if confirmed.is_empty() {
            self.status = Status::Nominal;
            self.signals.clear();
        } else {
            self.status = Status::Anomaly;
            self.signals = confirmed;
            if let Some(cur) = self.current.as_mut() {
                cur.anomalous = true;
            }
        }
        was != Status::Anomaly && self.status == Status::Anomaly
    }

    /// Signals for a night's features. `partial_minute` is the current minute of a night in
    /// progress: only rules that make sense before the night is over apply then.
    fn night_signals(&self, f: &NightFeatures, partial_minute: Option<usize>) -> Vec<Signal> {
        let mut out = Vec::new();
        let b = &self.baseline;
        let thr = self.cfg.z_threshold;
        match partial_minute {
            Some(m) => {
                // No wake-up: still at rest past the usual wake time plus a margin.
                if let (Some(stat), Some(onset), Some(wake)) =
                    (b.features.get(WAKE_TIME), f.sleep_onset_min, f.wake_min)
                {
                    let margin = (2.0 * MAD_SCALE * stat.mad.max(mad_floor(WAKE_TIME))).max(60.0);
                    let still_resting = wake as usize >= m.saturating_sub(1);
                    if still_resting && (m as f64) > stat.median + margin && onset < stat.median {
                        out.push(Signal {
                            name: NO_WAKE,
                            value: clock(m as f64),
                            baseline: clock(stat.median),
                            z: stat.z(WAKE_TIME, m as f64),
                            sentence: format!(
                                "No activity since going to rest at {}; on a usual night you are up \
                                 by {}.",
                                clock(onset),
                                clock(stat.median)
                            ),
                        });
                    }
                }
                if let Some(stat) = b.features.get(NIGHT_BOUTS) {
                    let z = stat.z(NIGHT_BOUTS, f.bouts);
                    if z > thr {
                        out.push(bouts_signal(f.bouts, stat, z));
                    }
                }
            }
            None => {
                for (name, x) in f.scalars() {
                    let Some(stat) = b.features.get(name) else {
                        continue;
                    };
                    let z = stat.z(name, x);
                    let fires = match name {
                        // Fewer bouts than usual is not a concern; more is.
                        NIGHT_BOUTS => z > thr,
                        // Whether a night has a bed exit splits the longest stillness in two
                        // (a bimodal feature: one quiet night after three with a bed exit is
                        // "beyond the maximum"), so it is shown in the baseline but not judged;
                        // stillness that matters is the no-wake-up rule's job.
                        LONGEST_STILL => false,
                        _ => z.abs() > thr,
                    };
                    if fires {
                        out.push(if name == NIGHT_BOUTS {
                            bouts_signal(x, stat, z)
                        } else {
                            feature_signal(name, x, stat, z)
                        });
                    }
                }
            }
        }
        out.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()));
        out
    }

    /// One sentence for `/anomaly`.
    pub fn detail(&self) -> String {
        match self.status {
            Status::LearningBaseline => format!(
                "Learning your routine: {} of {} nights observed.",
                self.nights_observed(),
                self.cfg.nights_required
            ),
            Status::Nominal => format!(
                "Nights look like your usual routine ({} nights learned).",
                self.nights_observed()
            ),
            Status::Anomaly => self
                .signals
                .first()
                .map(|s| s.sentence.clone())
                .unwrap_or_else(|| "Tonight differs from your usual routine.".to_string()),
        }
    }
}

fn bouts_signal(x: f64, stat: &Stat, z: f64) -> Signal {
    Signal {
        name: NIGHT_BOUTS,
        value: format!("{x:.0}"),
        baseline: format!("{:.0}", stat.median),
        z,
        sentence: format!(
            "Unusually restless night: {x:.0} periods of activity during the night (usually {:.0}).",
            stat.median
        ),
    }
}

fn feature_signal(name: &'static str, x: f64, stat: &Stat, z: f64) -> Signal {
    let (value, base, what) = match name {
        SLEEP_ONSET => (
            clock(x),
            clock(stat.median),
            "Went to rest at an unusual time",
        ),
        WAKE_TIME => (clock(x), clock(stat.median), "Got up at an unusual time"),
        LONGEST_STILL => (
            format!("{x:.0} min"),
            format!("{:.0} min", stat.median),
            "An unusually long still period",
        ),
        REST_BREATHING => (
            format!("{x:.1} br/min"),
            format!("{:.1} br/min", stat.median),
            "Breathing rate at rest was unusual",
        ),
        FRACTION_PRESENT => (
            format!("{:.0}%", 100.0 * x),
            format!("{:.0}%", 100.0 * stat.median),
            "Time spent in the room at night was unusual",
        ),
        _ => (
            format!("{x:.0} min"),
            format!("{:.0} min", stat.median),
            "The amount of night-time activity was unusual",
        ),
    };
    Signal {
        name,
        sentence: format!("{what}: {value} (usually {base})."),
        value,
        baseline: base,
        z,
    }
}

/// Minutes after 21:00 as a local clock time "HH:MM".
pub fn clock(minutes_after_21: f64) -> String {
    let total = (f64::from(NIGHT_START_HOUR) * 60.0 + minutes_after_21.max(0.0)).round() as i64;
    let total = total.rem_euclid(24 * 60);
    format!("{:02}:{:02}", total / 60, total % 60)
}

/// 21:00 local on `night`, for tests and tools that synthesise nights.
pub fn night_start(night: Date, tz: &TimeZone) -> Option<Timestamp> {
    let t = Time::new(NIGHT_START_HOUR, 0, 0, 0).ok()?;
    night
        .to_datetime(t)
        .to_zoned(tz.clone())
        .ok()
        .map(|z| z.timestamp())
}

/// `start` plus whole minutes.
pub fn plus_minutes(start: Timestamp, minutes: i64) -> Option<Timestamp> {
    start.checked_add(minutes.minutes()).ok()
}
