//! The away-mode schedule: weekly windows in local time that switch away mode on and off.
//!
//! The schedule flips the switch at the edges of its windows, like a thermostat: entering a window
//! turns away mode on, leaving it turns it off, and in between `local-agent away on|off` overrides
//! it until the next edge (coming home early is `away off`; it stays off until the next window
//! starts).

use jiff::civil::{DateTime, Time, Weekday};

/// Why a schedule entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("entry {entry}: unknown day {day:?}; use mon, tue, wed, thu, fri, sat, sun")]
    BadDay { entry: usize, day: String },
    #[error("entry {entry}: days is empty")]
    NoDays { entry: usize },
    #[error("entry {entry}: {field} = {value:?} is not a time of day like \"08:30\"")]
    BadTime {
        entry: usize,
        field: &'static str,
        value: String,
    },
    #[error("entry {entry}: from and to are both {time}; a window needs a length")]
    Empty { entry: usize, time: String },
}

/// One weekly window. `to` earlier than `from` means the window runs past midnight into the next
/// day (`days` names the day it starts).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    days: [bool; 7],
    from: Time,
    to: Time,
}

/// A set of weekly windows in local time. Empty: away mode only changes by hand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwaySchedule {
    windows: Vec<Window>,
}

fn day_index(w: Weekday) -> usize {
    w.to_monday_zero_offset() as usize
}

fn parse_day(s: &str) -> Option<Weekday> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "mon" | "monday" => Weekday::Monday,
        "tue" | "tuesday" => Weekday::Tuesday,
        "wed" | "wednesday" => Weekday::Wednesday,
        "thu" | "thursday" => Weekday::Thursday,
        "fri" | "friday" => Weekday::Friday,
        "sat" | "saturday" => Weekday::Saturday,
        "sun" | "sunday" => Weekday::Sunday,
        _ => return None,
    })
}

fn parse_time(s: &str) -> Option<Time> {
    let (h, m) = s.trim().split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    let h: i8 = h.parse().ok()?;
    let m: i8 = m.parse().ok()?;
    // "24:00" is the end of the day.
    if h == 24 && m == 0 {
        return Some(Time::MAX);
    }
    Time::new(h, m, 0, 0).ok()
}

/// One window as the live view shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScheduleEntry {
    /// `mon` … `sun`.
    pub days: Vec<&'static str>,
    /// `HH:MM`, local time.
    pub from: String,
    pub to: String,
}

const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

fn hhmm(t: Time) -> String {
    if t == Time::MAX {
        "24:00".to_string()
    } else {
        format!("{:02}:{:02}", t.hour(), t.minute())
    }
}

impl AwaySchedule {
    /// The windows, for display.
    pub fn entries(&self) -> Vec<ScheduleEntry> {
        self.windows
            .iter()
            .map(|w| ScheduleEntry {
                days: DAY_NAMES
                    .iter()
                    .zip(w.days.iter())
                    .filter(|(_, on)| **on)
                    .map(|(d, _)| *d)
                    .collect(),
                from: hhmm(w.from),
                to: hhmm(w.to),
            })
            .collect()
    }

    /// Entries as `(days, from, to)` with days like `"mon"` and times like `"08:30"`.
    pub fn parse<'a>(
        entries: impl IntoIterator<Item = (&'a [String], &'a str, &'a str)>,
    ) -> Result<Self, ScheduleError> {
        let mut windows = Vec::new();
        for (i, (days, from, to)) in entries.into_iter().enumerate() {
            let entry = i + 1;
            if days.is_empty() {
                return Err(ScheduleError::NoDays { entry });
            }
            let mut mask = [false; 7];
            for d in days {
                let day = parse_day(d).ok_or_else(|| ScheduleError::BadDay {
                    entry,
                    day: d.clone(),
                })?;
                mask[day_index(day)] = true;
            }
            let bad = |field, value: &str| ScheduleError::BadTime {
                entry,
                field,
                value: value.to_string(),
            };
            let from_t = parse_time(from).ok_or_else(|| bad("from", from))?;
            let to_t = parse_time(to).ok_or_else(|| bad("to", to))?;
            if from_t == to_t {
                return Err(ScheduleError::Empty {
                    entry,
                    time: from.trim().to_string(),
                });
            }
            windows.push(Window {
                days: mask,
                from: from_t,
                to: to_t,
            });
        }
        Ok(Self { windows })
    }

    pub fn len(&self) -> usize {
        self.windows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// True when local time `at` falls inside a window.
    pub fn is_active_at(&self, at: DateTime) -> bool {
        let today = day_index(at.weekday());
        let yesterday = (today + 6) % 7;
        let t = at.time();
        self.windows.iter().any(|w| {
            if w.from < w.to {
                w.days[today] && w.from <= t && t < w.to
            } else {
                (w.days[today] && t >= w.from) || (w.days[yesterday] && t < w.to)
            }
        })
    }
}

/// Turns the schedule's state into switch commands at its edges only.
#[derive(Debug, Default)]
pub struct ScheduleEdges {
    last: Option<bool>,
}

impl ScheduleEdges {
    /// `Some(on)` when away mode should be set now: on start inside a window, and at every edge.
    /// Starting outside a window leaves the switch alone.
    pub fn observe(&mut self, active: bool) -> Option<bool> {
        let previous = self.last.replace(active);
        match previous {
            None => active.then_some(true),
            Some(p) if p != active => Some(active),
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn schedule(entries: &[(&[&str], &str, &str)]) -> Result<AwaySchedule, ScheduleError> {
        let owned: Vec<(Vec<String>, &str, &str)> = entries
            .iter()
            .map(|(d, f, t)| (d.iter().map(|s| s.to_string()).collect(), *f, *t))
            .collect();
        AwaySchedule::parse(owned.iter().map(|(d, f, t)| (d.as_slice(), *f, *t)))
    }

    #[test]
    fn a_weekday_office_window_covers_only_its_days_and_hours() {
        let s = schedule(&[(&["mon", "tue", "wed", "thu", "fri"], "08:30", "17:30")]).unwrap();
        // 2026-11-23 is a Monday.
        let monday = date(2026, 11, 23);
        assert!(!s.is_active_at(monday.at(8, 29, 59, 0)));
        assert!(s.is_active_at(monday.at(8, 30, 0, 0)));
        assert!(s.is_active_at(monday.at(17, 29, 0, 0)));
        assert!(!s.is_active_at(monday.at(17, 30, 0, 0)));
        let saturday = date(2026, 11, 28);
        assert!(!s.is_active_at(saturday.at(12, 0, 0, 0)));
    }

    #[test]
    fn a_window_past_midnight_belongs_to_the_day_it_starts() {
        let s = schedule(&[(&["fri"], "22:00", "06:00")]).unwrap();
        let friday = date(2026, 11, 27);
        let saturday = date(2026, 11, 28);
        let sunday = date(2026, 11, 29);
        assert!(s.is_active_at(friday.at(23, 0, 0, 0)));
        assert!(s.is_active_at(saturday.at(5, 59, 0, 0)));
        assert!(!s.is_active_at(saturday.at(6, 0, 0, 0)));
        assert!(!s.is_active_at(saturday.at(23, 0, 0, 0)));
        assert!(!s.is_active_at(sunday.at(1, 0, 0, 0)));
        assert!(!s.is_active_at(friday.at(1, 0, 0, 0)));
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        assert!(matches!(
            schedule(&[(&["someday"], "08:00", "09:00")]),
            Err(ScheduleError::BadDay { entry: 1, .. })
        ));
        assert!(matches!(
            schedule(&[(&["mon"], "8h", "09:00")]),
            Err(ScheduleError::BadTime { field: "from", .. })
        ));
        assert!(matches!(
            schedule(&[(&["mon"], "08:00", "25:00")]),
            Err(ScheduleError::BadTime { field: "to", .. })
        ));
        assert!(matches!(
            schedule(&[(&["mon"], "08:00", "08:00")]),
            Err(ScheduleError::Empty { .. })
        ));
        assert!(matches!(
            schedule(&[(&[], "08:00", "09:00")]),
            Err(ScheduleError::NoDays { .. })
        ));
        let all_day = schedule(&[(&["Sunday"], "00:00", "24:00")]).unwrap();
        assert!(all_day.is_active_at(date(2026, 11, 29).at(23, 59, 59, 0)));
    }

    #[test]
    fn the_switch_moves_only_at_edges() {
        let mut e = ScheduleEdges::default();
        assert_eq!(
            e.observe(false),
            None,
            "starting outside leaves a manual switch"
        );
        assert_eq!(e.observe(false), None);
        assert_eq!(e.observe(true), Some(true));
        assert_eq!(e.observe(true), None, "a manual `away off` holds inside");
        assert_eq!(e.observe(false), Some(false));
        let mut e = ScheduleEdges::default();
        assert_eq!(e.observe(true), Some(true), "starting inside turns away on");
    }
}
