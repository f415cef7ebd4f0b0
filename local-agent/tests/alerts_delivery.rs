//! Away Alerts delivery against a real HTTPS receiver on loopback: the request on the wire,
//! retries with backoff, giving up after the retry window, and refusing an untrusted certificate.

mod alerts_support;

use std::sync::Arc;
use std::time::Duration;

use alerts_support::{Receiver, TempDir, TestCa, closed_port, wait_until_async};
use local_agent::alerts::config::{AlertConfig, RetryPolicy, WebhookAddress};
use local_agent::alerts::outbox::Outbox;
use local_agent::alerts::sender::{self, Sender};
use local_agent::alerts::{AlertKind, AlertLog, AlertSink, DeliveryState, NewAlert};
use tokio::sync::watch;

const LIMIT: Duration = Duration::from_secs(20);

/// Fast retries so the tests take milliseconds: still exponential with jitter.
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(200),
        window: Duration::from_secs(60),
    }
}

fn config(url: &str, ca: Option<std::path::PathBuf>, retry: RetryPolicy) -> AlertConfig {
    AlertConfig {
        webhook: Some(WebhookAddress::parse(url).unwrap()),
        extra_ca: ca,
        retry,
        request_timeout: Duration::from_secs(5),
        db_poll: Duration::from_millis(500),
        ..AlertConfig::default()
    }
}

/// An outbox in `dir` with its sender loop running.
struct Running {
    outbox: Arc<Outbox>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn start(dir: &TempDir, config: &AlertConfig) -> Self {
        let sender = Sender::from_config(config).unwrap().unwrap();
        let outbox = Arc::new(Outbox::open_in(dir.path(), true, config.retry).unwrap());
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(sender::run(outbox.clone(), sender, config.db_poll, stop_rx));
        Self { outbox, stop, task }
    }

    fn state(&self, id: &str) -> local_agent::alerts::outbox::AlertRecord {
        self.outbox.get(id).unwrap().expect("the alert is stored")
    }

    async fn stop(self) {
        self.stop.send(true).unwrap();
        tokio::time::timeout(LIMIT, self.task)
            .await
            .expect("the sender stops")
            .unwrap();
    }
}

#[tokio::test]
async fn headers_and_body_reach_the_receiver_exactly() {
    let dir = TempDir::new("exact");
    let ca = TestCa::new("exact CA");
    let receiver = Receiver::https(ca.server_config(), &[], 200);
    let cfg = config(
        &receiver.url("https", "/hook/secret-topic"),
        Some(ca.write_pem(dir.path())),
        fast_retry(),
    );
    let running = Running::start(&dir, &cfg);
    let alert = NewAlert::new(
        AlertKind::Fall,
        "Fall detected",
        "A fall was detected in the living room and nobody has moved since.",
    );
    running.outbox.raise(alert.clone());

    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.state
            == DeliveryState::Delivered)
        .await,
        "{:?}",
        running.state(&alert.id)
    );
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/hook/secret-topic");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("title"), Some("Fall detected"));
    assert_eq!(r.header("priority"), Some("high"));
    assert_eq!(r.header("tags"), Some("warning"));
    assert_eq!(r.header("idempotency-key"), Some(alert.id.as_str()));
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "message": "A fall was detected in the living room and nobody has moved since.",
            "source": "presence-agent",
            "title": "Fall detected",
        })
    );
    assert_eq!(body.as_object().unwrap().len(), 3, "no other fields");

    let rec = running.state(&alert.id);
    assert_eq!(rec.view.delivery.attempts, 1);
    assert_eq!(rec.view.delivery.last_status, Some(200));
    assert!(rec.view.delivery.delivered_at.is_some());
    // The log the hub serves shows it, newest first.
    let listed = running.outbox.recent(24).unwrap();
    assert_eq!(listed[0].id, alert.id);
    assert_eq!(listed[0].delivery.state, DeliveryState::Delivered);
    running.stop().await;
}

#[tokio::test]
async fn three_500s_then_200_is_delivered_once_after_four_attempts() {
    let dir = TempDir::new("retry");
    let ca = TestCa::new("retry CA");
    let receiver = Receiver::https(ca.server_config(), &[500, 500, 500], 200);
    let cfg = config(
        &receiver.url("https", "/hook"),
        Some(ca.write_pem(dir.path())),
        fast_retry(),
    );
    let running = Running::start(&dir, &cfg);
    let alert = NewAlert::new(AlertKind::NoBreathing, "No breathing", "m");
    running.outbox.raise(alert.clone());

    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.state
            == DeliveryState::Delivered)
        .await,
        "{:?}",
        running.state(&alert.id)
    );
    let rec = running.state(&alert.id);
    assert_eq!(rec.view.delivery.attempts, 4);
    assert_eq!(rec.view.delivery.last_status, Some(200));
    let got = receiver.received();
    let answered: Vec<u16> = got.iter().map(|r| r.answered).collect();
    assert_eq!(answered, vec![500, 500, 500, 200]);
    assert!(
        got.iter().all(|r| r.key() == alert.id),
        "same key each time"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_receiver_down_for_the_whole_window_marks_the_alert_failed() {
    let dir = TempDir::new("down");
    let retry = RetryPolicy {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(50),
        window: Duration::from_millis(400),
    };
    let cfg = config(
        &format!("https://127.0.0.1:{}/hook", closed_port()),
        None,
        retry,
    );
    let running = Running::start(&dir, &cfg);
    let alert = NewAlert::new(AlertKind::Anomaly, "Unusual night", "m");
    running.outbox.raise(alert.clone());

    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.state
            == DeliveryState::Failed)
        .await,
        "{:?}",
        running.state(&alert.id)
    );
    let listed = running.outbox.recent(1).unwrap();
    let view = listed.iter().find(|a| a.id == alert.id).unwrap();
    assert_eq!(view.delivery.state, DeliveryState::Failed);
    assert!(view.delivery.attempts >= 3, "{view:?}");
    assert_eq!(view.delivery.last_status, None, "no reply, so no status");
    assert_eq!(view.delivery.delivered_at, None);
    let rec = running.state(&alert.id);
    assert!(
        rec.last_error
            .as_deref()
            .is_some_and(|e| e.contains("connect")),
        "{rec:?}"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused_and_the_alert_stays_pending() {
    let dir = TempDir::new("wrong-ca");
    let real = TestCa::new("receiver CA");
    let other = TestCa::new("some other CA");
    let receiver = Receiver::https(real.server_config(), &[], 200);
    let cfg = config(
        &receiver.url("https", "/hook"),
        Some(other.write_pem(dir.path())),
        RetryPolicy {
            base: Duration::from_secs(30),
            cap: Duration::from_secs(60),
            window: Duration::from_secs(3600),
        },
    );
    let running = Running::start(&dir, &cfg);
    let alert = NewAlert::new(AlertKind::Test, "Test", "m");
    running.outbox.raise(alert.clone());

    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.attempts
            >= 1)
        .await
    );
    let rec = running.state(&alert.id);
    assert_eq!(rec.view.delivery.state, DeliveryState::Pending);
    assert_eq!(rec.view.delivery.last_status, None);
    let error = rec.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("certificate") || error.contains("UnknownIssuer"),
        "the TLS reason is recorded: {error}"
    );
    assert!(
        !error.contains("/hook"),
        "the address is not in the error: {error}"
    );
    assert!(rec.next_attempt_at.is_some(), "a retry is scheduled");
    assert!(
        receiver.received().is_empty(),
        "nothing reached the receiver"
    );
    running.stop().await;
}

#[tokio::test]
async fn alerts_written_by_another_process_are_picked_up_without_a_wakeup() {
    let dir = TempDir::new("other-process");
    let ca = TestCa::new("poll CA");
    let receiver = Receiver::https(ca.server_config(), &[], 204);
    let cfg = config(
        &receiver.url("https", "/hook"),
        Some(ca.write_pem(dir.path())),
        fast_retry(),
    );
    let running = Running::start(&dir, &cfg);
    // A second connection to the same file stands in for the CLI: its insert notifies nobody
    // in the sender's process.
    let other = Outbox::open_in(dir.path(), true, cfg.retry).unwrap();
    let alert = NewAlert::new(AlertKind::NodeOffline, "Node offline", "m");
    other
        .insert(&alert, local_agent::alerts::outbox::now_ms(), None)
        .unwrap();
    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.state
            == DeliveryState::Delivered)
        .await
    );
    assert_eq!(
        running.state(&alert.id).view.delivery.last_status,
        Some(204)
    );
    assert_eq!(receiver.received().len(), 1);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_walking_in_while_away_raises_one_delivered_alert() {
    use local_agent::alerts::{Alerts, AwayMode};
    use local_agent::engine::source::SimulatorFeed;
    use local_agent::engine::{Engine, EngineConfig};

    let dir = TempDir::new("away-e2e");
    let ca = TestCa::new("away CA");
    let receiver = Receiver::https(ca.server_config(), &[], 200);
    let cfg = config(
        &receiver.url("https", "/hook"),
        Some(ca.write_pem(dir.path())),
        fast_retry(),
    );
    let alerts = Alerts::open(cfg, dir.path()).unwrap();
    let log = alerts.log();
    let feed = SimulatorFeed::new("walk", 3, 1.0).unwrap();
    let engine = Engine::start(
        EngineConfig {
            port: 0,
            ..EngineConfig::default()
        },
        Box::new(feed),
    )
    .await
    .unwrap();
    let away = AwayMode::default();
    away.set(true);
    let tasks = alerts.spawn(engine.snapshots(), away.clone());

    let delivered = wait_until_async(Duration::from_secs(40), || {
        log.recent(1).unwrap().iter().any(|a| {
            a.kind == AlertKind::PresenceWhileAway && a.delivery.state == DeliveryState::Delivered
        })
    })
    .await;
    assert!(delivered, "{:?}", log.recent(1).unwrap());
    let got = receiver.received();
    assert_eq!(got.len(), 1, "one alert per episode");
    let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["title"], "Someone is home while you are away");
    tasks.shutdown().await;
    engine.shutdown().await;
}

#[tokio::test]
async fn credentials_in_the_address_go_out_as_basic_auth_not_in_the_url() {
    use base64::Engine as _;
    let dir = TempDir::new("basic");
    let ca = TestCa::new("basic CA");
    let receiver = Receiver::https(ca.server_config(), &[], 200);
    let url = format!("https://:tk_s3cret@{}/topic", receiver.addr);
    let cfg = config(&url, Some(ca.write_pem(dir.path())), fast_retry());
    assert_eq!(
        cfg.webhook.as_ref().unwrap().to_string(),
        format!("https://{}", receiver.addr),
        "the loggable form has no credentials"
    );
    let running = Running::start(&dir, &cfg);
    let alert = NewAlert::new(AlertKind::Test, "t", "m");
    running.outbox.raise(alert.clone());
    assert!(
        wait_until_async(LIMIT, || running.state(&alert.id).view.delivery.state
            == DeliveryState::Delivered)
        .await
    );
    let got = receiver.received();
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(":tk_s3cret")
    );
    assert_eq!(got[0].header("authorization"), Some(expected.as_str()));
    assert_eq!(got[0].path, "/topic");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_window_covering_now_switches_away_mode_on_at_start() {
    use local_agent::alerts::schedule::AwaySchedule;
    use local_agent::alerts::{Alerts, AwayMode};
    use local_agent::engine::source::SimulatorFeed;
    use local_agent::engine::{Engine, EngineConfig};

    let dir = TempDir::new("schedule");
    let days: Vec<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        .iter()
        .map(|d| d.to_string())
        .collect();
    let cfg = AlertConfig {
        schedule: AwaySchedule::parse([(days.as_slice(), "00:00", "24:00")]).unwrap(),
        ..AlertConfig::default()
    };
    let alerts = Alerts::open(cfg, dir.path()).unwrap();
    let engine = Engine::start(
        EngineConfig {
            port: 0,
            ..EngineConfig::default()
        },
        Box::new(SimulatorFeed::new("empty", 1, 1.0).unwrap()),
    )
    .await
    .unwrap();
    let away = AwayMode::default();
    assert!(!away.is_on());
    let tasks = alerts.spawn(engine.snapshots(), away.clone());
    assert!(wait_until_async(LIMIT, || away.is_on()).await);
    tasks.shutdown().await;
    engine.shutdown().await;
}
