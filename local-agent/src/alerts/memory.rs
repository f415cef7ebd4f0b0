//! An in-memory [`AlertLog`]: keeps raised alerts (bounded, newest first) so the hub's
//! `GET /alerts` has something to list until the durable outbox is wired in. Nothing is sent
//! and nothing survives a restart, so every alert is reported with delivery state `disabled`
//! and also logged, exactly like [`LogSink`](super::LogSink).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{AlertLog, AlertLogError, AlertSink, AlertView, Delivery, DeliveryState, NewAlert};

/// Most alerts kept; the oldest are forgotten first.
pub const MAX_KEPT: usize = 1000;

#[derive(Debug, Default)]
pub struct MemoryAlertLog {
    alerts: Mutex<VecDeque<(jiff::Timestamp, NewAlert)>>,
}

impl MemoryAlertLog {
    pub fn new() -> Self {
        Self::default()
    }
}

impl AlertSink for MemoryAlertLog {
    fn raise(&self, alert: NewAlert) {
        super::LogSink.raise(alert.clone());
        let mut alerts = self.alerts.lock().unwrap_or_else(|p| p.into_inner());
        if alerts.len() >= MAX_KEPT {
            alerts.pop_back();
        }
        alerts.push_front((jiff::Timestamp::now(), alert));
    }
}

impl AlertLog for MemoryAlertLog {
    fn recent(&self, hours: u32) -> Result<Vec<AlertView>, AlertLogError> {
        let alerts = self.alerts.lock().unwrap_or_else(|p| p.into_inner());
        let since = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_hours(i64::from(hours)))
            .map_err(|e| AlertLogError(e.to_string()))?;
        Ok(alerts
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(at, a)| AlertView {
                id: a.id.clone(),
                kind: a.kind,
                title: a.title.clone(),
                message: a.message.clone(),
                created_at: format!("{at:.3}"),
                delivery: Delivery {
                    state: DeliveryState::Disabled,
                    attempts: 0,
                    last_status: None,
                    delivered_at: None,
                },
            })
            .collect())
    }
}
