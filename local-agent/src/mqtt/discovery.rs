//! Home Assistant MQTT discovery: the topics we use and the discovery config of every entity.
//!
//! One device for the agent and one per sensor node (`via_device` the agent). Every discovery
//! topic is `<prefix>/<component>/<agent id>/<object id>/config`: the agent id as the discovery
//! `node_id` keeps all our configs under one filter, which is what `mqtt purge` clears.
//!
//! Keys are written out in full (Home Assistant also accepts its abbreviations); the tests check
//! every config with Home Assistant's own discovery schemas.

use serde_json::{Value, json};

use super::config::{MqttConfig, object_id};
use crate::engine::records::AnomalyStatus;

/// The agent's version, reported as the device's `sw_version` and the origin's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The origin name Home Assistant logs for our discovery messages.
pub const ORIGIN: &str = "presence-agent";
pub const PAYLOAD_ON: &str = "ON";
pub const PAYLOAD_OFF: &str = "OFF";
/// Home Assistant's payload for "unknown" on sensors and binary sensors.
pub const PAYLOAD_NONE: &str = "None";
pub const ONLINE: &str = "online";
pub const OFFLINE: &str = "offline";

/// The topics of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    pub prefix: String,
    pub base: String,
    pub agent_id: String,
    /// Shown as the agent device's name.
    pub device_name: String,
}

impl Topics {
    pub fn new(config: &MqttConfig) -> Self {
        let name = config
            .client_id
            .strip_prefix("presence-agent-")
            .filter(|rest| !rest.is_empty())
            .unwrap_or(&config.client_id);
        Self {
            prefix: config.discovery_prefix.clone(),
            base: config.base_topic.clone(),
            agent_id: config.agent_id.clone(),
            device_name: format!("Presence agent {name}"),
        }
    }

    /// Retained `online`/`offline`; the last will sets `offline`.
    pub fn availability(&self) -> String {
        format!("{}/availability", self.base)
    }

    /// Home Assistant's birth and last-will topic.
    pub fn birth(&self) -> String {
        format!("{}/status", self.prefix)
    }

    pub fn away_command(&self) -> String {
        format!("{}/away/set", self.base)
    }

    pub fn state(&self, entity: Entity) -> String {
        format!("{}/{}/state", self.base, entity.key())
    }

    pub fn attributes(&self, entity: Entity) -> String {
        format!("{}/{}/attributes", self.base, entity.key())
    }

    pub fn node_state(&self, node: &str, entity: NodeEntity) -> String {
        format!("{}/nodes/{}/{}/state", self.base, node, entity.key())
    }

    pub fn node_attributes(&self, node: &str, entity: NodeEntity) -> String {
        format!("{}/nodes/{}/{}/attributes", self.base, node, entity.key())
    }

    /// `<prefix>/<component>/<agent id>/<object id>/config`.
    pub fn discovery(&self, component: &str, object: &str) -> String {
        format!(
            "{}/{component}/{}/{object}/config",
            self.prefix, self.agent_id
        )
    }

    /// Every discovery config of this agent (what `mqtt purge` subscribes to).
    pub fn discovery_filter(&self) -> String {
        format!("{}/+/{}/+/config", self.prefix, self.agent_id)
    }

    /// Every state, attribute and availability topic of this agent.
    pub fn base_filter(&self) -> String {
        format!("{}/#", self.base)
    }

    fn agent_device(&self) -> Value {
        json!({
            "identifiers": [self.agent_id],
            "name": self.device_name,
            "manufacturer": "presence-agent",
            "model": "local-agent (Wi-Fi CSI presence sensing)",
            "sw_version": VERSION,
        })
    }

    fn node_device(&self, node: &NodeInfo) -> Value {
        json!({
            "identifiers": [format!("{}_{}", self.agent_id, node.object)],
            "name": format!("Sensor node {}", node.name),
            "model": format!("CSI sensor node ({})", node.format),
            "via_device": self.agent_id,
        })
    }

    fn common(&self, unique: &str, name: &str, device: Value) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert(
            "unique_id".into(),
            json!(format!("{}_{unique}", self.agent_id)),
        );
        m.insert("name".into(), json!(name));
        m.insert("availability_topic".into(), json!(self.availability()));
        m.insert("payload_available".into(), json!(ONLINE));
        m.insert("payload_not_available".into(), json!(OFFLINE));
        m.insert("device".into(), device);
        m.insert(
            "origin".into(),
            json!({"name": ORIGIN, "sw_version": VERSION}),
        );
        m
    }
}

/// The agent's entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entity {
    Occupancy,
    Motion,
    Breathing,
    Heart,
    Fall,
    Anomaly,
    Away,
}

impl Entity {
    pub const ALL: [Entity; 7] = [
        Entity::Occupancy,
        Entity::Motion,
        Entity::Breathing,
        Entity::Heart,
        Entity::Fall,
        Entity::Anomaly,
        Entity::Away,
    ];

    /// Topic level and object id.
    pub fn key(self) -> &'static str {
        match self {
            Entity::Occupancy => "occupancy",
            Entity::Motion => "motion",
            Entity::Breathing => "breathing_rate",
            Entity::Heart => "heart_rate",
            Entity::Fall => "fall",
            Entity::Anomaly => "routine",
            Entity::Away => "away_mode",
        }
    }

    pub fn component(self) -> &'static str {
        match self {
            Entity::Occupancy | Entity::Fall => "binary_sensor",
            Entity::Motion | Entity::Breathing | Entity::Heart | Entity::Anomaly => "sensor",
            Entity::Away => "switch",
        }
    }

    /// Fall and anomaly changes must not be lost on the way: QoS 1.
    pub fn qos1(self) -> bool {
        matches!(self, Entity::Fall | Entity::Anomaly | Entity::Away)
    }

    pub fn has_attributes(self) -> bool {
        matches!(
            self,
            Entity::Breathing | Entity::Heart | Entity::Fall | Entity::Anomaly
        )
    }

    /// The discovery config Home Assistant reads.
    pub fn config(self, t: &Topics) -> Value {
        let name = match self {
            Entity::Occupancy => "Occupancy",
            Entity::Motion => "Motion level",
            Entity::Breathing => "Breathing rate",
            Entity::Heart => "Heart rate",
            Entity::Fall => "Fall",
            Entity::Anomaly => "Routine",
            Entity::Away => "Away mode",
        };
        let mut m = t.common(self.key(), name, t.agent_device());
        m.insert("state_topic".into(), json!(t.state(self)));
        if self.has_attributes() {
            m.insert("json_attributes_topic".into(), json!(t.attributes(self)));
        }
        if self.qos1() {
            m.insert("qos".into(), json!(1));
        }
        let extra = match self {
            Entity::Occupancy => json!({
                "device_class": "occupancy",
                "payload_on": PAYLOAD_ON,
                "payload_off": PAYLOAD_OFF,
            }),
            Entity::Motion => json!({
                "unit_of_measurement": "%",
                "state_class": "measurement",
                "suggested_display_precision": 0,
                "icon": "mdi:motion-sensor",
            }),
            Entity::Breathing => json!({
                "unit_of_measurement": "breaths/min",
                "state_class": "measurement",
                "suggested_display_precision": 1,
                "icon": "mdi:lungs",
            }),
            Entity::Heart => json!({
                "unit_of_measurement": "bpm",
                "state_class": "measurement",
                "suggested_display_precision": 0,
                "icon": "mdi:heart-pulse",
            }),
            Entity::Fall => json!({
                "device_class": "safety",
                "payload_on": PAYLOAD_ON,
                "payload_off": PAYLOAD_OFF,
            }),
            Entity::Anomaly => json!({
                "device_class": "enum",
                "options": [
                    anomaly_state(AnomalyStatus::LearningBaseline),
                    anomaly_state(AnomalyStatus::Nominal),
                    anomaly_state(AnomalyStatus::Anomaly),
                ],
                "icon": "mdi:calendar-alert",
            }),
            Entity::Away => json!({
                "command_topic": t.away_command(),
                "payload_on": PAYLOAD_ON,
                "payload_off": PAYLOAD_OFF,
                "icon": "mdi:home-export-outline",
            }),
        };
        merge(&mut m, extra);
        Value::Object(m)
    }
}

/// The routine sensor's state for each status (the contract's names).
pub fn anomaly_state(status: AnomalyStatus) -> &'static str {
    match status {
        AnomalyStatus::LearningBaseline => "learning_baseline",
        AnomalyStatus::Nominal => "nominal",
        AnomalyStatus::Anomaly => "anomaly",
    }
}

/// A sensor node's entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeEntity {
    Connectivity,
    PacketRate,
}

impl NodeEntity {
    pub const ALL: [NodeEntity; 2] = [NodeEntity::Connectivity, NodeEntity::PacketRate];

    pub fn key(self) -> &'static str {
        match self {
            NodeEntity::Connectivity => "connectivity",
            NodeEntity::PacketRate => "packet_rate",
        }
    }

    pub fn component(self) -> &'static str {
        match self {
            NodeEntity::Connectivity => "binary_sensor",
            NodeEntity::PacketRate => "sensor",
        }
    }

    pub fn has_attributes(self) -> bool {
        matches!(self, NodeEntity::Connectivity)
    }

    /// Object id of this entity of `node` (unique within the agent).
    pub fn object(self, node: &NodeInfo) -> String {
        format!("{}_{}", node.object, self.key())
    }

    pub fn config(self, t: &Topics, node: &NodeInfo) -> Value {
        let name = match self {
            NodeEntity::Connectivity => "Connectivity",
            NodeEntity::PacketRate => "Packet rate",
        };
        let mut m = t.common(&self.object(node), name, t.node_device(node));
        m.insert(
            "state_topic".into(),
            json!(t.node_state(&node.object, self)),
        );
        m.insert("entity_category".into(), json!("diagnostic"));
        if self.has_attributes() {
            m.insert(
                "json_attributes_topic".into(),
                json!(t.node_attributes(&node.object, self)),
            );
        }
        let extra = match self {
            NodeEntity::Connectivity => json!({
                "device_class": "connectivity",
                "payload_on": PAYLOAD_ON,
                "payload_off": PAYLOAD_OFF,
            }),
            NodeEntity::PacketRate => json!({
                "unit_of_measurement": "packets/s",
                "state_class": "measurement",
                "suggested_display_precision": 0,
                "icon": "mdi:wifi-arrow-down",
            }),
        };
        merge(&mut m, extra);
        Value::Object(m)
    }
}

/// What the discovery needs to know about a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The hub's node id (`node-1`).
    pub id: String,
    /// `id` reduced to an object id.
    pub object: String,
    pub name: String,
    /// Wire format (`adr018`, `esp-csi`, `esp32-csi-tool`).
    pub format: String,
}

impl NodeInfo {
    pub fn new(id: &str, name: &str, format: &str) -> Self {
        Self {
            id: id.to_string(),
            object: object_id(id),
            name: name.to_string(),
            format: format.to_string(),
        }
    }
}

fn merge(m: &mut serde_json::Map<String, Value>, extra: Value) {
    if let Value::Object(extra) = extra {
        m.extend(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mqtt::config::BrokerUrl;

    fn topics() -> Topics {
        Topics::new(&MqttConfig {
            broker: BrokerUrl::parse("mqtt://b").unwrap(),
            username: None,
            password: None,
            client_id: "presence-agent-den".into(),
            agent_id: "presence-agent-den".into(),
            discovery_prefix: "homeassistant".into(),
            base_topic: "presence-agent/den".into(),
            extra_ca: None,
        })
    }

    #[test]
    fn every_entity_has_a_unique_id_topic_and_the_agent_device() {
        let t = topics();
        assert_eq!(t.device_name, "Presence agent den");
        let mut ids = std::collections::HashSet::new();
        for e in Entity::ALL {
            let c = e.config(&t);
            assert!(ids.insert(c["unique_id"].as_str().unwrap().to_string()));
            assert_eq!(c["device"]["identifiers"][0], "presence-agent-den");
            assert_eq!(c["availability_topic"], "presence-agent/den/availability");
            assert!(
                c["state_topic"]
                    .as_str()
                    .unwrap()
                    .starts_with("presence-agent/den/")
            );
            let topic = t.discovery(e.component(), e.key());
            assert!(topic.starts_with("homeassistant/"));
            assert!(topic.ends_with("/config"));
        }
        let away = Entity::Away.config(&t);
        assert_eq!(away["command_topic"], "presence-agent/den/away/set");
        assert_eq!(Entity::Anomaly.config(&t)["options"][2], "anomaly");
    }

    #[test]
    fn node_entities_hang_off_the_agent() {
        let t = topics();
        let node = NodeInfo::new("node-1@192.168.1.4", "node-1@192.168.1.4", "adr018");
        let c = NodeEntity::Connectivity.config(&t, &node);
        assert_eq!(c["device"]["via_device"], "presence-agent-den");
        assert_eq!(c["entity_category"], "diagnostic");
        let state = c["state_topic"].as_str().unwrap();
        assert!(!state.contains('@'), "{state}");
        assert_ne!(
            NodeEntity::Connectivity.config(&t, &node)["unique_id"],
            NodeEntity::PacketRate.config(&t, &node)["unique_id"]
        );
    }
}
