//! The adapter between the engine's public state and what the live view shows.
//!
//! Everything the page draws is built here from a published [`Snapshot`], the hub's registry and
//! the alert log, so the page never reads an engine type directly. The "why is it null" reasons
//! and the calibration wording are derived here from the pipeline's public estimates; when the
//! motion and vitals work exposes its own reasons, only [`vital`] and [`calibration`] change.

use std::time::Instant;

use serde::Serialize;

use crate::alerts::schedule::ScheduleEntry;
use crate::alerts::{AlertView, AwayMode};
use crate::doctor::checks::{assess_node, calibration_stuck_s, hold_sentence};
use crate::doctor::{Level, LiveHub};
use crate::engine::records::{AnomalyRecord, BaselineRecord, FallRecord, FrameRecord};
use crate::engine::routes;
use crate::engine::runner::Snapshot;
use crate::hub::diagnostics::NodeHealthView;
use crate::hub::registry::{CountersView, NodeView};
use crate::sensing::calibration::WaitReason;
use crate::sensing::pipeline::{Estimates, PipelineConfig};
use crate::sensing::vitals::{BREATH_GATES, GRID_HZ, HEART_GATES, VitalsConfig};

/// Why a vital is `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NullReason {
    /// No frames in the last 5 s.
    NoData,
    NotPresent,
    Moving,
    /// The still window is filling.
    Collecting,
    /// The window was analysed and the peak failed the quality gates.
    WeakSignal,
    /// Heart rate is only looked for while breathing is accepted.
    NoBreathing,
}

/// One vital as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vital {
    pub bpm: Option<f64>,
    pub strength: Option<f64>,
    /// The strength a peak needs to be accepted.
    pub gate: f64,
    pub why_null: Option<NullReason>,
    /// One sentence: what the number means or why there is none.
    pub reason: String,
}

/// The breathing waveform: the filtered chest motion the breathing rate was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wave {
    pub hz: f64,
    pub samples: Vec<f32>,
}

/// Calibration of the empty room.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub calibrating: bool,
    /// 0..1
    pub progress: f64,
    /// Why calibration is not progressing, if it is not.
    pub hold: Option<WaitReason>,
    /// Seconds of quiet a calibration needs.
    pub needs_s: f64,
    /// How long it has been calibrating with frames arriving.
    pub for_s: Option<f64>,
    pub stuck: bool,
    pub detail: String,
}

/// A node as the page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    #[serde(flatten)]
    pub node: NodeView,
    pub health: Option<NodeHealthView>,
    /// The doctor's verdicts about this node that are not `ok`.
    pub warnings: Vec<String>,
}

/// The hub as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HubRow {
    pub running: bool,
    pub addr: Option<String>,
    pub udp_addr: Option<String>,
    pub feeding: bool,
    pub ingest: Option<CountersView>,
}

/// Away mode and its schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Away {
    pub on: bool,
    pub schedule: Vec<ScheduleEntry>,
    /// Inside one of the schedule's windows right now.
    pub in_window: bool,
}

/// The routine panel: baseline against tonight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Routine {
    pub anomaly: AnomalyRecord,
    pub baseline: BaselineRecord,
    /// Active minutes per hour of tonight (21:00 first) as this view recorded them.
    pub tonight: [Option<f64>; 12],
}

/// One update of the page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct State {
    pub version: &'static str,
    pub uptime_s: u64,
    pub ok: bool,
    pub rate_hz: f64,
    pub frame: FrameRecord,
    pub breathing: Vital,
    pub heart: Vital,
    pub wave: Option<Wave>,
    pub calibration: Calibration,
    pub fall: FallRecord,
    pub routine: Routine,
    pub nodes: Vec<NodeRow>,
    pub hub: HubRow,
    pub alerts: Vec<AlertView>,
    pub away: Away,
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn still_window_s() -> f64 {
    VitalsConfig::default().breath_min_window as f64 / f64::from(GRID_HZ)
}

/// Breathing and heart rate, each with the reason it is null.
pub fn vital(e: &Estimates, fresh: bool, heart: bool) -> Vital {
    let (bpm, strength, gate) = if heart {
        (e.heart_bpm, e.heart_strength, f64::from(HEART_GATES.snr))
    } else {
        (
            e.breathing_bpm,
            e.breathing_strength,
            f64::from(BREATH_GATES.snr),
        )
    };
    let strength = strength.filter(|s| s.is_finite()).map(round1);
    let need = still_window_s();
    let (why, reason) = if !fresh {
        (
            Some(NullReason::NoData),
            "No frames in the last 5 s, so nothing is measured.".to_string(),
        )
    } else if let Some(b) = bpm {
        (
            None,
            format!(
                "{:.1} per minute, strength {:.1} (a peak needs {gate:.0}).",
                b,
                strength.unwrap_or(0.0)
            ),
        )
    } else if !e.present {
        let calibrating = if e.calibrating {
            " (the empty-room calibration is still running)"
        } else {
            ""
        };
        let reason = if e.sealed && !e.calibrating {
            "Nobody is detected, so there is nothing to measure. The room has shown neither \
             motion nor breathing for a minute, so it counts as empty until something moves: \
             if someone is here, a small movement brings them back, or two minutes of steady \
             breathing."
                .to_string()
        } else {
            format!("Nobody is detected, so there is nothing to measure{calibrating}.")
        };
        (Some(NullReason::NotPresent), reason)
    } else if e.moving {
        (
            Some(NullReason::Moving),
            "Someone is moving: rates are read only while the person is still.".to_string(),
        )
    } else if e.still_s < need {
        (
            Some(NullReason::Collecting),
            format!(
                "Collecting still data: {:.0} of {need:.0} s.",
                e.still_s.min(need)
            ),
        )
    } else if heart && e.breathing_bpm.is_none() {
        (
            Some(NullReason::NoBreathing),
            "Heart rate is looked for only once a breathing rate is accepted.".to_string(),
        )
    } else {
        (
            Some(NullReason::WeakSignal),
            match strength {
                Some(s) => format!(
                    "The signal is too weak or irregular: strength {s:.1}, a rate needs {gate:.0} over several windows."
                ),
                None => "The signal is too weak or irregular to read a rate.".to_string(),
            },
        )
    };
    Vital {
        bpm: bpm.filter(|b| b.is_finite()).map(round1),
        strength,
        gate,
        why_null: why,
        reason,
    }
}

/// Calibration state and its "why not yet".
pub fn calibration(e: &Estimates, fresh: bool, for_s: Option<f64>) -> Calibration {
    let needs_s = PipelineConfig::default().calibration_s;
    let stuck = e.calibrating && for_s.is_some_and(|s| s > calibration_stuck_s());
    let detail = if !fresh {
        "Waiting for frames.".to_string()
    } else if !e.calibrating {
        "Calibrated: the empty room's motion level is learned.".to_string()
    } else if stuck {
        format!(
            "Not finished after {:.0} s: {}.",
            for_s.unwrap_or(0.0),
            hold_sentence(e.calibration.reason)
        )
    } else if e.calibration.reason.is_some() {
        format!(
            "Learning the empty room; waiting because {}.",
            hold_sentence(e.calibration.reason)
        )
    } else {
        format!("Learning the empty room: {needs_s:.0} s of quiet are needed.")
    };
    Calibration {
        calibrating: e.calibrating,
        progress: (e.calibration.progress.clamp(0.0, 1.0) * 100.0).round() / 100.0,
        hold: e.calibration.reason.filter(|_| e.calibrating),
        needs_s,
        for_s: for_s.map(round1),
        stuck,
        detail,
    }
}

/// The waveform, when the vitals have one.
pub fn wave(e: &Estimates) -> Option<Wave> {
    e.breathing_wave.as_ref().map(|w| Wave {
        hz: f64::from(GRID_HZ),
        samples: w.iter().map(|v| (v * 1000.0).round() / 1000.0).collect(),
    })
}

/// Nodes with their health and the doctor's per-node verdicts.
pub fn nodes(hub: Option<&LiveHub>) -> Vec<NodeRow> {
    let Some(hub) = hub else {
        return Vec::new();
    };
    let health = hub.registry.health();
    hub.registry
        .view()
        .into_iter()
        .map(|n| {
            let h = health.iter().find(|h| h.id == n.id).cloned();
            let mut warnings = Vec::new();
            let verdict = assess_node("nodes", &n, h.as_ref());
            if verdict.level != Level::Ok {
                warnings.push(verdict.detail);
            }
            if let Some(h) = &h
                && n.online
            {
                if let Some(t) = crate::doctor::checks::timing_verdict("timing", &n, h) {
                    warnings.push(t.detail);
                }
                for e in h.events.iter().take(3) {
                    warnings.push(format!("{}: {}", e.at, e.detail));
                }
            }
            NodeRow {
                node: n,
                health: h,
                warnings,
            }
        })
        .collect()
}

/// Everything but the alerts and the tonight row, which need I/O or the clock's time zone.
pub struct Inputs<'a> {
    pub snap: &'a Snapshot,
    pub now: Instant,
    pub started: Instant,
    pub hub: Option<&'a LiveHub>,
    pub calibrating_for_s: Option<f64>,
    pub alerts: Vec<AlertView>,
    pub away: &'a AwayMode,
    pub schedule: Vec<ScheduleEntry>,
    pub in_window: bool,
    pub tonight: [Option<f64>; 12],
}

pub fn state(i: Inputs<'_>) -> State {
    let snap = i.snap;
    let fresh = snap.is_fresh(i.now);
    let e = &snap.estimates;
    State {
        version: routes::VERSION,
        uptime_s: i.now.saturating_duration_since(i.started).as_secs(),
        ok: fresh,
        rate_hz: (snap.rate_at(i.now) * 10.0).round() / 10.0,
        frame: routes::frame(snap),
        breathing: vital(e, fresh, false),
        heart: vital(e, fresh, true),
        wave: if fresh { wave(e) } else { None },
        calibration: calibration(e, fresh, i.calibrating_for_s),
        fall: snap.fall.clone(),
        routine: Routine {
            anomaly: snap.anomaly.clone(),
            baseline: snap.baseline.clone(),
            tonight: i.tonight,
        },
        nodes: nodes(i.hub),
        hub: HubRow {
            running: i.hub.is_some(),
            addr: i.hub.map(|h| h.addr.to_string()),
            udp_addr: i.hub.map(|h| h.udp_addr.to_string()),
            feeding: i.hub.is_some_and(|h| h.feeding),
            ingest: i.hub.map(|h| h.registry.counters.view()),
        },
        alerts: i.alerts,
        away: Away {
            on: i.away.is_on(),
            schedule: i.schedule,
            in_window: i.in_window,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensing::calibration::{CalibrationPhase, CalibrationStatus};

    #[test]
    fn every_null_has_its_reason() {
        let mut e = Estimates::default();
        assert_eq!(vital(&e, false, false).why_null, Some(NullReason::NoData));
        assert_eq!(
            vital(&e, true, false).why_null,
            Some(NullReason::NotPresent)
        );
        e.sealed = true;
        let v = vital(&e, true, false);
        assert_eq!(v.why_null, Some(NullReason::NotPresent));
        assert!(v.reason.contains("until something moves"), "{}", v.reason);
        e.sealed = false;
        e.present = true;
        e.moving = true;
        assert_eq!(vital(&e, true, false).why_null, Some(NullReason::Moving));
        e.moving = false;
        e.still_s = 5.0;
        let v = vital(&e, true, false);
        assert_eq!(v.why_null, Some(NullReason::Collecting));
        assert!(v.reason.contains("5 of 24 s"), "{}", v.reason);
        e.still_s = 30.0;
        e.breathing_strength = Some(2.0);
        assert_eq!(
            vital(&e, true, false).why_null,
            Some(NullReason::WeakSignal)
        );
        assert_eq!(
            vital(&e, true, true).why_null,
            Some(NullReason::NoBreathing)
        );
        e.breathing_bpm = Some(14.84);
        let v = vital(&e, true, false);
        assert_eq!((v.bpm, v.why_null), (Some(14.8), None));
    }

    #[test]
    fn calibration_says_why_it_is_not_done() {
        let e = Estimates {
            calibrating: true,
            calibration: CalibrationStatus {
                phase: CalibrationPhase::Collecting,
                progress: 0.4,
                reason: Some(WaitReason::Motion),
                recalibrating: false,
                needed_s: 10.0,
            },
            ..Estimates::default()
        };
        let c = calibration(&e, true, Some(90.0));
        assert!(c.stuck);
        assert!(c.detail.contains("moving"), "{}", c.detail);
        assert_eq!(c.hold, Some(WaitReason::Motion));
        assert_eq!(c.progress, 0.4);
        assert!(!calibration(&e, true, Some(10.0)).stuck);
    }
}
