//! Arbitrary bytes through the hub's ingest: as a WebSocket binary packet, as a UDP datagram
//! from a remote sender (plain, so dropped before decoding), sealed under a live session (so
//! authenticated and decoded), and (when UTF-8) as a WebSocket text line. Besides never
//! panicking, every input must be accounted for by exactly one outcome: admitted to a node, or
//! counted under one drop reason.
#![no_main]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use local_agent::hub::feed;
use local_agent::hub::ingest::Ingest;
use local_agent::hub::registry::{Registry, RegistryConfig, Transport};
use local_agent::hub::session::{Sessions, seal};

fn outcomes(registry: &Registry) -> u64 {
    let c = &registry.counters;
    let frames: u64 = registry.view().iter().map(|n| n.frames).sum();
    frames
        + c.rate_limited.load(Ordering::Relaxed)
        + c.too_many_nodes.load(Ordering::Relaxed)
        + c.oversized.load(Ordering::Relaxed)
        + c.malformed.load(Ordering::Relaxed)
        + c.ignored.load(Ordering::Relaxed)
        + c.unknown_sender.load(Ordering::Relaxed)
        + c.unauthenticated.load(Ordering::Relaxed)
        + c.replayed.load(Ordering::Relaxed)
}

fuzz_target!(|data: &[u8]| {
    let registry = Arc::new(Registry::new(RegistryConfig::default()));
    let (sink, _feed) = feed::channel(Arc::clone(&registry));
    let sessions = Arc::new(Sessions::default());
    let ingest = Ingest::new(Arc::clone(&registry), Arc::clone(&sessions), Some(sink));
    let peer = "192.0.2.7".parse().expect("ip");
    let now = Instant::now();
    let mut want = 0;
    ingest.datagram(data, peer, Transport::Websocket, now);
    want += 1;
    assert_eq!(outcomes(&registry), want);
    let _ = ingest.udp(data, peer, now);
    want += 1;
    assert_eq!(outcomes(&registry), want);
    let node_id = data.get(4).copied().unwrap_or(0);
    let grant = sessions.open(peer, node_id, now);
    let _ = ingest.udp(&seal(&grant.key, grant.session_id, 1, data), peer, now);
    want += 1;
    assert_eq!(outcomes(&registry), want);
    if let Ok(text) = std::str::from_utf8(data) {
        ingest.line(text, peer, now);
        want += 1;
        assert_eq!(outcomes(&registry), want);
    }
    assert!(registry.view().len() <= 3);
});
