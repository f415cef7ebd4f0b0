//! The hub as a frame source: [`HubFeed`] hands accepted node frames to the engine's runner and
//! tells it whenever the number of online or known nodes changes.
//!
//! Ingest runs on tokio tasks and must never wait for the pipeline, so frames cross a bounded
//! channel with `try_send`: when the pipeline falls behind, the newest frames are dropped and
//! counted (hub `queue_full`, and the node's `dropped`) instead of queueing without bound.
//! Fleet changes are not queued at all: the registry keeps the current counts in an atomic that
//! the feed thread compares on every wake-up, so a full queue can never lose an offline event.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use super::registry::Registry;
use crate::engine::records::Fleet;
use crate::engine::source::{FeedSender, FrameFeed, SourceError, SourceEvent, SourceKind};
use crate::sensing::csi::CsiFrame;

/// Frames held between ingest and the pipeline: about 1 s at 1,000 frames/s in total.
pub const QUEUE_CAPACITY: usize = 1024;

/// How often the feed thread looks at the fleet counts when no frame arrives.
const FLEET_POLL: Duration = Duration::from_millis(20);

/// The ingest side of the queue.
#[derive(Debug, Clone)]
pub struct FrameSink {
    tx: SyncSender<CsiFrame>,
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The pipeline is behind; the frame was dropped.
    Full,
    /// The engine has stopped.
    Closed,
}

impl FrameSink {
    pub fn offer(&self, frame: CsiFrame) -> Result<(), Rejected> {
        match self.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(Rejected::Full),
            Err(TrySendError::Disconnected(_)) => Err(Rejected::Closed),
        }
    }
}

/// A [`FrameFeed`] of kind [`SourceKind::Hub`].
pub struct HubFeed {
    rx: Receiver<CsiFrame>,
    registry: Arc<Registry>,
}

/// A connected sink and feed over `registry`.
pub fn channel(registry: Arc<Registry>) -> (FrameSink, HubFeed) {
    let (tx, rx) = sync_channel(QUEUE_CAPACITY);
    (FrameSink { tx }, HubFeed { rx, registry })
}

impl HubFeed {
    /// Takes one queued frame without waiting (for tests of the ingest path).
    #[cfg(test)]
    pub(crate) fn try_recv_for_test(&self) -> Option<CsiFrame> {
        self.rx.try_recv().ok()
    }
}

impl FrameFeed for HubFeed {
    fn kind(&self) -> SourceKind {
        SourceKind::Hub
    }

    fn run(self: Box<Self>, out: &FeedSender) -> Result<(), SourceError> {
        let mut sent_fleet = Fleet::default();
        loop {
            let fleet = self.registry.fleet();
            if fleet != sent_fleet {
                if out.send(SourceEvent::Fleet(fleet)).is_err() {
                    return Ok(());
                }
                sent_fleet = fleet;
            }
            match self.rx.recv_timeout(FLEET_POLL) {
                Ok(frame) => {
                    if out.send(SourceEvent::Frame(frame)).is_err() {
                        return Ok(());
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if out.is_stopped() {
                        return Ok(());
                    }
                }
                // The hub stopped: no more frames will come.
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
    }
}
