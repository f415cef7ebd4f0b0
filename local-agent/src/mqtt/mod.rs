//! Home Assistant over MQTT: discovery, availability, states and the away-mode switch.
//!
//! - [`config`]: `mqtt_url` and friends from the config file, credentials from the environment.
//! - [`discovery`]: topics and the discovery config of every entity (pure).
//! - [`states`]: what each entity reads now, and the once-per-second throttle (pure).
//! - [`link`]: the link status `/health` and the doctor report.
//! - [`client`]: the rumqttc connection, reconnects with backoff, the publisher task.
//! - [`purge`]: `local-agent mqtt purge`.
//!
//! Off unless `mqtt_url` is configured. The publisher only reads the engine's published
//! snapshots and the hub's node list; it never holds up the sensing pipeline.

pub mod client;
pub mod config;
pub mod discovery;
pub mod purge;
pub mod states;

/// The link status lives below the engine (its `/health` reports it); re-exported for callers
/// that think of it as the MQTT link.
pub use crate::link::{self, LinkState, LinkStatus, LinkView};
pub use client::{MqttStartError, MqttTasks, PublisherDeps};
pub use config::{MqttConfig, MqttConfigError};

/// MQTT as configured at startup: the settings (if any) and the link status to share.
#[derive(Debug)]
pub struct Mqtt {
    config: Option<MqttConfig>,
    link: LinkStatus,
}

impl Mqtt {
    /// Reads the config file and environment; a bad setting is a startup error.
    pub fn from_env() -> Result<Self, MqttConfigError> {
        Ok(Self::new(MqttConfig::load()?))
    }

    pub fn new(config: Option<MqttConfig>) -> Self {
        let link = match &config {
            Some(c) => LinkStatus::connecting(c.broker.to_string(), c.client_id.clone()),
            None => LinkStatus::off(),
        };
        Self { config, link }
    }

    /// The link status, for `/health` (give it to the engine before it starts).
    pub fn link(&self) -> LinkStatus {
        self.link.clone()
    }

    /// Starts publishing; `None` when MQTT is not configured. Needs a tokio runtime.
    pub fn spawn(self, deps: PublisherDeps) -> Result<Option<MqttTasks>, MqttStartError> {
        match &self.config {
            Some(config) => client::spawn(config, self.link, deps).map(Some),
            None => Ok(None),
        }
    }
}
