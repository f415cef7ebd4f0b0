//! Arbitrary bytes through the hub's ingest, as a UDP/WebSocket binary packet and (when UTF-8)
//! as a WebSocket text line. Besides never panicking, every input must be accounted for by
//! exactly one outcome: admitted to a node, or counted under one drop reason.
#![no_main]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use local_agent::hub::auth::UdpTrust;
use local_agent::hub::feed;
use local_agent::hub::ingest::Ingest;
use local_agent::hub::registry::{Registry, RegistryConfig, Transport};

fn outcomes(registry: &Registry) -> u64 {
    let c = &registry.counters;
    let frames: u64 = registry.view().iter().map(|n| n.frames).sum();
    frames
        + c.rate_limited.load(Ordering::Relaxed)
        + c.too_many_nodes.load(Ordering::Relaxed)
        + c.oversized.load(Ordering::Relaxed)
        + c.malformed.load(Ordering::Relaxed)
        + c.ignored.load(Ordering::Relaxed)
}

fuzz_target!(|data: &[u8]| {
    let registry = Arc::new(Registry::new(RegistryConfig::default()));
    let (sink, _feed) = feed::channel(Arc::clone(&registry));
    let ingest = Ingest::new(
        Arc::clone(&registry),
        Arc::new(UdpTrust::new(Vec::new())),
        Some(sink),
    );
    let peer = "192.0.2.7".parse().expect("ip");
    let now = Instant::now();
    ingest.datagram(data, peer, Transport::Udp, now);
    assert_eq!(outcomes(&registry), 1);
    if let Ok(text) = std::str::from_utf8(data) {
        ingest.line(text, peer, now);
        assert_eq!(outcomes(&registry), 2);
    }
    assert!(registry.view().len() <= 2);
});
