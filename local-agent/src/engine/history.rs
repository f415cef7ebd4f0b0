//! What the live view plots over time: one sample per second for the last 15 minutes and one
//! bucket per minute for the last 24 hours. Recorded whether or not anyone watches (one read of
//! the latest snapshot per second), so a view opened later still shows the day.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use crate::engine::runner::SnapshotReceiver;

/// Seconds kept at full resolution.
pub const RECENT_S: usize = 15 * 60;
/// Minutes kept.
pub const DAY_MIN: usize = 24 * 60;
/// Motion at or above this counts as an active second (the contract's "moving" floor).
pub const ACTIVE_MOTION: f64 = 0.05;

/// One second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Unix time, ms.
    pub t: i64,
    /// Frames were arriving; when false the other fields mean nothing.
    pub data: bool,
    pub present: bool,
    pub motion: f64,
    pub breathing_bpm: Option<f64>,
    pub heart_bpm: Option<f64>,
}

/// One minute.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Minute {
    /// Unix time of the minute's start, ms.
    pub t: i64,
    /// Share of the minute's seconds with data.
    pub covered: f64,
    /// Share of the covered seconds with someone present.
    pub present: f64,
    /// Seconds with motion ≥ [`ACTIVE_MOTION`].
    pub active_s: u32,
    pub motion_max: f64,
}

#[derive(Debug, Default)]
struct Acc {
    t: i64,
    seconds: u32,
    covered: u32,
    present: u32,
    active: u32,
    motion_max: f64,
}

impl Acc {
    fn finish(&self) -> Minute {
        let covered = f64::from(self.covered);
        Minute {
            t: self.t,
            covered: round2(covered / f64::from(self.seconds.max(1))),
            present: if self.covered > 0 {
                round2(f64::from(self.present) / covered)
            } else {
                0.0
            },
            active_s: self.active,
            motion_max: round2(self.motion_max),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    recent: VecDeque<Sample>,
    day: VecDeque<Minute>,
    acc: Option<Acc>,
    calibrating_since: Option<Instant>,
}

/// The recorder's memory; shared with the view and the doctor.
#[derive(Debug, Default)]
pub struct History {
    inner: Mutex<Inner>,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl History {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one second; `calibrating` is the engine's state with frames arriving.
    pub fn record(&self, sample: Sample, calibrating: bool, now: Instant) {
        let mut g = self.lock();
        if g.recent.len() >= RECENT_S {
            g.recent.pop_front();
        }
        g.recent.push_back(sample);
        let minute = sample.t - sample.t.rem_euclid(60_000);
        if g.acc.as_ref().is_some_and(|a| a.t != minute)
            && let Some(done) = g.acc.take()
        {
            if g.day.len() >= DAY_MIN {
                g.day.pop_front();
            }
            let m = done.finish();
            g.day.push_back(m);
        }
        let acc = g.acc.get_or_insert_with(|| Acc {
            t: minute,
            ..Acc::default()
        });
        acc.seconds += 1;
        if sample.data {
            acc.covered += 1;
            acc.present += u32::from(sample.present);
            acc.active += u32::from(sample.motion >= ACTIVE_MOTION);
            acc.motion_max = acc.motion_max.max(sample.motion);
        }
        g.calibrating_since = match (calibrating && sample.data, g.calibrating_since) {
            (true, None) => Some(now),
            (true, since) => since,
            (false, _) => None,
        };
    }

    /// Seconds after `after` (Unix ms), oldest first.
    pub fn samples_after(&self, after: i64) -> Vec<Sample> {
        self.lock()
            .recent
            .iter()
            .filter(|s| s.t > after)
            .copied()
            .collect()
    }

    /// Completed minutes after `after` (Unix ms), plus the minute in progress.
    pub fn minutes_after(&self, after: i64) -> (Vec<Minute>, Option<Minute>) {
        let g = self.lock();
        let done = g.day.iter().filter(|m| m.t > after).copied().collect();
        (done, g.acc.as_ref().map(Acc::finish))
    }

    /// How long the engine has been calibrating with frames arriving.
    pub fn calibrating_for(&self) -> Option<Duration> {
        self.lock().calibrating_since.map(|s| s.elapsed())
    }

    /// Active minutes per hour of tonight's night window (21:00–09:00 local, 21:00 first), from
    /// the recorded minutes; `null` for hours not yet reached or without data.
    pub fn tonight(&self, tz: &jiff::tz::TimeZone) -> [Option<f64>; 12] {
        let g = self.lock();
        let mut out = [None; 12];
        let now = jiff::Timestamp::now().to_zoned(tz.clone());
        // The night that contains now, or the one that ended this morning.
        let start_date = if now.hour() >= 21 {
            now.date()
        } else {
            now.date().yesterday().unwrap_or(now.date())
        };
        let Ok(start) = start_date.at(21, 0, 0, 0).to_zoned(tz.clone()) else {
            return out;
        };
        let start_ms = start.timestamp().as_millisecond();
        let minutes = g.day.iter().copied().chain(g.acc.as_ref().map(Acc::finish));
        for m in minutes {
            let offset = m.t - start_ms;
            if !(0..12 * 3_600_000).contains(&offset) || m.covered == 0.0 {
                continue;
            }
            let hour = usize::try_from(offset / 3_600_000).unwrap_or(0).min(11);
            let slot = out[hour].get_or_insert(0.0);
            *slot = round1(*slot + f64::from(m.active_s) / 60.0);
        }
        out
    }
}

/// Records one sample per second until `shutdown` turns true.
pub async fn record(
    history: std::sync::Arc<History>,
    snapshots: SnapshotReceiver,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
        }
        let now = Instant::now();
        let (sample, calibrating) = {
            let snap = snapshots.borrow();
            let data = snap.is_fresh(now);
            let e = &snap.estimates;
            (
                Sample {
                    t: jiff::Timestamp::now().as_millisecond(),
                    data,
                    present: data && e.present,
                    motion: if data {
                        round2(e.motion.clamp(0.0, 1.0))
                    } else {
                        0.0
                    },
                    breathing_bpm: e.breathing_bpm.filter(|_| data).map(round1),
                    heart_bpm: e.heart_bpm.filter(|_| data).map(round1),
                },
                e.calibrating,
            )
        };
        history.record(sample, calibrating, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: i64, present: bool, motion: f64) -> Sample {
        Sample {
            t,
            data: true,
            present,
            motion,
            breathing_bpm: None,
            heart_bpm: None,
        }
    }

    #[test]
    fn seconds_roll_into_minutes() {
        let h = History::default();
        let now = Instant::now();
        // A minute boundary (1_800_000_000_000 ms is one).
        let t0 = 1_800_000_000_000;
        for i in 0..120 {
            h.record(
                s(t0 + i * 1000, i < 30, if i < 10 { 0.5 } else { 0.0 }),
                false,
                now,
            );
        }
        let (done, current) = h.minutes_after(0);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].t, t0);
        assert_eq!(done[0].present, 0.5);
        assert_eq!(done[0].active_s, 10);
        assert_eq!(done[0].motion_max, 0.5);
        assert_eq!(current.map(|m| m.present), Some(0.0));
        assert_eq!(h.samples_after(t0 + 118_000).len(), 1);
    }

    #[test]
    fn calibrating_since_resets() {
        let h = History::default();
        let now = Instant::now();
        h.record(s(0, false, 0.0), true, now);
        assert!(h.calibrating_for().is_some());
        h.record(s(1000, false, 0.0), false, now);
        assert!(h.calibrating_for().is_none());
    }
}
