//! The JSON records the engine serves, exactly as `CONTRACTS.md` ("Local engine") and
//! `local-agent/openapi.json` define them.
//!
//! These are plain data: the runner fills them, the routes serialise them. The fall and routine
//! records are small state structs on purpose: the fall state machine and the nightly routine
//! learner replace their honest initial values (`FallRecord::inactive`, `AnomalyRecord::learning`,
//! `BaselineRecord::empty`) without touching the HTTP layer.

use std::collections::BTreeMap;

use serde::Serialize;

pub use super::source::Fleet;
use super::source::SourceKind;

/// Nights of live data the routine learner needs before it judges a night.
pub const NIGHTS_REQUIRED: u32 = 3;

/// The local night the routine learner observes, in the user's time zone.
pub const NIGHT_WINDOW: &str = "21:00-09:00";

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthRecord {
    /// False when no frame arrived in the last 5 s of wall-clock time.
    pub ok: bool,
    pub source: SourceKind,
    /// Estimator name and version.
    pub model: String,
    pub fleet: Fleet,
    /// Measured frame rate, frames per wall-clock second.
    pub rate_hz: f64,
    pub predict: Predict,
    pub uptime_s: u64,
    /// Version of the local agent.
    pub version: String,
    /// The MQTT link to Home Assistant's broker (an addition to the contract's shape).
    pub mqtt: crate::link::LinkView,
}

/// Readiness of the routine model that predicts a normal night.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Predict {
    pub ready: bool,
    pub nights_observed: u32,
    pub nights_required: u32,
}

/// `GET /frame`: the latest fused estimates. Absent estimates are `None` (JSON `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameRecord {
    /// When the runner published these estimates (RFC 3339 UTC).
    pub ts: String,
    /// Snapshot sequence number; increases by one per publication.
    pub tick: u64,
    pub present: bool,
    pub motion: f64,
    /// True only for real sensor data (never simulator or replay).
    pub live: bool,
    pub source: SourceKind,
    /// True only while a real sensor link has a node online.
    pub csi_connected: bool,
    /// Frames accepted by the pipeline since start.
    pub csi_frames: u64,
    pub range_peak_m: Option<f64>,
    pub range_strength: Option<f64>,
    /// No pose model ships, so this stays false.
    pub pose_ready: bool,
    pub breathing_bpm: Option<f64>,
    pub breathing_strength: Option<f64>,
    pub heart_bpm: Option<f64>,
    pub heart_strength: Option<f64>,
}

/// `status` of `GET /anomaly`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyStatus {
    LearningBaseline,
    Nominal,
    Anomaly,
}

/// One routine feature that contributed to the anomaly verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnomalySignal {
    pub name: String,
    pub value: String,
    pub baseline: String,
    pub z: f64,
}

/// `GET /anomaly`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnomalyRecord {
    pub status: AnomalyStatus,
    /// One sentence a person can read.
    pub detail: String,
    pub nights_observed: u32,
    pub nights_required: u32,
    pub signals: Vec<AnomalySignal>,
}

impl AnomalyRecord {
    /// The state before any night has been learned. Simulated and replayed data never teach the
    /// routine, so the detail says why nothing is being learned for those sources.
    pub fn learning(source: SourceKind, nights_observed: u32) -> Self {
        let detail = if source.is_live() {
            format!(
                "Learning your routine: {nights_observed} of {NIGHTS_REQUIRED} nights observed; \
                 anomaly checks start once {NIGHTS_REQUIRED} nights of live data are recorded."
            )
        } else {
            format!(
                "Learning your routine: {nights_observed} of {NIGHTS_REQUIRED} nights observed; \
                 {} data is never learned from, so only live sensor data counts.",
                source.label()
            )
        };
        Self {
            status: AnomalyStatus::LearningBaseline,
            detail,
            nights_observed,
            nights_required: NIGHTS_REQUIRED,
            signals: Vec::new(),
        }
    }
}

/// `state` of `GET /fall` and `alert.kind`: the fall monitor's own types.
pub use crate::sensing::fall::{FallAlarm as FallAlertKind, FallState};

/// The current fall or no-breathing alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallAlert {
    pub id: String,
    pub kind: FallAlertKind,
    /// RFC 3339 UTC.
    pub since: String,
    pub detail: String,
}

/// `GET /fall`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallRecord {
    /// False whenever there is no live data: simulated and replayed data never raise alerts.
    pub active: bool,
    pub state: FallState,
    pub alert: Option<FallAlert>,
    /// `null` before the first motion is seen.
    pub seconds_since_motion: Option<f64>,
    /// `null` before the first breath is seen.
    pub seconds_since_breath: Option<f64>,
}

impl FallRecord {
    /// No live data: the monitor is not running, so it is still `calibrating` and has seen
    /// neither motion nor breath.
    pub fn inactive() -> Self {
        Self {
            active: false,
            state: FallState::Calibrating,
            alert: None,
            seconds_since_motion: None,
            seconds_since_breath: None,
        }
    }
}

/// Robust statistics of one routine feature over the learned nights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FeatureStat {
    pub median: f64,
    pub mad: f64,
    pub n: u32,
}

/// `GET /baseline`: a summary of the learned routine model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineRecord {
    pub ready: bool,
    pub nights_observed: u32,
    pub nights_required: u32,
    pub night_window: String,
    pub features: BTreeMap<String, FeatureStat>,
    /// Mean active minutes in each hour of the night window, 21:00 first; `null` for an hour no
    /// learned night has covered (unknown is not "no activity").
    pub hourly_activity: [Option<f64>; 12],
    /// When the model last changed (RFC 3339 UTC); `null` while nothing has been learned.
    pub updated_at: Option<String>,
}

impl BaselineRecord {
    /// Nothing learned yet.
    pub fn empty() -> Self {
        Self {
            ready: false,
            nights_observed: 0,
            nights_required: NIGHTS_REQUIRED,
            night_window: NIGHT_WINDOW.to_string(),
            features: BTreeMap::new(),
            hourly_activity: [None; 12],
            updated_at: None,
        }
    }

    /// The `predict` block of `/health` mirrors the baseline's readiness.
    pub fn predict(&self) -> Predict {
        Predict {
            ready: self.ready,
            nights_observed: self.nights_observed,
            nights_required: self.nights_required,
        }
    }
}

/// The JSON body of every refusal and error: `{"error": "<code>", "detail": "<sentence>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    pub error: &'static str,
    pub detail: String,
}
