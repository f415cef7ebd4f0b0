//! Load generator for the hub's UDP ingest with the pipeline running.
//!
//! Starts a hub feeding an engine (as `run --source hub` does), sends ADR-018 raw CSI frames
//! (64 subcarriers, 148 bytes, like the RuView nodes) from one loopback socket at a fixed rate
//! spread over many node ids, and reports what the hub accepted and what it cost in CPU. The
//! CPU is read per thread from /proc, so the generator's own thread is not counted.
//!
//! ```sh
//! cargo run --release -p local-agent --example hub_load -- [RATE_FPS] [SECONDS] [NODES]
//! ```
//! Defaults: 25000 frames/s for 10 s over 64 nodes (≈390 frames/s each, under the 500/s cap).

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

use local_agent::alerts::AwayMode;
use local_agent::alerts::memory::MemoryAlertLog;
use local_agent::engine::{Engine, EngineConfig};
use local_agent::hub::registry::{Registry, RegistryConfig};
use local_agent::hub::{Hub, HubConfig, HubDeps, feed};
use local_agent::sensing::csi::RawCsiPacket;

/// CPU seconds (user + system) of every thread of this process except those named `loadgen`.
fn hub_cpu_seconds() -> f64 {
    let ticks_per_s = 100.0; // USER_HZ on Linux
    let mut total = 0.0;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim() == "loadgen" {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let utime: f64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        let stime: f64 = fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        total += (utime + stime) / ticks_per_s;
    }
    total
}

fn packet(node: u8, seq: u32) -> Vec<u8> {
    RawCsiPacket {
        node_id: node,
        n_antennas: 1,
        n_subcarriers: 64,
        freq_mhz: 2437,
        sequence: seq,
        rssi: -50,
        noise_floor: -95,
        reserved: [0, 0],
        buffer: (0..128)
            .map(|i| ((i * 7 + seq as usize) % 60) as i8 - 30)
            .collect(),
    }
    .to_bytes()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rate: f64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(25_000.0);
    let seconds: f64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(10.0);
    let nodes: u8 = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let registry = Arc::new(Registry::new(RegistryConfig::default()));
        let (sink, feed) = feed::channel(Arc::clone(&registry));
        let engine = Engine::start(
            EngineConfig {
                port: 0,
                ..EngineConfig::default()
            },
            Box::new(feed),
        )
        .await
        .expect("engine");
        let hub = Hub::start(
            HubConfig {
                bind: "127.0.0.1".parse().expect("ip"),
                port: 0,
                csi_port: 0,
                ..HubConfig::default()
            },
            HubDeps {
                alerts: Arc::new(MemoryAlertLog::new()),
                away: AwayMode::default(),
                sink: Some(sink),
                registry: Arc::clone(&registry),
            },
        )
        .await
        .expect("hub");
        let target = hub.udp_addr();
        let packets: Vec<Vec<u8>> = (0..1024u32)
            .map(|i| packet((i % u32::from(nodes)) as u8, i))
            .collect();
        let cpu0 = hub_cpu_seconds();
        let started = Instant::now();
        let sender = std::thread::Builder::new()
            .name("loadgen".into())
            .spawn(move || {
                let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
                socket.connect(target).expect("connect");
                let mut sent: u64 = 0;
                let start = Instant::now();
                let total = (rate * seconds) as u64;
                while sent < total {
                    // Send what is due, then nap: an even stream, not one burst.
                    let due = (start.elapsed().as_secs_f64() * rate) as u64;
                    while sent < due.min(total) {
                        let p = &packets[(sent % packets.len() as u64) as usize];
                        if socket.send(p).is_ok() {
                            sent += 1;
                        }
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
                sent
            })
            .expect("sender");
        let sent = tokio::task::spawn_blocking(move || sender.join().expect("sender joins"))
            .await
            .expect("join");
        // Let the last datagrams drain through the pipeline.
        let drain = Instant::now();
        let snapshots = engine.snapshots();
        let mut last = 0;
        while drain.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let frames = snapshots.borrow().estimates.frames;
            if frames == last && frames > 0 {
                break;
            }
            last = frames;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = hub_cpu_seconds() - cpu0;
        let view = registry.view();
        let accepted: u64 = view.iter().map(|n| n.frames).sum();
        let dropped: u64 = view.iter().map(|n| n.dropped).sum();
        let pipeline = snapshots.borrow().estimates.frames;
        let counters = registry.counters.view();
        let send_s = seconds;
        let lost = sent.saturating_sub(accepted + counters.rate_limited);
        println!(
            "offered      {sent} frames in {send_s:.1} s ({:.0} frames/s), {nodes} nodes",
            sent as f64 / send_s
        );
        println!(
            "admitted     {accepted} by the hub (sender allowed, decoded, under the node's rate cap)"
        );
        println!(
            "processed    {pipeline} by the pipeline ({:.0} frames/s; {:.2} % of offered)",
            pipeline as f64 / send_s,
            100.0 * pipeline as f64 / sent.max(1) as f64
        );
        println!(
            "dropped      {dropped} by the hub (rate cap {} / pipeline queue full {}); {lost} lost in the kernel (socket buffer)",
            counters.rate_limited, counters.queue_full
        );
        println!(
            "hub CPU      {cpu:.2} s over {wall:.1} s wall = {:.2} cores (ingest + pipeline + HTTP; generator excluded)",
            cpu / wall
        );
        println!(
            "per frame    {:.2} µs CPU per processed frame → ≈ {:.0} frames/s on one core",
            1e6 * cpu / pipeline.max(1) as f64,
            pipeline as f64 / cpu
        );
        hub.shutdown().await;
        engine.shutdown().await;
    });
}
