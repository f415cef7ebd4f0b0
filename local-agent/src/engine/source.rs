//! Frame feeds: where the runner's frames come from, and how fast.
//!
//! Every source runs on its own thread and delivers [`SourceEvent`]s over one bounded channel, so
//! a slow pipeline applies back-pressure to a fast source (replay `--fast`) instead of growing a
//! queue, and a source that blocks (a file read, a socket) never stalls the HTTP handlers. A new
//! source (the hub's live nodes) only implements [`FrameFeed`]: it sends `Frame`s, and `Fleet`
//! updates whenever its node registry changes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::sensing::csi::CsiFrame;
use crate::sensing::source::replay::{ReplayError, ReplaySource};
use crate::sensing::source::simulator::{self, Segment, SimConfig, Simulator};

/// Which kind of source feeds the pipeline; serialised as the `source` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Simulator,
    Replay,
    Hub,
}

impl SourceKind {
    /// Only the hub carries real sensor data; simulated and replayed frames are never "live".
    pub fn is_live(self) -> bool {
        matches!(self, SourceKind::Hub)
    }

    /// A word for sentences ("simulated data is never learned from").
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::Simulator => "simulated",
            SourceKind::Replay => "replayed",
            SourceKind::Hub => "live",
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SourceKind::Simulator => "simulator",
            SourceKind::Replay => "replay",
            SourceKind::Hub => "hub",
        })
    }
}

/// Real sensor nodes known to the source. The simulator and replay have none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fleet {
    pub nodes_online: u32,
    pub nodes_total: u32,
}

/// What a source tells the runner.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceEvent {
    /// One decoded frame.
    Frame(CsiFrame),
    /// The set of real sensor nodes changed (hub only).
    Fleet(Fleet),
}

/// Why a source could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("unknown simulator scene {name:?}; known scenes: {known}")]
    UnknownScene { name: String, known: String },
    #[error("recording {path} cannot be read: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("recording {path}: {detail}")]
    BadRecording { path: PathBuf, detail: String },
    #[error("speed must be a positive finite number, got {0}")]
    BadSpeed(f64),
}

/// The receiving side was dropped or a stop was requested: the source should return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// A source's handle on the runner: a bounded sender plus the shared stop flag.
pub struct FeedSender {
    tx: SyncSender<SourceEvent>,
    stop: Arc<AtomicBool>,
}

/// Longest single sleep, so a paced source notices a stop request promptly.
const STOP_POLL: Duration = Duration::from_millis(50);

impl FeedSender {
    /// Sends one event, waiting while the channel is full; `Err(Stopped)` once the runner is gone
    /// or a stop was requested.
    pub fn send(&self, mut event: SourceEvent) -> Result<(), Stopped> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Stopped);
            }
            match self.tx.try_send(event) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(_)) => return Err(Stopped),
                Err(TrySendError::Full(back)) => {
                    event = back;
                    // The runner drains in batches; a short nap keeps a fast replay from spinning.
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }

    /// Sleeps until `deadline`, waking regularly to honour a stop request.
    pub fn sleep_until(&self, deadline: Instant) -> Result<(), Stopped> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            std::thread::sleep((deadline - now).min(STOP_POLL));
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A source of frames. `run` blocks until the source is exhausted (replay) or stopped.
///
/// `run` gets its own OS thread, so it may block freely. An async source (the hub's UDP and
/// WebSocket ingest on tokio) forwards its frames from its tasks through a channel that `run`
/// drains with a blocking receive, calling [`FeedSender::send`] for each.
pub trait FrameFeed: Send + 'static {
    fn kind(&self) -> SourceKind;
    /// Feeds events until the source ends (`Ok`) or `out` reports `Stopped` (also `Ok`).
    fn run(self: Box<Self>, out: &FeedSender) -> Result<(), SourceError>;
}

/// A running feed: its channel, stop flag and thread.
pub struct FeedHandle {
    pub kind: SourceKind,
    pub events: Receiver<SourceEvent>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), SourceError>>>,
}

/// Room for about 2.5 s of 100 Hz frames: enough to ride out a scheduling hiccup, small enough
/// that a stalled pipeline holds little memory.
pub const FEED_CAPACITY: usize = 256;

impl FeedHandle {
    /// Starts `feed` on its own thread.
    pub fn spawn(feed: Box<dyn FrameFeed>) -> std::io::Result<Self> {
        let kind = feed.kind();
        let (tx, events) = sync_channel(FEED_CAPACITY);
        let stop = Arc::new(AtomicBool::new(false));
        let sender = FeedSender {
            tx,
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::Builder::new()
            .name(format!("source-{kind}"))
            .spawn(move || {
                let result = feed.run(&sender);
                match &result {
                    Ok(()) if sender.is_stopped() => {
                        tracing::debug!(source = %kind, "source stopped")
                    }
                    Ok(()) => tracing::info!(source = %kind, "source ended"),
                    Err(e) => tracing::error!(source = %kind, error = %e, "source failed"),
                }
                result
            })?;
        Ok(Self {
            kind,
            events,
            stop,
            thread: Some(thread),
        })
    }

    /// A flag the runner can share to stop the source.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Asks the source to stop and waits for its thread.
    pub fn stop(mut self) -> Result<(), SourceError> {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }

    /// Waits for the source thread; `Ok` when it ended or was stopped cleanly.
    pub fn join(&mut self) -> Result<(), SourceError> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => {
                tracing::error!(source = %self.kind, "source thread panicked");
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl Drop for FeedHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Real-time pacing by source timestamps: frame `t_s` is due `(t_s - t0) / speed` after the first
/// frame. `None` speed means as fast as the pipeline takes them.
#[derive(Debug)]
pub struct Pacer {
    speed: Option<f64>,
    origin: Option<(Instant, f64)>,
}

/// A recording whose clock jumps back, or forward by more than this, restarts the pacing origin
/// instead of stalling for the gap.
const MAX_GAP_S: f64 = 60.0;

impl Pacer {
    pub fn new(speed: Option<f64>) -> Result<Self, SourceError> {
        if let Some(s) = speed
            && !(s.is_finite() && s > 0.0)
        {
            return Err(SourceError::BadSpeed(s));
        }
        Ok(Self {
            speed,
            origin: None,
        })
    }

    /// Waits until the frame stamped `t_s` is due.
    pub fn wait(&mut self, t_s: f64, out: &FeedSender) -> Result<(), Stopped> {
        match self.due(t_s) {
            Some(due) => out.sleep_until(due),
            None => Ok(()),
        }
    }

    /// When the frame stamped `t_s` is due; `None` means now (no pacing, or no usable time).
    /// For callers that sleep their own way (the node emulator).
    pub fn due(&mut self, t_s: f64) -> Option<Instant> {
        let speed = self.speed?;
        if !t_s.is_finite() {
            return None;
        }
        let (start, t0) = match self.origin {
            Some((start, t0)) => {
                let since_t0 = t_s - t0;
                let elapsed_s = start.elapsed().as_secs_f64() * speed;
                if since_t0 < 0.0 || since_t0 - elapsed_s > MAX_GAP_S {
                    let origin = (Instant::now(), t_s);
                    self.origin = Some(origin);
                    origin
                } else {
                    (start, t0)
                }
            }
            None => {
                let origin = (Instant::now(), t_s);
                self.origin = Some(origin);
                origin
            }
        };
        Some(start + Duration::from_secs_f64(((t_s - t0) / speed).max(0.0)))
    }
}

/// The simulator's scripted scene, looping forever with a fresh seed per loop.
#[derive(Debug, Clone)]
pub struct SimulatorFeed {
    pub scene: String,
    pub script: Vec<Segment>,
    pub seed: u64,
    pub speed: f64,
}

impl SimulatorFeed {
    /// A feed playing the named scene at `speed` × real time.
    pub fn new(scene: &str, seed: u64, speed: f64) -> Result<Self, SourceError> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(SourceError::BadSpeed(speed));
        }
        let script = scene_script(scene).ok_or_else(|| SourceError::UnknownScene {
            name: scene.to_string(),
            known: scene_names().join(", "),
        })?;
        Ok(Self {
            scene: scene.to_string(),
            script,
            seed,
            speed,
        })
    }
}

impl FrameFeed for SimulatorFeed {
    fn kind(&self) -> SourceKind {
        SourceKind::Simulator
    }

    fn run(self: Box<Self>, out: &FeedSender) -> Result<(), SourceError> {
        let mut pacer = Pacer::new(Some(self.speed))?;
        // Each loop's simulator starts its clock at 0; the offset keeps the pipeline's clock
        // monotonic across loops.
        let mut offset_s = 0.0_f64;
        for lap in 0_u64.. {
            let config = SimConfig {
                seed: self.seed.wrapping_add(lap),
                script: self.script.clone(),
                ..Default::default()
            };
            let step_s = if config.rate_hz > 0.0 {
                1.0 / config.rate_hz
            } else {
                0.01
            };
            let mut sim = Simulator::new(config);
            let mut last_t = None;
            while let Some((mut frame, _truth)) = sim.next_frame() {
                frame.t_s += offset_s;
                last_t = Some(frame.t_s);
                if pacer.wait(frame.t_s, out).is_err()
                    || out.send(SourceEvent::Frame(frame)).is_err()
                {
                    return Ok(());
                }
            }
            match last_t {
                Some(t) => offset_s = t + step_s,
                // An empty scene would spin; treat it as one step of silence.
                None => {
                    if out.sleep_until(Instant::now() + STOP_POLL).is_err() {
                        return Ok(());
                    }
                }
            }
            tracing::debug!(scene = %self.scene, lap, "simulator scene looped");
        }
        Ok(())
    }
}

/// Names of the scenes `--scene` accepts (the simulator's scene library).
pub fn scene_names() -> Vec<&'static str> {
    simulator::scene_names().to_vec()
}

/// The segments of a named scene.
pub fn scene_script(name: &str) -> Option<Vec<Segment>> {
    simulator::scene(name)
}

/// A recorded file played back, paced by its own timestamps × speed, or as fast as possible.
///
/// Bad records never stop a replay: the parsers' [`ReplaySource`] skips them and counts why; the
/// counts are logged when the file ends (and printed by `replay --report`).
pub struct ReplayFeed {
    source: ReplaySource,
    path: PathBuf,
    /// `None`: as fast as the pipeline takes frames.
    speed: Option<f64>,
}

impl ReplayFeed {
    /// Opens a recording. Fails with a clear error when the file is missing, unreadable or
    /// cannot be decoded at all.
    pub fn open(path: &Path, speed: Option<f64>) -> Result<Self, SourceError> {
        Pacer::new(speed)?;
        Ok(Self {
            source: open_recording(path)?,
            path: path.to_path_buf(),
            speed,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl FrameFeed for ReplayFeed {
    fn kind(&self) -> SourceKind {
        SourceKind::Replay
    }

    fn run(self: Box<Self>, out: &FeedSender) -> Result<(), SourceError> {
        let mut pacer = Pacer::new(self.speed)?;
        let mut source = self.source;
        while let Some(frame) = source.next_frame() {
            if pacer.wait(frame.t_s, out).is_err() || out.send(SourceEvent::Frame(frame)).is_err() {
                return Ok(());
            }
        }
        let stats = source.stats();
        tracing::info!(
            file = %self.path.display(),
            records = stats.records,
            frames = stats.frames,
            skipped = stats.skipped,
            rejected = stats.rejected(),
            rejected_by_reason = ?stats.rejected_by_reason,
            "recording played out"
        );
        match &stats.io_error {
            Some(e) => Err(SourceError::BadRecording {
                path: self.path.clone(),
                detail: format!("read error after {} records: {e}", stats.records),
            }),
            None => Ok(()),
        }
    }
}

/// Opens a recording with the parsers' replay reader, mapping its errors to [`SourceError`] so
/// a missing file reads as "cannot be read" rather than a format complaint.
pub fn open_recording(path: &Path) -> Result<ReplaySource, SourceError> {
    ReplaySource::open(path).map_err(|e| match e {
        ReplayError::Io { path, source } => SourceError::Unreadable { path, source },
        other => SourceError::BadRecording {
            path: path.to_path_buf(),
            detail: other.to_string(),
        },
    })
}
