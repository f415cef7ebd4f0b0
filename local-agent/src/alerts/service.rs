//! Away Alerts inside `local-agent run`: the outbox, the sender loop, the away schedule and the
//! `presence_while_away` rule over the engine's snapshots.
//!
//! Two steps, so other parts can hold the sink before the engine starts: [`Alerts::from_env`]
//! (config + outbox; gives the [`AlertLog`]) and [`Alerts::spawn`] (tasks).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::config::{AlertConfig, ConfigError};
use super::outbox::{Outbox, OutboxError};
use super::rules::AwayRule;
use super::schedule::ScheduleEdges;
use super::sender::{self, Sender};
use super::{AlertLog, AlertSink, AwayMode};
use crate::store::{self, StoreError};

/// What the `presence_while_away` rule reads: whether someone is present at `now`. The engine's
/// published snapshot implements it; alerts only see this trait, so the engine may depend on
/// alerts (it raises alerts through [`AlertSink`]) without alerts depending on the engine.
pub trait PresenceSource: Send + Sync + 'static {
    /// True when the latest estimate says someone is present and is fresh at `now`; a stale
    /// estimate (no frames) is not presence.
    fn present_at(&self, now: Instant) -> bool;
}

/// How often the schedule is checked against the local clock.
const SCHEDULE_TICK: Duration = Duration::from_secs(15);

/// Why Away Alerts could not start.
#[derive(Debug, thiserror::Error)]
pub enum AlertsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// Configured, opened, not yet running.
pub struct Alerts {
    outbox: Arc<Outbox>,
    sender: Option<Sender>,
    config: AlertConfig,
}

impl Alerts {
    /// Reads the environment and config file and opens `<data dir>/alerts.db`.
    pub fn from_env() -> Result<Self, AlertsError> {
        let config = AlertConfig::load()?;
        let dir = store::data_dir()?;
        Self::open(config, &dir)
    }

    pub fn open(config: AlertConfig, data_dir: &Path) -> Result<Self, AlertsError> {
        let sender = Sender::from_config(&config)?;
        let outbox = Arc::new(Outbox::open_in(data_dir, sender.is_some(), config.retry)?);
        match &sender {
            Some(s) => tracing::info!(
                address = %s.address(),
                outbox = %outbox.path().display(),
                "Away Alerts enabled"
            ),
            None => tracing::warn!(
                "no alert address configured (SERVICE_ALERT_WEBHOOK or alert_webhook in the \
                 config file): alerts are only logged and kept in the local alert log"
            ),
        }
        Ok(Self {
            outbox,
            sender,
            config,
        })
    }

    /// The settings in force (the live view shows the away schedule; the doctor probes the
    /// address).
    pub fn config(&self) -> &AlertConfig {
        &self.config
    }

    /// The outbox as the alert log (`GET /alerts`) and sink.
    pub fn log(&self) -> Arc<dyn AlertLog> {
        self.outbox.clone()
    }

    /// The outbox as a sink for the sensing side.
    pub fn sink(&self) -> Arc<dyn AlertSink> {
        self.outbox.clone()
    }

    pub fn outbox(&self) -> Arc<Outbox> {
        self.outbox.clone()
    }

    /// Starts the sender, the away schedule and the `presence_while_away` rule.
    pub fn spawn<P: PresenceSource>(
        self,
        snapshots: watch::Receiver<Arc<P>>,
        away: AwayMode,
    ) -> AlertsTasks {
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut tasks = Vec::new();
        if let Some(sender) = self.sender {
            tasks.push(tokio::spawn(sender::run(
                self.outbox.clone(),
                sender,
                self.config.db_poll,
                shutdown_rx.clone(),
            )));
        }
        if !self.config.schedule.is_empty() {
            tasks.push(tokio::spawn(run_schedule(
                self.config.schedule.clone(),
                away.clone(),
                shutdown_rx.clone(),
            )));
        }
        tasks.push(tokio::spawn(run_away_rule(
            snapshots,
            away,
            self.outbox.clone(),
            AwayRule::default(),
            shutdown_rx,
        )));
        AlertsTasks { shutdown, tasks }
    }
}

/// The running tasks.
pub struct AlertsTasks {
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl AlertsTasks {
    /// Stops the tasks; an attempt in flight is abandoned and its row given back.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            if let Err(e) = t.await {
                tracing::error!(error = %e, "alert task failed");
            }
        }
    }
}

/// Sets away mode at the schedule's edges (local time, the system's time zone).
async fn run_schedule(
    schedule: super::schedule::AwaySchedule,
    away: AwayMode,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut edges = ScheduleEdges::default();
    loop {
        let local = jiff::Zoned::now().datetime();
        if let Some(on) = edges.observe(schedule.is_active_at(local)) {
            tracing::info!(away = on, "away schedule edge");
            away.set(on);
        }
        tokio::select! {
            _ = tokio::time::sleep(SCHEDULE_TICK) => {}
            _ = shutdown.changed() => break,
        }
    }
}

/// Feeds every published snapshot to the rule; a stale snapshot (no frames) is not presence.
async fn run_away_rule<P: PresenceSource>(
    mut snapshots: watch::Receiver<Arc<P>>,
    away: AwayMode,
    sink: Arc<Outbox>,
    mut rule: AwayRule,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            changed = snapshots.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            // Time passes without frames too: re-check so a stale feed ends presence.
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => break,
        }
        let now = Instant::now();
        let present = snapshots.borrow_and_update().present_at(now);
        if let Some(alert) = rule.observe(now, present, away.is_on()) {
            sink.raise(alert);
        }
    }
}
