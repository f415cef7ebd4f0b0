//! What each entity's state and attributes should read now, and when a change may go out.
//!
//! Pure: [`desired`] turns one engine snapshot, the away switch and the node list into messages;
//! [`Throttle`] lets a topic's message out only when it differs from what was last sent, and at
//! most once per second per topic (a change inside the second goes out when it ends, with the
//! value of that moment).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::discovery::{
    Entity, NodeEntity, NodeInfo, OFFLINE, ONLINE, PAYLOAD_NONE, PAYLOAD_OFF, PAYLOAD_ON, Topics,
    anomaly_state,
};
use crate::engine::routes;
use crate::engine::runner::Snapshot;
use crate::hub::registry::NodeView;

/// One message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub topic: String,
    pub payload: String,
    /// QoS 1 when true, else 0.
    pub qos1: bool,
    pub retain: bool,
}

impl Message {
    fn retained(topic: String, payload: String, qos1: bool) -> Self {
        Self {
            topic,
            payload,
            qos1,
            retain: true,
        }
    }
}

/// The inputs of one round.
pub struct Inputs<'a> {
    pub snapshot: &'a Snapshot,
    /// A frame arrived within the engine's freshness window: without one, every estimate is
    /// unknown rather than its last value.
    pub fresh: bool,
    pub away: bool,
    pub nodes: &'a [NodeView],
}

fn on_off(b: bool) -> String {
    if b { PAYLOAD_ON } else { PAYLOAD_OFF }.to_string()
}

fn none() -> String {
    PAYLOAD_NONE.to_string()
}

fn round(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// A rate with one decimal, or `None` (Home Assistant's unknown) when the engine has none.
fn rate(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        _ => none(),
    }
}

fn strength(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!(round(x, 1)),
        _ => Value::Null,
    }
}

/// Discovery configs: the agent's entities and each node's (retained, QoS 1).
pub fn discovery(t: &Topics, nodes: &[NodeInfo]) -> Vec<Message> {
    let mut out = Vec::new();
    for e in Entity::ALL {
        out.push(Message::retained(
            t.discovery(e.component(), e.key()),
            e.config(t).to_string(),
            true,
        ));
    }
    for node in nodes {
        for e in NodeEntity::ALL {
            out.push(Message::retained(
                t.discovery(e.component(), &e.object(node)),
                e.config(t, node).to_string(),
                true,
            ));
        }
    }
    out
}

/// `online` on the availability topic (retained, QoS 1); the last will says `offline`.
pub fn online(t: &Topics) -> Message {
    Message::retained(t.availability(), ONLINE.to_string(), true)
}

pub fn offline(t: &Topics) -> Message {
    Message::retained(t.availability(), OFFLINE.to_string(), true)
}

/// Every state and attribute message for these inputs. States are retained, so Home Assistant
/// shows the current value as soon as it subscribes, whatever the order of discovery and state.
pub fn desired(t: &Topics, inputs: &Inputs<'_>) -> Vec<Message> {
    let snap = inputs.snapshot;
    let frame = routes::frame(snap);
    let fresh = inputs.fresh;
    let mut out = Vec::with_capacity(12 + 3 * inputs.nodes.len());
    let mut state = |e: Entity, payload: String| {
        out.push(Message::retained(t.state(e), payload, e.qos1()));
    };

    state(
        Entity::Occupancy,
        if fresh { on_off(frame.present) } else { none() },
    );
    state(
        Entity::Motion,
        if fresh {
            format!("{:.0}", frame.motion * 100.0)
        } else {
            none()
        },
    );
    let (breathing, heart) = if fresh {
        (frame.breathing_bpm, frame.heart_bpm)
    } else {
        (None, None)
    };
    state(Entity::Breathing, rate(breathing, 1));
    state(Entity::Heart, rate(heart, 0));
    // Not monitoring (simulated or replayed data without --demo-fall, or no live data): unknown,
    // not "no fall".
    let fall = &snap.fall;
    state(
        Entity::Fall,
        if fall.active {
            on_off(fall.alert.is_some())
        } else {
            none()
        },
    );
    state(
        Entity::Anomaly,
        anomaly_state(snap.anomaly.status).to_string(),
    );
    state(Entity::Away, on_off(inputs.away));

    let mut attributes = |e: Entity, v: Value| {
        out.push(Message::retained(t.attributes(e), v.to_string(), e.qos1()));
    };
    attributes(
        Entity::Breathing,
        json!({"strength": if fresh { strength(frame.breathing_strength) } else { Value::Null }}),
    );
    attributes(
        Entity::Heart,
        json!({"strength": if fresh { strength(frame.heart_strength) } else { Value::Null }}),
    );
    let alert = fall.alert.as_ref();
    attributes(
        Entity::Fall,
        json!({
            "monitoring": fall.active,
            "monitor_state": fall.state,
            "alert_id": alert.map(|a| a.id.clone()),
            "kind": alert.map(|a| a.kind),
            "since": alert.map(|a| a.since.clone()),
            "detail": alert.map(|a| a.detail.clone()),
        }),
    );
    let anomaly = &snap.anomaly;
    attributes(
        Entity::Anomaly,
        json!({
            "detail": anomaly.detail,
            "nights_observed": anomaly.nights_observed,
            "nights_required": anomaly.nights_required,
            "signals": anomaly.signals,
        }),
    );

    for node in inputs.nodes {
        let info = node_info(node);
        out.push(Message::retained(
            t.node_state(&info.object, NodeEntity::Connectivity),
            on_off(node.online),
            false,
        ));
        out.push(Message::retained(
            t.node_attributes(&info.object, NodeEntity::Connectivity),
            json!({
                "node_id": node.id,
                "address": node.addr,
                "transport": node.transport,
                "format": node.format,
            })
            .to_string(),
            false,
        ));
        out.push(Message::retained(
            t.node_state(&info.object, NodeEntity::PacketRate),
            if node.rate_hz.is_finite() {
                format!("{:.0}", node.rate_hz)
            } else {
                none()
            },
            false,
        ));
    }
    out
}

/// The discovery identity of a hub node.
pub fn node_info(node: &NodeView) -> NodeInfo {
    let format = serde_json::to_value(node.format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    NodeInfo::new(&node.id, &node.name, &format)
}

/// Lets a topic's message out only when it changed, at most once per `min_interval`.
#[derive(Debug)]
pub struct Throttle {
    min_interval: Duration,
    sent: HashMap<String, (String, Instant)>,
}

impl Throttle {
    pub fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            sent: HashMap::new(),
        }
    }

    /// True when `m` should go out now.
    pub fn due(&self, m: &Message, now: Instant) -> bool {
        match self.sent.get(&m.topic) {
            None => true,
            Some((payload, at)) => {
                payload != &m.payload && now.saturating_duration_since(*at) >= self.min_interval
            }
        }
    }

    /// `m` was handed to the client at `now`.
    pub fn record(&mut self, m: &Message, now: Instant) {
        self.sent.insert(m.topic.clone(), (m.payload.clone(), now));
    }

    /// Forget what was sent: after a reconnect or Home Assistant's birth message everything goes
    /// out again.
    pub fn forget(&mut self) {
        self.sent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::records::{FallAlert, FallAlertKind, FallRecord, FallState};
    use crate::engine::source::SourceKind;
    use crate::mqtt::config::{BrokerUrl, MqttConfig};

    fn topics() -> Topics {
        Topics::new(&MqttConfig {
            broker: BrokerUrl::parse("mqtt://b").unwrap(),
            username: None,
            password: None,
            client_id: "a".into(),
            agent_id: "a".into(),
            discovery_prefix: "homeassistant".into(),
            base_topic: "pa/a".into(),
            extra_ca: None,
        })
    }

    fn payload<'a>(msgs: &'a [Message], topic: &str) -> &'a str {
        &msgs
            .iter()
            .find(|m| m.topic == topic)
            .unwrap_or_else(|| panic!("no {topic}"))
            .payload
    }

    #[test]
    fn absent_estimates_are_unknown_never_zero() {
        let t = topics();
        let mut snap = Snapshot::initial(SourceKind::Simulator);
        snap.estimates.present = true;
        snap.estimates.motion = 0.123;
        snap.estimates.breathing_bpm = Some(14.04);
        snap.estimates.breathing_strength = Some(6.26);
        let msgs = desired(
            &t,
            &Inputs {
                snapshot: &snap,
                fresh: true,
                away: false,
                nodes: &[],
            },
        );
        assert_eq!(payload(&msgs, "pa/a/occupancy/state"), "ON");
        assert_eq!(payload(&msgs, "pa/a/motion/state"), "12");
        assert_eq!(payload(&msgs, "pa/a/breathing_rate/state"), "14.0");
        assert_eq!(
            payload(&msgs, "pa/a/breathing_rate/attributes"),
            r#"{"strength":6.3}"#
        );
        assert_eq!(payload(&msgs, "pa/a/heart_rate/state"), "None");
        assert_eq!(
            payload(&msgs, "pa/a/heart_rate/attributes"),
            r#"{"strength":null}"#
        );
        assert_eq!(payload(&msgs, "pa/a/fall/state"), "None", "not monitoring");
        assert_eq!(payload(&msgs, "pa/a/routine/state"), "learning_baseline");
        assert_eq!(payload(&msgs, "pa/a/away_mode/state"), "OFF");

        let stale = desired(
            &t,
            &Inputs {
                snapshot: &snap,
                fresh: false,
                away: true,
                nodes: &[],
            },
        );
        for topic in [
            "pa/a/occupancy/state",
            "pa/a/motion/state",
            "pa/a/breathing_rate/state",
        ] {
            assert_eq!(payload(&stale, topic), "None", "{topic}");
        }
        assert_eq!(payload(&stale, "pa/a/away_mode/state"), "ON");
    }

    #[test]
    fn an_active_fall_alert_is_on_with_the_alert_as_attributes_at_qos_1() {
        let t = topics();
        let mut snap = Snapshot::initial(SourceKind::Hub);
        snap.fall = FallRecord {
            active: true,
            state: FallState::Fallen,
            alert: Some(FallAlert {
                id: "alert_1".into(),
                kind: FallAlertKind::Fall,
                since: "2026-11-22T08:00:00Z".into(),
                detail: "A fall".into(),
            }),
            seconds_since_motion: Some(50.0),
            seconds_since_breath: None,
        };
        let msgs = desired(
            &t,
            &Inputs {
                snapshot: &snap,
                fresh: true,
                away: false,
                nodes: &[],
            },
        );
        let state = msgs.iter().find(|m| m.topic == "pa/a/fall/state").unwrap();
        assert_eq!(state.payload, "ON");
        assert!(state.qos1 && state.retain);
        let attrs: Value = serde_json::from_str(payload(&msgs, "pa/a/fall/attributes")).unwrap();
        assert_eq!(attrs["kind"], "fall");
        assert_eq!(attrs["alert_id"], "alert_1");
        assert_eq!(attrs["monitor_state"], "fallen");
    }

    #[test]
    fn the_throttle_sends_changes_at_most_once_a_second() {
        let mut th = Throttle::new(Duration::from_secs(1));
        let t0 = Instant::now();
        let m = |p: &str| Message::retained("x".into(), p.into(), false);
        assert!(th.due(&m("1"), t0));
        th.record(&m("1"), t0);
        assert!(!th.due(&m("1"), t0 + Duration::from_secs(5)), "no change");
        assert!(
            !th.due(&m("2"), t0 + Duration::from_millis(400)),
            "too soon"
        );
        assert!(th.due(&m("2"), t0 + Duration::from_millis(1000)));
        th.forget();
        assert!(th.due(&m("1"), t0), "everything again after forget");
    }
}
