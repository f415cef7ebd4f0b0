//! The watchers that run on the runner thread after the pipeline: the fall monitor and the
//! routine learner, their store and the alert sink they raise through.
//!
//! Both consume each published [`Estimates`]. Only live sensor data drives them: with the
//! simulator or a replay the fall monitor is inactive (unless the operator asked for the
//! `--demo-fall` demonstration) and the routine learner learns nothing.

use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;

use super::records::{
    AnomalyRecord, AnomalySignal, AnomalyStatus, BaselineRecord, FallAlert, FallRecord,
    FeatureStat, NIGHT_WINDOW,
};
use super::source::SourceKind;
use crate::alerts::{AlertKind, AlertSink, NewAlert};
use crate::sensing::fall::{FallAlarm, FallConfig, FallMonitor, FallState};
use crate::sensing::pipeline::Estimates;
use crate::sensing::routine::{RoutineConfig, RoutineLearner, Status};
use crate::store::routine::RoutineStore;

/// Everything the watchers need at start.
pub struct WatchConfig {
    pub source: SourceKind,
    pub fall: FallConfig,
    /// Run the fall monitor on simulated or replayed data (demonstrations only; never learns).
    pub demo_fall: bool,
    pub routine: RoutineConfig,
    /// `None`: nothing is persisted (the store could not be opened; logged at start).
    pub store: Option<RoutineStore>,
    pub sink: Arc<dyn AlertSink>,
}

pub struct Watch {
    source: SourceKind,
    fall_active: bool,
    fall: FallMonitor,
    routine: RoutineLearner,
    store: Option<RoutineStore>,
    sink: Arc<dyn AlertSink>,
    started: Instant,
    fall_alert: Option<FallAlert>,
    anomaly_alerted: bool,
}

impl Watch {
    pub fn new(cfg: WatchConfig) -> Self {
        let loaded = cfg
            .store
            .as_ref()
            .and_then(|s| match s.load(cfg.routine.history_nights) {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the routine store; starting empty");
                    None
                }
            })
            .unwrap_or_default();
        tracing::info!(
            nights = loaded.learned.len(),
            in_progress = loaded.current.is_some(),
            "routine model loaded"
        );
        let routine = RoutineLearner::new(
            cfg.routine,
            loaded.learned,
            loaded.updated_at,
            loaded.current,
        );
        Self {
            source: cfg.source,
            fall_active: cfg.source.is_live() || cfg.demo_fall,
            fall: FallMonitor::new(cfg.fall),
            routine,
            store: cfg.store,
            sink: cfg.sink,
            started: Instant::now(),
            fall_alert: None,
            anomaly_alerted: false,
        }
    }

    /// Feeds one published estimate at wall time `now`.
    pub fn observe(&mut self, now: Timestamp, e: &Estimates) {
        let live = self.source.is_live();
        if self.fall_active {
            // Live: the runner's monotonic clock (nodes may not share a clock). A demonstration
            // on the simulator or a replay follows the source's own time, so `--speed` plays a
            // fall's 45 s of stillness faster too.
            let t = if live {
                self.started.elapsed().as_secs_f64()
            } else {
                e.last_t_s.unwrap_or(0.0)
            };
            if let Some(entry) = self.fall.observe(t, e) {
                let (kind, title) = match entry.alarm {
                    FallAlarm::Fall => (AlertKind::Fall, "Possible fall"),
                    FallAlarm::NoBreathing => (AlertKind::NoBreathing, "No breathing detected"),
                };
                let onset_ago = jiff::SignedDuration::from_secs_f64((t - entry.onset_t_s).max(0.0));
                let since = now.checked_sub(onset_ago).unwrap_or(now);
                let alert = NewAlert::new(kind, title, entry.detail.clone());
                let record = FallAlert {
                    id: alert.id.clone(),
                    kind: entry.alarm,
                    since: since.to_string(),
                    detail: entry.detail.clone(),
                };
                if let Some(store) = &self.store
                    && let Err(e) = store.record_episode(
                        &record.id,
                        kind.as_str(),
                        &record.since,
                        &record.detail,
                    )
                {
                    tracing::error!(error = %e, "cannot store the fall episode");
                }
                tracing::warn!(kind = %kind, id = %alert.id, "fall monitor alarm");
                self.sink.raise(alert);
                self.fall_alert = Some(record);
            }
            if !matches!(
                self.fall.state(),
                FallState::Fallen | FallState::NoBreathing
            ) && let Some(old) = self.fall_alert.take()
                && let Some(store) = &self.store
                && let Err(e) = store.clear_episode(&old.id, &now.to_string())
            {
                tracing::error!(error = %e, "cannot store the end of a fall episode");
            }
        }
        let changes = self
            .routine
            .observe(now, e, self.fall.occupied() || e.present, live);
        if let Some(store) = self.store.as_mut() {
            if let Some(night) = &changes.finished
                && let Err(e) = store.save_night(night)
            {
                tracing::error!(error = %e, "cannot store the finished night");
            }
            if changes.checkpoint
                && let Some(cur) = self.routine.current()
                && let Err(e) = store.save_current(cur)
            {
                tracing::warn!(error = %e, "cannot checkpoint the night in progress");
            }
        }
        if changes.anomaly_entered && !self.anomaly_alerted {
            self.anomaly_alerted = true;
            self.sink.raise(NewAlert::new(
                AlertKind::Anomaly,
                "Unusual night",
                self.routine.detail(),
            ));
        }
        if self.routine.status() != Status::Anomaly {
            self.anomaly_alerted = false;
        }
    }

    /// The watchers' records for a snapshot whose fleet has `nodes_online` nodes online.
    pub fn records(&self, nodes_online: u32) -> (FallRecord, AnomalyRecord, BaselineRecord) {
        let mut fall = self.fall_record();
        if self.source.is_live() && nodes_online == 0 {
            // A hub with no node online has no live data.
            fall.active = false;
        }
        (fall, self.anomaly_record(), self.baseline_record())
    }

    pub fn fall_record(&self) -> FallRecord {
        if !self.fall_active {
            return FallRecord::inactive();
        }
        FallRecord {
            active: true,
            state: self.fall.state(),
            alert: self.fall_alert.clone(),
            seconds_since_motion: self.fall.seconds_since_motion().map(round1),
            seconds_since_breath: self.fall.seconds_since_breath().map(round1),
        }
    }

    pub fn anomaly_record(&self) -> AnomalyRecord {
        let nights = self.routine.nights_observed();
        let required = self.routine.config().nights_required;
        if !self.routine.ready() {
            let mut r = AnomalyRecord::learning(self.source, nights);
            r.nights_required = required;
            return r;
        }
        if !self.source.is_live() {
            return AnomalyRecord {
                status: AnomalyStatus::Nominal,
                detail: format!(
                    "Your routine is learned from {nights} nights; {} data is not checked against it.",
                    self.source.label()
                ),
                nights_observed: nights,
                nights_required: required,
                signals: Vec::new(),
            };
        }
        let status = match self.routine.status() {
            Status::LearningBaseline => AnomalyStatus::LearningBaseline,
            Status::Nominal => AnomalyStatus::Nominal,
            Status::Anomaly => AnomalyStatus::Anomaly,
        };
        AnomalyRecord {
            status,
            detail: self.routine.detail(),
            nights_observed: nights,
            nights_required: required,
            signals: self
                .routine
                .signals()
                .iter()
                .map(|s| AnomalySignal {
                    name: s.name.to_string(),
                    value: s.value.clone(),
                    baseline: s.baseline.clone(),
                    z: round1(s.z),
                })
                .collect(),
        }
    }

    pub fn baseline_record(&self) -> BaselineRecord {
        let b = self.routine.baseline();
        BaselineRecord {
            ready: self.routine.ready(),
            nights_observed: self.routine.nights_observed(),
            nights_required: self.routine.config().nights_required,
            night_window: NIGHT_WINDOW.to_string(),
            features: b
                .features
                .iter()
                .map(|(k, s)| {
                    (
                        (*k).to_string(),
                        FeatureStat {
                            median: round2(s.median),
                            mad: round2(s.mad),
                            n: s.n,
                        },
                    )
                })
                .collect(),
            hourly_activity: b.hourly_activity.map(|h| h.map(round2)),
            updated_at: self.routine.updated_at().map(|t| t.to_string()),
        }
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
