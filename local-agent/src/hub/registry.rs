//! The node registry: every node that sent an accepted packet, its measured rate and health,
//! the per-node rate cap, and the hub-level drop counters.
//!
//! A node is keyed by (source address, the id it reports), so two boards that were flashed
//! with the same node id still show up as two nodes. Only authenticated input reaches the
//! registry (loopback, a token-proven WebSocket, or a datagram tagged with a session key), so
//! the address in the key is a fact, not a claim. Nodes silent for `evict_after` are forgotten,
//! and a full registry makes room by forgetting the longest-silent offline node, so ids that
//! stopped sending can never lock out a node that is sending. Its public `id` is `node-<reported id>`
//! (`node-1` for ADR-018 node 1, `node-aa:bb:cc:dd:ee:ff` for a text-line node known by MAC);
//! if another address already uses that id, `@<address>` is appended.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::diagnostics::{NodeHealth, NodeHealthView, Probe};
use crate::engine::records::Fleet;
use crate::sensing::csi::WireFormat;

/// How a node reached the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Udp,
    Websocket,
}

/// Registry limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegistryConfig {
    /// A node with no accepted packet for this long is offline.
    pub offline_after: Duration,
    /// A node offline for this long is forgotten (it leaves `/nodes`).
    pub evict_after: Duration,
    /// Most nodes remembered; when full, the longest-silent offline node makes room, and
    /// packets from further nodes are dropped and counted only while every node is online.
    pub max_nodes: usize,
    /// Per-node token bucket: sustained packets per second …
    pub rate_cap_hz: f64,
    /// … and the burst it tolerates.
    pub burst: f64,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            offline_after: Duration::from_secs(10),
            evict_after: Duration::from_secs(3600),
            max_nodes: 64,
            rate_cap_hz: 500.0,
            burst: 250.0,
        }
    }
}

/// Weight of the newest inter-arrival interval in the rate EWMA: a time constant of about
/// 30 packets, steady against Wi-Fi jitter, settled within a few seconds at 10–100 Hz.
const RATE_ALPHA: f64 = 1.0 / 30.0;

/// One node as `GET /nodes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeView {
    pub id: String,
    /// No naming is configured yet, so the name is the id.
    pub name: String,
    pub addr: String,
    pub transport: Transport,
    pub format: WireFormat,
    pub online: bool,
    /// RFC 3339 UTC of the last accepted packet.
    pub last_seen: String,
    /// Accepted packets per second (EWMA of inter-arrival times); 0 while offline.
    pub rate_hz: f64,
    /// Latest RSSI the node reported; `null` for packets without one.
    pub rssi_dbm: Option<i16>,
    /// Packets accepted from this node.
    pub frames: u64,
    /// Packets from this node dropped by the hub (rate cap, full pipeline queue).
    pub dropped: u64,
}

/// Hub-level counters of input that belongs to no node (or that no node may send).
#[derive(Debug, Default)]
pub struct Counters {
    /// Plain (untagged) UDP datagrams from a non-loopback address.
    pub unknown_sender: AtomicU64,
    /// Session envelopes that did not authenticate: unknown or expired session, a tag that does
    /// not verify, or a packet claiming another node id than its session's.
    pub unauthenticated: AtomicU64,
    /// Authentic session envelopes whose counter was already used (a captured datagram sent
    /// again).
    pub replayed: AtomicU64,
    /// Packets or lines that failed to decode.
    pub malformed: AtomicU64,
    /// Datagrams or messages above the size limit.
    pub oversized: AtomicU64,
    /// Packets dropped by a node's rate cap (also in that node's `dropped`).
    pub rate_limited: AtomicU64,
    /// Packets from new nodes while the registry was full.
    pub too_many_nodes: AtomicU64,
    /// Accepted frames dropped because the pipeline's queue was full (also in `dropped`).
    pub queue_full: AtomicU64,
    /// Valid packets of kinds the hub does not use (vitals, other ADR-018 magics).
    pub ignored: AtomicU64,
    /// Accepted frames not fed to the pipeline because it runs another source.
    pub not_fed: AtomicU64,
    /// WebSocket upgrades refused by the token rule.
    pub unauthorized: AtomicU64,
}

/// A snapshot of [`Counters`] for `/health`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CountersView {
    pub unknown_sender: u64,
    pub unauthenticated: u64,
    pub replayed: u64,
    pub malformed: u64,
    pub oversized: u64,
    pub rate_limited: u64,
    pub too_many_nodes: u64,
    pub queue_full: u64,
    pub ignored: u64,
    pub not_fed: u64,
    pub unauthorized: u64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn view(&self) -> CountersView {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CountersView {
            unknown_sender: r(&self.unknown_sender),
            unauthenticated: r(&self.unauthenticated),
            replayed: r(&self.replayed),
            malformed: r(&self.malformed),
            oversized: r(&self.oversized),
            rate_limited: r(&self.rate_limited),
            too_many_nodes: r(&self.too_many_nodes),
            queue_full: r(&self.queue_full),
            ignored: r(&self.ignored),
            not_fed: r(&self.not_fed),
            unauthorized: r(&self.unauthorized),
        }
    }
}

/// What arrived, as far as the registry cares.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    pub addr: IpAddr,
    pub transport: Transport,
    pub format: WireFormat,
    /// The id the packet reports (ADR-018 node_id, or the MAC of a text line).
    pub reported_id: &'a str,
    pub rssi_dbm: Option<i16>,
    /// What the packet says about the node's signal (channel, clock, gain), for diagnostics.
    pub probe: Probe<'a>,
}

/// The registry's verdict on one packet.
#[derive(Debug, Clone)]
pub enum Admission {
    /// Accepted; `id` is the node's public id (frames forwarded carry it as `node_id`), and
    /// `queued` counts this node's frames waiting for the pipeline (its fair share is enforced
    /// by the feed).
    Accepted { id: String, queued: Arc<AtomicU32> },
    /// Over the node's rate cap.
    RateLimited,
    /// A new node while the registry is full.
    Full,
}

#[derive(Debug)]
struct Node {
    id: String,
    addr: IpAddr,
    transport: Transport,
    format: WireFormat,
    online: bool,
    last_seen: Instant,
    last_seen_wall: jiff::Timestamp,
    interval_s: Option<f64>,
    rssi_dbm: Option<i16>,
    frames: u64,
    dropped: u64,
    tokens: f64,
    tokens_at: Instant,
    health: NodeHealth,
    queued: Arc<AtomicU32>,
}

/// A node that just went offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WentOffline {
    pub id: String,
    pub addr: IpAddr,
    pub last_seen: String,
}

/// The registry; shared by the ingest tasks, the sweeper and the HTTP handlers.
#[derive(Debug)]
pub struct Registry {
    config: RegistryConfig,
    nodes: Mutex<HashMap<(IpAddr, String), Node>>,
    /// `nodes_online << 32 | nodes_total`, updated under the lock, read without it by the feed.
    fleet: AtomicU64,
    pub counters: Counters,
}

fn pack(fleet: Fleet) -> u64 {
    (u64::from(fleet.nodes_online) << 32) | u64::from(fleet.nodes_total)
}

fn unpack(v: u64) -> Fleet {
    Fleet {
        nodes_online: u32::try_from(v >> 32).unwrap_or(u32::MAX),
        nodes_total: u32::try_from(v & 0xFFFF_FFFF).unwrap_or(u32::MAX),
    }
}

impl Registry {
    pub fn new(config: RegistryConfig) -> Self {
        Self {
            config,
            nodes: Mutex::new(HashMap::new()),
            fleet: AtomicU64::new(0),
            counters: Counters::default(),
        }
    }

    pub fn config(&self) -> RegistryConfig {
        self.config
    }

    /// Online and total node counts.
    pub fn fleet(&self) -> Fleet {
        unpack(self.fleet.load(Ordering::Acquire))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(IpAddr, String), Node>> {
        // A panic while holding the lock cannot leave a node half-updated in a way that matters
        // more than losing the registry, so recover the data.
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish_fleet(&self, nodes: &HashMap<(IpAddr, String), Node>) {
        let online = nodes.values().filter(|n| n.online).count();
        let fleet = Fleet {
            nodes_online: u32::try_from(online).unwrap_or(u32::MAX),
            nodes_total: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
        };
        self.fleet.store(pack(fleet), Ordering::Release);
    }

    /// Registers or updates the node behind one packet, applying its rate cap.
    pub fn admit(&self, a: Arrival<'_>, now: Instant) -> Admission {
        let mut nodes = self.lock();
        let key = (a.addr, a.reported_id.to_string());
        let mut changed = false;
        if !nodes.contains_key(&key) {
            if nodes.len() >= self.config.max_nodes {
                // Make room by forgetting the node silent for longest, if it is offline.
                let silent = nodes
                    .iter()
                    .filter(|(_, n)| !n.online)
                    .min_by_key(|(_, n)| n.last_seen)
                    .map(|(k, _)| k.clone());
                let Some(silent) = silent else {
                    Counters::bump(&self.counters.too_many_nodes);
                    return Admission::Full;
                };
                if let Some(gone) = nodes.remove(&silent) {
                    tracing::info!(node = %gone.id, "offline node forgotten to make room");
                }
            }
            let base = format!("node-{}", a.reported_id);
            let id = if nodes.values().any(|n| n.id == base) {
                format!("{base}@{}", a.addr)
            } else {
                base
            };
            tracing::info!(node = %id, addr = %a.addr, transport = ?a.transport, format = ?a.format, "new node");
            nodes.insert(
                key.clone(),
                Node {
                    id,
                    addr: a.addr,
                    transport: a.transport,
                    format: a.format,
                    online: false,
                    last_seen: now,
                    last_seen_wall: jiff::Timestamp::now(),
                    interval_s: None,
                    rssi_dbm: None,
                    frames: 0,
                    dropped: 0,
                    tokens: self.config.burst,
                    tokens_at: now,
                    health: NodeHealth::default(),
                    queued: Arc::new(AtomicU32::new(0)),
                },
            );
            changed = true;
        }
        let Some(node) = nodes.get_mut(&key) else {
            return Admission::Full;
        };
        let dt = now.saturating_duration_since(node.tokens_at).as_secs_f64();
        node.tokens = (node.tokens + dt * self.config.rate_cap_hz).min(self.config.burst);
        node.tokens_at = now;
        if node.tokens < 1.0 {
            node.dropped += 1;
            node.health.drops.rate_limited += 1;
            Counters::bump(&self.counters.rate_limited);
            return Admission::RateLimited;
        }
        node.tokens -= 1.0;
        if node.frames > 0 && node.online {
            let gap = now.saturating_duration_since(node.last_seen).as_secs_f64();
            node.interval_s = Some(match node.interval_s {
                Some(prev) => prev + RATE_ALPHA * (gap - prev),
                None => gap,
            });
        }
        node.frames += 1;
        node.last_seen = now;
        node.last_seen_wall = jiff::Timestamp::now();
        node.transport = a.transport;
        node.format = a.format;
        if a.rssi_dbm.is_some() {
            node.rssi_dbm = a.rssi_dbm;
        }
        if !node.online {
            node.online = true;
            // A node coming back starts a fresh rate: the offline gap is not an interval.
            node.interval_s = None;
            node.health.reconnected();
            changed = true;
            tracing::info!(node = %node.id, "node online");
        }
        node.health.observe(now, a.rssi_dbm, &a.probe);
        let id = node.id.clone();
        let queued = Arc::clone(&node.queued);
        if changed {
            self.publish_fleet(&nodes);
        }
        Admission::Accepted { id, queued }
    }

    /// Counts a packet that was accepted but then dropped (pipeline queue full).
    pub fn count_dropped(&self, id: &str) {
        let mut nodes = self.lock();
        if let Some(node) = nodes.values_mut().find(|n| n.id == id) {
            node.dropped += 1;
            node.health.drops.queue_full += 1;
        }
    }

    /// Marks nodes silent for longer than `offline_after` offline and forgets those silent for
    /// longer than `evict_after`; returns those that just went offline (each once per offline
    /// episode).
    pub fn sweep(&self, now: Instant) -> Vec<WentOffline> {
        let mut nodes = self.lock();
        let mut gone = Vec::new();
        let before = nodes.len();
        let evict_after = self.config.evict_after;
        nodes.retain(|_, n| {
            let keep = n.online || now.saturating_duration_since(n.last_seen) <= evict_after;
            if !keep {
                tracing::info!(node = %n.id, "node silent too long; forgotten");
            }
            keep
        });
        let evicted = nodes.len() != before;
        for node in nodes.values_mut() {
            if node.online
                && now.saturating_duration_since(node.last_seen) > self.config.offline_after
            {
                node.online = false;
                gone.push(WentOffline {
                    id: node.id.clone(),
                    addr: node.addr,
                    last_seen: format!("{:.0}", node.last_seen_wall),
                });
            }
        }
        if evicted || !gone.is_empty() {
            self.publish_fleet(&nodes);
        }
        gone
    }

    /// Signal health of every node, sorted by id (the doctor and the live view).
    pub fn health(&self) -> Vec<NodeHealthView> {
        let nodes = self.lock();
        let mut out: Vec<NodeHealthView> = nodes.values().map(|n| n.health.view(&n.id)).collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// All nodes, sorted by id.
    pub fn view(&self) -> Vec<NodeView> {
        let nodes = self.lock();
        let mut out: Vec<NodeView> = nodes
            .values()
            .map(|n| NodeView {
                id: n.id.clone(),
                name: n.id.clone(),
                addr: n.addr.to_string(),
                transport: n.transport,
                format: n.format,
                online: n.online,
                last_seen: format!("{:.3}", n.last_seen_wall),
                rate_hz: match (n.online, n.interval_s) {
                    (true, Some(i)) if i > 0.0 => (1000.0 / i).round() / 1000.0,
                    _ => 0.0,
                },
                rssi_dbm: n.rssi_dbm,
                frames: n.frames,
                dropped: n.dropped,
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(addr: &str, id: &'static str) -> Arrival<'static> {
        Arrival {
            addr: addr.parse().unwrap(),
            transport: Transport::Udp,
            format: WireFormat::Adr018,
            reported_id: id,
            rssi_dbm: Some(-60),
            probe: Probe::default(),
        }
    }

    #[test]
    fn rate_cap_offline_and_ids() {
        let reg = Registry::new(RegistryConfig {
            offline_after: Duration::from_secs(1),
            evict_after: Duration::from_secs(5),
            max_nodes: 2,
            rate_cap_hz: 10.0,
            burst: 5.0,
        });
        let t0 = Instant::now();
        let mut accepted = 0;
        for i in 0..20 {
            let now = t0 + Duration::from_millis(i);
            if matches!(
                reg.admit(arrival("10.0.0.1", "1"), now),
                Admission::Accepted { .. }
            ) {
                accepted += 1;
            }
        }
        assert_eq!(accepted, 5, "the burst, then the cap");
        assert_eq!(reg.view()[0].dropped, 15);
        assert!(matches!(
            reg.admit(arrival("10.0.0.2", "1"), t0),
            Admission::Accepted { id, .. } if id == "node-1@10.0.0.2"
        ));
        assert!(matches!(
            reg.admit(arrival("10.0.0.3", "9"), t0),
            Admission::Full
        ));
        assert_eq!(reg.fleet().nodes_online, 2);
        let gone = reg.sweep(t0 + Duration::from_secs(2));
        assert_eq!(gone.len(), 2);
        assert!(reg.sweep(t0 + Duration::from_secs(3)).is_empty());
        assert_eq!(
            reg.fleet(),
            Fleet {
                nodes_online: 0,
                nodes_total: 2
            }
        );
        // Full of offline nodes: a new one takes the place of the longest silent.
        let t3 = t0 + Duration::from_secs(3);
        assert!(matches!(
            reg.admit(arrival("10.0.0.3", "9"), t3),
            Admission::Accepted { id, .. } if id == "node-9"
        ));
        assert_eq!(reg.fleet().nodes_total, 2);
        // Silent past evict_after: forgotten.
        reg.sweep(t3 + Duration::from_secs(6));
        assert_eq!(reg.fleet().nodes_total, 1);
        assert!(reg.sweep(t3 + Duration::from_secs(60)).is_empty());
        assert_eq!(reg.fleet().nodes_total, 0);
    }

    #[test]
    fn rate_is_the_inverse_mean_interval() {
        let reg = Registry::new(RegistryConfig::default());
        let t0 = Instant::now();
        for i in 0..200 {
            reg.admit(arrival("10.0.0.1", "1"), t0 + Duration::from_millis(i * 50));
        }
        let rate = reg.view()[0].rate_hz;
        assert!((rate - 20.0).abs() < 0.01, "{rate}");
    }
}
