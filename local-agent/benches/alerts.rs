//! Away Alerts costs a user would notice:
//! - `raise`: how long `AlertSink::raise` holds the sensing thread (one SQLite insert, WAL,
//!   `synchronous=NORMAL`), with the sender loop running against the receiver.
//! - `raise_to_delivered`: from `raise` until the row reads `delivered`, through the real sender
//!   loop and rustls to a loopback HTTPS receiver (hyper + tokio-rustls, test CA).

#[path = "../tests/alerts_support/mod.rs"]
mod alerts_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use alerts_support::{Receiver, TempDir, TestCa};
use criterion::{Criterion, criterion_group, criterion_main};
use local_agent::alerts::config::{AlertConfig, RetryPolicy, WebhookAddress};
use local_agent::alerts::outbox::Outbox;
use local_agent::alerts::sender::{self, Sender};
use local_agent::alerts::{AlertKind, AlertSink, DeliveryState, NewAlert};

fn bench_alerts(c: &mut Criterion) {
    let dir = TempDir::new("bench");
    let ca = TestCa::new("bench CA");
    let receiver = Receiver::https(ca.server_config(), &[], 200);
    let cfg = AlertConfig {
        webhook: Some(WebhookAddress::parse(&receiver.url("https", "/hook")).unwrap()),
        extra_ca: Some(ca.write_pem(dir.path())),
        retry: RetryPolicy::default(),
        ..AlertConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let outbox = Arc::new(Outbox::open_in(dir.path(), true, cfg.retry).unwrap());
    let sender = Sender::from_config(&cfg).unwrap().unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let task = runtime.spawn(sender::run(outbox.clone(), sender, cfg.db_poll, stop_rx));

    let mut group = c.benchmark_group("alerts");
    group.bench_function("raise_to_delivered", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let alert = NewAlert::new(AlertKind::Test, "bench", "bench");
                let t0 = Instant::now();
                outbox.raise(alert.clone());
                loop {
                    let rec = outbox.get(&alert.id).unwrap().unwrap();
                    if rec.view.delivery.state == DeliveryState::Delivered {
                        break;
                    }
                    // Polling adds at most this much to each sample.
                    std::thread::sleep(Duration::from_micros(100));
                }
                total += t0.elapsed();
            }
            total
        })
    });
    // After the end-to-end case, so its backlog does not queue ahead of it.
    group.bench_function("raise", |b| {
        b.iter(|| outbox.raise(NewAlert::new(AlertKind::Test, "bench", "bench")))
    });
    group.finish();
    stop.send(true).unwrap();
    runtime.block_on(task).unwrap();
}

criterion_group!(benches, bench_alerts);
criterion_main!(benches);
