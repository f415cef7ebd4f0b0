//! The MQTT connection (rumqttc over TCP or rustls) and the publisher task.
//!
//! Two tasks: the driver polls rumqttc's event loop (connects, reconnects with backoff, reads
//! incoming messages) and reports to the publisher over a small channel; the publisher reads the
//! engine's latest snapshot four times a second and hands changed states to the client with
//! `try_publish`. The sensing pipeline never waits on any of this: the runner publishes snapshots
//! into a `watch` channel whatever happens here, and a full client queue drops the message (and
//! counts it) rather than waiting.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use rumqttc::{
    AsyncClient, ClientError, ConnectReturnCode, ConnectionError, Event, EventLoop, LastWill,
    MqttOptions, Outgoing, Packet, QoS, TlsConfiguration, Transport,
};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::config::MqttConfig;
use super::discovery::{NodeInfo, PAYLOAD_OFF, PAYLOAD_ON, Topics};
use super::states::{self, Inputs, Message, Throttle};
use crate::alerts::AwayMode;
use crate::engine::runner::SnapshotReceiver;
use crate::hub::registry::Registry;
use crate::link::LinkStatus;

/// Requests the client queues for the event loop; beyond this, messages are dropped and counted.
pub const QUEUE: usize = 512;
/// How often the publisher looks at the engine's latest state.
const TICK: Duration = Duration::from_millis(250);
/// At most one message per topic per this interval (Home Assistant's recorder stores every
/// change; a sensor updating at 100 Hz would bury it).
const MIN_INTERVAL: Duration = Duration::from_secs(1);
const KEEP_ALIVE: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT_S: u64 = 10;
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How long shutdown waits for `offline` and DISCONNECT to reach the broker.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Largest MQTT packet accepted from the broker (commands and birth messages are a few bytes).
const MAX_INCOMING: usize = 16 * 1024;
const MAX_OUTGOING: usize = 256 * 1024;

/// Why the publisher could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MqttStartError {
    #[error("cannot set up TLS for {broker}: {reason}")]
    Tls { broker: String, reason: String },
}

/// rustls with the ring provider, the bundled Mozilla roots and the extra CA, like the alert
/// sender: the same behaviour on every system, no OS trust store.
pub fn tls_config(extra_ca: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca {
        for cert in super::config::load_ca(path)? {
            roots
                .add(cert)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The rumqttc options: client id, credentials, last will, TLS.
pub fn options(config: &MqttConfig, topics: &Topics) -> Result<MqttOptions, MqttStartError> {
    let mut o = MqttOptions::new(
        config.client_id.clone(),
        config.broker.connect_host(),
        config.broker.port,
    );
    o.set_keep_alive(KEEP_ALIVE)
        .set_clean_session(true)
        .set_max_packet_size(MAX_INCOMING, MAX_OUTGOING)
        .set_last_will(LastWill::new(
            topics.availability(),
            super::discovery::OFFLINE,
            QoS::AtLeastOnce,
            true,
        ));
    if let Some(user) = &config.username {
        let password = config
            .password
            .as_ref()
            .map(|p| p.expose().to_string())
            .unwrap_or_default();
        o.set_credentials(user.clone(), password);
    }
    if config.broker.tls {
        let tls = tls_config(config.extra_ca.as_deref()).map_err(|reason| MqttStartError::Tls {
            broker: config.broker.to_string(),
            reason,
        })?;
        o.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(
            Arc::new(tls),
        )));
    }
    Ok(o)
}

/// A new event loop with our network options.
pub fn connect(options: MqttOptions) -> (AsyncClient, EventLoop) {
    let (client, mut eventloop) = AsyncClient::new(options, QUEUE);
    let mut net = rumqttc::NetworkOptions::new();
    net.set_connection_timeout(CONNECT_TIMEOUT_S);
    eventloop.set_network_options(net);
    (client, eventloop)
}

/// What the driver tells the publisher.
#[derive(Debug)]
pub(crate) enum LinkEvent {
    Connected,
    Down,
    Message {
        topic: String,
        payload: Vec<u8>,
        retain: bool,
    },
}

/// Exponential backoff with ±20 % jitter, so agents that lost the same broker do not return in
/// step.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self { next: BACKOFF_MIN }
    }

    pub(crate) fn reset(&mut self) {
        self.next = BACKOFF_MIN;
    }

    pub(crate) fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        base.mul_f64(rand::rng().random_range(0.8..1.2))
    }
}

/// A connection error in words, and whether it is the broker refusing our credentials.
pub(crate) fn describe(e: &ConnectionError) -> (bool, String) {
    match e {
        ConnectionError::ConnectionRefused(ConnectReturnCode::BadUserNamePassword) => (
            true,
            "the broker refused the user name or password".to_string(),
        ),
        ConnectionError::ConnectionRefused(ConnectReturnCode::NotAuthorized) => (
            true,
            "the broker refused the connection: not authorised (wrong or missing user name or password)"
                .to_string(),
        ),
        ConnectionError::ConnectionRefused(code) => {
            (false, format!("the broker refused the connection ({code:?})"))
        }
        ConnectionError::Io(e) => (false, format!("cannot reach the broker: {e}")),
        ConnectionError::Tls(e) => (false, format!("TLS failed: {e}")),
        ConnectionError::NetworkTimeout => (
            false,
            format!("no answer from the broker within {CONNECT_TIMEOUT_S} s"),
        ),
        other => (false, format!("connection lost: {other}")),
    }
}

/// Polls the event loop forever: reconnects after an error (with backoff), forwards what the
/// publisher needs. Ends when the publisher disconnects or drops the client.
pub(crate) async fn drive(mut eventloop: EventLoop, tx: mpsc::Sender<LinkEvent>, link: LinkStatus) {
    let mut backoff = Backoff::new();
    let mut last_error: Option<String> = None;
    loop {
        match eventloop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                backoff.reset();
                link.set_connected();
                tracing::info!(broker = %eventloop.mqtt_options.broker_address().0, "MQTT connected");
                last_error = None;
                if tx.send(LinkEvent::Connected).await.is_err() {
                    break;
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                let event = LinkEvent::Message {
                    topic: p.topic,
                    payload: p.payload.to_vec(),
                    retain: p.retain,
                };
                if tx.send(event).await.is_err() {
                    break;
                }
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => break,
            Ok(_) => {}
            Err(ConnectionError::RequestsDone) => break,
            Err(e) => {
                let (auth, message) = describe(&e);
                if auth {
                    link.set_auth_failed(message.clone());
                } else {
                    link.set_disconnected(message.clone());
                }
                let delay = backoff.next_delay();
                // The same failure every retry is logged once; a new one is logged again.
                if last_error.as_deref() != Some(message.as_str()) {
                    if auth {
                        tracing::error!(error = %message, "MQTT: the broker refused our credentials; sensing goes on, retrying with backoff");
                    } else {
                        tracing::warn!(error = %message, retry_in_s = delay.as_secs_f64(), "MQTT link down; sensing goes on, retrying with backoff");
                    }
                    last_error = Some(message);
                } else {
                    tracing::debug!(retry_in_s = delay.as_secs_f64(), "MQTT still down");
                }
                if tx.send(LinkEvent::Down).await.is_err() {
                    break;
                }
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// What the publisher reads.
pub struct PublisherDeps {
    pub snapshots: SnapshotReceiver,
    pub away: AwayMode,
    pub registry: Arc<Registry>,
}

/// The publisher's state between rounds.
struct Publisher {
    client: AsyncClient,
    topics: Topics,
    deps: PublisherDeps,
    link: LinkStatus,
    throttle: Throttle,
    connected: bool,
    /// Nodes whose discovery configs are queued, by hub id.
    announced: HashMap<String, NodeInfo>,
    agent_announced: bool,
}

impl Publisher {
    /// Hands `m` to the client. False when the queue was full (the message is dropped and
    /// counted; the next round tries the then-current value again).
    fn send(&mut self, m: &Message, now: Instant) -> bool {
        let qos = if m.qos1 {
            QoS::AtLeastOnce
        } else {
            QoS::AtMostOnce
        };
        match self
            .client
            .try_publish(m.topic.clone(), qos, m.retain, m.payload.clone())
        {
            Ok(()) => {
                self.throttle.record(m, now);
                self.link.count_published();
                true
            }
            Err(ClientError::TryRequest(_) | ClientError::Request(_)) => {
                self.link.count_dropped();
                false
            }
        }
    }

    /// Everything is sent again on the next round: after a (re)connection or Home Assistant's
    /// birth message.
    fn republish_all(&mut self) {
        self.throttle.forget();
        self.announced.clear();
        self.agent_announced = false;
    }

    fn subscribe(&self) {
        for topic in [self.topics.birth(), self.topics.away_command()] {
            if let Err(e) = self.client.try_subscribe(topic.clone(), QoS::AtLeastOnce) {
                tracing::warn!(%topic, error = %e, "MQTT: cannot queue a subscription");
                self.link.count_dropped();
            }
        }
    }

    /// One round: discovery for what is not announced yet, availability, then changed states.
    fn round(&mut self) {
        if !self.connected {
            return;
        }
        let now = Instant::now();
        let nodes = self.deps.registry.view();
        if !self.agent_announced {
            let all_sent = states::discovery(&self.topics, &[])
                .iter()
                .all(|m| self.send(m, now));
            self.agent_announced = all_sent;
        }
        for node in &nodes {
            let info = states::node_info(node);
            if self.announced.get(&node.id) == Some(&info) {
                continue;
            }
            let msgs = states::discovery(&self.topics, std::slice::from_ref(&info));
            // Discovery lists the agent's entities first; only the node's part is new here.
            let node_msgs = &msgs[super::discovery::Entity::ALL.len()..];
            if node_msgs.iter().all(|m| self.send(m, now)) {
                self.announced.insert(node.id.clone(), info);
            }
        }
        let online = states::online(&self.topics);
        if self.throttle.due(&online, now) {
            self.send(&online, now);
        }
        let snapshot = Arc::clone(&self.deps.snapshots.borrow());
        let inputs = Inputs {
            snapshot: &snapshot,
            fresh: snapshot.is_fresh(now),
            away: self.deps.away.is_on(),
            nodes: &nodes,
        };
        for m in states::desired(&self.topics, &inputs) {
            if self.throttle.due(&m, now) {
                self.send(&m, now);
            }
        }
    }

    fn on_message(&mut self, topic: &str, payload: &[u8], retain: bool) {
        if topic == self.topics.birth() {
            if payload == b"online" {
                tracing::info!("Home Assistant came online; publishing discovery and states again");
                self.republish_all();
            }
        } else if topic == self.topics.away_command() {
            // A retained command would switch away mode at every reconnect: only live commands.
            if retain {
                tracing::warn!(%topic, "ignoring a retained away-mode command; clear it with an empty retained message");
                return;
            }
            let text = String::from_utf8_lossy(payload);
            let text = text.trim();
            let on = if text.eq_ignore_ascii_case(PAYLOAD_ON) {
                true
            } else if text.eq_ignore_ascii_case(PAYLOAD_OFF) {
                false
            } else {
                tracing::warn!(%topic, "ignoring an away-mode command that is neither ON nor OFF");
                return;
            };
            tracing::info!(away = on, "away mode set over MQTT");
            self.deps.away.set(on);
        }
    }
}

/// The running MQTT publisher.
pub struct MqttTasks {
    shutdown: watch::Sender<bool>,
    publisher: JoinHandle<()>,
}

impl MqttTasks {
    /// Publishes `offline`, disconnects cleanly (so the last will is not sent) and stops.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Err(e) = self.publisher.await {
            tracing::error!(error = %e, "MQTT publisher task failed");
        }
    }
}

/// Starts the driver and the publisher. Needs a tokio runtime.
pub fn spawn(
    config: &MqttConfig,
    link: LinkStatus,
    deps: PublisherDeps,
) -> Result<MqttTasks, MqttStartError> {
    let topics = Topics::new(config);
    let options = options(config, &topics)?;
    let (client, eventloop) = connect(options);
    let (tx, rx) = mpsc::channel(64);
    let driver = tokio::spawn(drive(eventloop, tx, link.clone()));
    let (shutdown, shutdown_rx) = watch::channel(false);
    tracing::info!(
        broker = %config.broker,
        client_id = %config.client_id,
        discovery_prefix = %config.discovery_prefix,
        base_topic = %config.base_topic,
        tls = config.broker.tls,
        user = config.username.is_some(),
        "MQTT publisher starting"
    );
    if config.sends_password_in_clear() {
        tracing::warn!(
            broker = %config.broker,
            "MQTT: the password goes to a broker on another computer without TLS; anyone on the network can read it. Use mqtts:// if the broker supports it"
        );
    }
    let publisher = Publisher {
        client,
        topics,
        deps,
        link,
        throttle: Throttle::new(MIN_INTERVAL),
        connected: false,
        announced: HashMap::new(),
        agent_announced: false,
    };
    let publisher = tokio::spawn(run(publisher, rx, driver, shutdown_rx));
    Ok(MqttTasks {
        shutdown,
        publisher,
    })
}

async fn run(
    mut p: Publisher,
    mut events: mpsc::Receiver<LinkEvent>,
    mut driver: JoinHandle<()>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                None => break,
                Some(LinkEvent::Connected) => {
                    p.connected = true;
                    p.subscribe();
                    p.republish_all();
                    p.round();
                }
                Some(LinkEvent::Down) => p.connected = false,
                Some(LinkEvent::Message { topic, payload, retain }) => {
                    p.on_message(&topic, &payload, retain);
                    p.round();
                }
            },
            _ = tick.tick() => p.round(),
            _ = shutdown.changed() => break,
        }
    }
    if !p.connected {
        // Nothing to say goodbye to; the broker already holds `offline` (our last will).
        driver.abort();
        tracing::info!("MQTT publisher stopped");
        return;
    }
    let offline = states::offline(&p.topics);
    let _ = p.client.try_publish(
        offline.topic,
        QoS::AtLeastOnce,
        true,
        offline.payload.into_bytes(),
    );
    let _ = p.client.try_disconnect();
    // The driver ends once DISCONNECT is written; keep reading its events so it never waits on
    // a full channel meanwhile.
    let deadline = tokio::time::sleep(SHUTDOWN_GRACE);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut driver => break,
            event = events.recv() => if event.is_none() {
                let _ = (&mut driver).await;
                break;
            },
            _ = &mut deadline => {
                tracing::warn!("MQTT: the broker did not take our goodbye in time; it will publish the last will");
                driver.abort();
                break;
            }
        }
    }
    tracing::info!("MQTT publisher stopped");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute_and_resets() {
        let mut b = Backoff::new();
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(800) && first <= Duration::from_millis(1200));
        for _ in 0..10 {
            b.next_delay();
        }
        let capped = b.next_delay();
        assert!(capped <= BACKOFF_MAX.mul_f64(1.2) && capped >= BACKOFF_MAX.mul_f64(0.8));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(1200));
    }

    #[test]
    fn refused_credentials_are_told_apart_from_a_missing_broker() {
        let (auth, msg) = describe(&ConnectionError::ConnectionRefused(
            ConnectReturnCode::NotAuthorized,
        ));
        assert!(auth, "{msg}");
        let (auth, msg) = describe(&ConnectionError::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(!auth);
        assert!(msg.contains("cannot reach"), "{msg}");
    }
}
