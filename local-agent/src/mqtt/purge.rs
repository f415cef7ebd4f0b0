//! `local-agent mqtt purge`: removes our retained messages from the broker, so Home Assistant
//! forgets the agent's devices and entities (an empty retained discovery config deletes the
//! entity) and no stale state is left behind.

use std::time::Duration;

use rumqttc::{Event, Outgoing, Packet, QoS};

use super::client::{self, MqttStartError, describe};
use super::config::MqttConfig;
use super::discovery::Topics;

/// How long to wait for the broker's retained messages and acknowledgements.
const WAIT: Duration = Duration::from_secs(10);

/// What was removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Discovery configs cleared (each one an entity Home Assistant removes).
    pub discovery: Vec<String>,
    /// State, attribute and availability topics cleared.
    pub states: Vec<String>,
}

/// Why the purge did not complete.
#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    #[error(transparent)]
    Start(#[from] MqttStartError),
    #[error("cannot connect to {broker}: {reason}")]
    Connect { broker: String, reason: String },
    #[error("{broker} did not answer within {} s ({stage})", WAIT.as_secs())]
    Timeout { broker: String, stage: &'static str },
    #[error("the MQTT client stopped unexpectedly: {0}")]
    Client(String),
}

/// Connects as `<client id>-purge` (a different id, so a running agent is not disconnected and no
/// last will fires), collects the retained messages under our discovery filter and base topic,
/// and publishes an empty retained message to each.
pub async fn purge(config: &MqttConfig) -> Result<PurgeReport, PurgeError> {
    let topics = Topics::new(config);
    let mut purge_config = config.clone();
    purge_config.client_id = format!("{}-purge", config.client_id);
    let mut options = client::options(&purge_config, &topics)?;
    // The purge client must not leave an `offline` behind if it dies.
    options.set_last_will(rumqttc::LastWill::new(
        format!("{}/purge", topics.base),
        Vec::<u8>::new(),
        QoS::AtMostOnce,
        false,
    ));
    let (client, mut eventloop) = client::connect(options);
    let broker = config.broker.to_string();
    let marker = format!("{}/purge/{}", topics.base, crate::alerts::new_alert_id());

    let deadline = tokio::time::Instant::now() + WAIT;
    let mut report = PurgeReport::default();
    let mut subacks = 0;
    let mut collecting = true;
    let mut cleared = 0usize;
    let mut acked = 0usize;
    loop {
        let event = tokio::time::timeout_at(deadline, eventloop.poll())
            .await
            .map_err(|_| PurgeError::Timeout {
                broker: broker.clone(),
                stage: if collecting {
                    "reading retained messages"
                } else {
                    "clearing them"
                },
            })?;
        match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                for filter in [topics.discovery_filter(), topics.base_filter()] {
                    client
                        .subscribe(filter, QoS::AtLeastOnce)
                        .await
                        .map_err(|e| PurgeError::Client(e.to_string()))?;
                }
            }
            Ok(Event::Incoming(Packet::SubAck(_))) => {
                subacks += 1;
                if subacks == 2 {
                    // The broker sends a subscription's retained messages before it handles our
                    // next packet: once this marker comes back, all of them have arrived. QoS 0,
                    // so its acknowledgement is not counted with the clears'.
                    client
                        .publish(marker.clone(), QoS::AtMostOnce, false, b"x".to_vec())
                        .await
                        .map_err(|e| PurgeError::Client(e.to_string()))?;
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) if collecting => {
                if p.topic == marker {
                    collecting = false;
                    let all: Vec<String> = report
                        .discovery
                        .iter()
                        .chain(report.states.iter())
                        .cloned()
                        .collect();
                    if all.is_empty() {
                        client
                            .disconnect()
                            .await
                            .map_err(|e| PurgeError::Client(e.to_string()))?;
                    }
                    for topic in all {
                        client
                            .publish(topic, QoS::AtLeastOnce, true, Vec::<u8>::new())
                            .await
                            .map_err(|e| PurgeError::Client(e.to_string()))?;
                        cleared += 1;
                    }
                } else if p.retain && !p.payload.is_empty() {
                    if p.topic.ends_with("/config") && p.topic.starts_with(&topics.prefix) {
                        report.discovery.push(p.topic);
                    } else {
                        report.states.push(p.topic);
                    }
                }
            }
            Ok(Event::Incoming(Packet::PubAck(_))) if !collecting => {
                acked += 1;
                if acked == cleared {
                    client
                        .disconnect()
                        .await
                        .map_err(|e| PurgeError::Client(e.to_string()))?;
                }
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => break,
            Ok(_) => {}
            Err(e) => {
                let (_, reason) = describe(&e);
                return Err(PurgeError::Connect { broker, reason });
            }
        }
    }
    report.discovery.sort();
    report.states.sort();
    Ok(report)
}

/// The MQTT state of an agent answering on the engine port, when it publishes (`None` when no
/// agent answers, or its MQTT is off).
pub async fn running_agent_link(port: u16) -> Option<String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
        .ok()?;
    let response = client
        .get(format!("http://127.0.0.1:{port}/health"))
        .send()
        .await
        .ok()?;
    let body: serde_json::Value = serde_json::from_slice(&response.bytes().await.ok()?).ok()?;
    let state = body.get("mqtt")?.get("state")?.as_str()?;
    (state != "off").then(|| state.to_string())
}
