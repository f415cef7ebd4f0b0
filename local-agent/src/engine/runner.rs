//! The runner: the one thread that owns the [`Pipeline`] and a source's frames.
//!
//! It feeds each frame into the pipeline and publishes an immutable [`Snapshot`] behind an `Arc`
//! in a `tokio::sync::watch` channel. Handlers only clone that `Arc`, so a burst of HTTP requests
//! never waits on DSP and DSP never waits on a slow client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::records::{AnomalyRecord, BaselineRecord, FallRecord, Fleet};
use super::source::{FeedHandle, SourceEvent, SourceKind};
use super::watchers::Watch;
use crate::alerts::PresenceSource;
use crate::sensing::pipeline::{Estimates, Pipeline, PipelineConfig};

/// Everything a handler needs, frozen at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub source: SourceKind,
    /// Publication sequence number (the `/frame` `tick`).
    pub tick: u64,
    pub estimates: Estimates,
    /// Wall-clock time of publication.
    pub published_at: jiff::Timestamp,
    /// When the newest frame reached the runner; `None` before the first.
    pub last_frame_at: Option<Instant>,
    /// Frames per wall-clock second over the last completed measuring window.
    pub rate_hz: f64,
    pub fleet: Fleet,
    /// The source has no more frames (a replay reached its end).
    pub source_ended: bool,
    pub fall: FallRecord,
    pub anomaly: AnomalyRecord,
    pub baseline: BaselineRecord,
}

/// A frame older than this makes `/health` report `ok: false`.
pub const STALE_AFTER: Duration = Duration::from_secs(5);

/// Window over which `rate_hz` is measured.
const RATE_WINDOW: Duration = Duration::from_secs(1);

impl Snapshot {
    /// The state before any frame has arrived.
    pub fn initial(source: SourceKind) -> Self {
        let baseline = BaselineRecord::empty();
        Self {
            source,
            tick: 0,
            estimates: Estimates::default(),
            published_at: jiff::Timestamp::now(),
            last_frame_at: None,
            rate_hz: 0.0,
            fleet: Fleet::default(),
            source_ended: false,
            fall: FallRecord::inactive(),
            anomaly: AnomalyRecord::learning(source, baseline.nights_observed),
            baseline,
        }
    }

    /// True when a frame arrived within [`STALE_AFTER`] of `now`.
    pub fn is_fresh(&self, now: Instant) -> bool {
        self.last_frame_at
            .is_some_and(|t| now.saturating_duration_since(t) <= STALE_AFTER)
    }

    /// The measured rate, or 0 once frames have stopped arriving (a stale window is not a rate).
    pub fn rate_at(&self, now: Instant) -> f64 {
        match self.last_frame_at {
            Some(t) if now.saturating_duration_since(t) <= 2 * RATE_WINDOW => self.rate_hz,
            _ => 0.0,
        }
    }

    /// True only while a real sensor link has a node online.
    pub fn csi_connected(&self) -> bool {
        self.source.is_live() && self.fleet.nodes_online > 0
    }
}

/// The away rule's view of a snapshot (see [`crate::alerts::PresenceSource`]).
impl PresenceSource for Snapshot {
    fn present_at(&self, now: Instant) -> bool {
        self.is_fresh(now) && self.estimates.present
    }
}

/// Read side of the published snapshots.
pub type SnapshotReceiver = watch::Receiver<Arc<Snapshot>>;

/// The running runner thread.
pub struct Runner {
    snapshots: SnapshotReceiver,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Most events folded into one publication, so a fast replay publishes in batches while
/// real-time sources still publish every frame.
const MAX_BATCH: usize = 256;

impl Runner {
    /// Starts the runner thread on `feed` with a fresh pipeline; `watch` (the fall monitor and
    /// routine learner) sees every published estimate.
    pub fn spawn(feed: FeedHandle, config: PipelineConfig, watch: Watch) -> std::io::Result<Self> {
        let mut first = Snapshot::initial(feed.kind);
        fill(&watch, &mut first);
        let initial = Arc::new(first);
        let (tx, snapshots) = watch::channel(initial);
        let stop = Arc::new(AtomicBool::new(false));
        let stop_thread = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("runner".to_string())
            .spawn(move || run(feed, Pipeline::new(config), watch, tx, &stop_thread))?;
        Ok(Self {
            snapshots,
            stop,
            thread: Some(thread),
        })
    }

    /// A receiver of the published snapshots.
    pub fn snapshots(&self) -> SnapshotReceiver {
        self.snapshots.clone()
    }

    /// Stops the runner and its source and waits for both.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("runner thread panicked");
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Measures frames per wall-clock second over consecutive windows.
struct RateMeter {
    window_start: Option<Instant>,
    count: u64,
    rate_hz: f64,
}

impl RateMeter {
    fn new() -> Self {
        Self {
            window_start: None,
            count: 0,
            rate_hz: 0.0,
        }
    }

    fn frame(&mut self, now: Instant) {
        let start = *self.window_start.get_or_insert(now);
        self.count += 1;
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= RATE_WINDOW {
            self.rate_hz = self.count as f64 / elapsed.as_secs_f64();
            self.window_start = Some(now);
            self.count = 0;
        }
    }
}

fn run(
    feed: FeedHandle,
    mut pipeline: Pipeline,
    mut watch: Watch,
    tx: watch::Sender<Arc<Snapshot>>,
    stop: &AtomicBool,
) {
    let mut snap = Snapshot::initial(feed.kind);
    fill(&watch, &mut snap);
    let mut rate = RateMeter::new();
    tracing::info!(source = %feed.kind, "runner started");
    'outer: while !stop.load(Ordering::Relaxed) {
        let first = match feed.events.recv_timeout(Duration::from_millis(100)) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let mut changed = apply(&mut pipeline, &mut snap, &mut rate, first);
        for _ in 1..MAX_BATCH {
            match feed.events.try_recv() {
                Ok(event) => changed |= apply(&mut pipeline, &mut snap, &mut rate, event),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    publish(&tx, &mut snap, &pipeline, &mut watch, &rate);
                    break 'outer;
                }
            }
        }
        if changed {
            publish(&tx, &mut snap, &pipeline, &mut watch, &rate);
        }
    }
    // The channel closed without a stop request: the source has played out (a replay ended).
    if !stop.load(Ordering::Relaxed) {
        snap.source_ended = true;
        publish(&tx, &mut snap, &pipeline, &mut watch, &rate);
        tracing::info!(
            source = %snap.source,
            frames = snap.estimates.frames,
            "source done; serving the last estimates"
        );
    }
    // The source's sender polls the stop flag while the channel is full, so this cannot hang.
    if let Err(e) = feed.stop() {
        tracing::warn!(error = %e, "source stopped with an error");
    }
}

/// Applies one event; true when the published view changes.
fn apply(
    pipeline: &mut Pipeline,
    snap: &mut Snapshot,
    rate: &mut RateMeter,
    event: SourceEvent,
) -> bool {
    match event {
        SourceEvent::Frame(frame) => {
            let now = Instant::now();
            pipeline.push(&frame);
            rate.frame(now);
            snap.last_frame_at = Some(now);
            true
        }
        SourceEvent::Fleet(fleet) => {
            snap.fleet = fleet;
            true
        }
    }
}

/// Puts the watchers' records into a snapshot.
fn fill(watch: &Watch, snap: &mut Snapshot) {
    (snap.fall, snap.anomaly, snap.baseline) = watch.records(snap.fleet.nodes_online);
}

fn publish(
    tx: &watch::Sender<Arc<Snapshot>>,
    snap: &mut Snapshot,
    pipeline: &Pipeline,
    watch: &mut Watch,
    rate: &RateMeter,
) {
    snap.tick += 1;
    snap.estimates = pipeline.estimates();
    snap.published_at = jiff::Timestamp::now();
    snap.rate_hz = rate.rate_hz;
    watch.observe(snap.published_at, &snap.estimates);
    fill(watch, snap);
    // `send_replace` succeeds even with no receivers, so the runner keeps going between requests.
    tx.send_replace(Arc::new(snap.clone()));
}
