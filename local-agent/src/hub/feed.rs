//! The hub as a frame source: [`HubFeed`] hands accepted node frames to the engine's runner and
//! tells it whenever the number of online or known nodes changes.
//!
//! Ingest runs on tokio tasks and must never wait for the pipeline, so frames cross a bounded
//! channel with `try_send`: when the pipeline falls behind, the newest frames are dropped and
//! counted (hub `queue_full`, and the node's `dropped`) instead of queueing without bound.
//! The queue is shared fairly: while more than one node is online, no node may hold more than
//! its share of it (capacity / nodes online), so a node that floods, or a pipeline that falls
//! behind, costs only the flooding node its frames and never starves the others.
//! Fleet changes are not queued at all: the registry keeps the current counts in an atomic that
//! the feed thread compares on every wake-up, so a full queue can never lose an offline event.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
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

/// A queued frame with its node's queued-frame counter, decremented when the pipeline takes it.
type Queued = (CsiFrame, Arc<AtomicU32>);

/// The ingest side of the queue.
#[derive(Debug, Clone)]
pub struct FrameSink {
    tx: SyncSender<Queued>,
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The pipeline is behind; the frame was dropped.
    Full,
    /// The engine has stopped.
    Closed,
}

/// The most frames one node may hold in the queue while `online` nodes are online.
pub fn fair_share(online: u32) -> u32 {
    let capacity = u32::try_from(QUEUE_CAPACITY).unwrap_or(u32::MAX);
    (capacity / online.max(1)).max(1)
}

impl FrameSink {
    /// Queues `frame` of the node whose queued-frame counter is `queued`, unless that node
    /// already holds its fair share with `online` nodes online, or the queue is full.
    pub fn offer(
        &self,
        frame: CsiFrame,
        queued: &Arc<AtomicU32>,
        online: u32,
    ) -> Result<(), Rejected> {
        if queued.fetch_add(1, Ordering::AcqRel) >= fair_share(online) {
            queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Rejected::Full);
        }
        match self.tx.try_send((frame, Arc::clone(queued))) {
            Ok(()) => Ok(()),
            Err(e) => {
                queued.fetch_sub(1, Ordering::AcqRel);
                Err(match e {
                    TrySendError::Full(_) => Rejected::Full,
                    TrySendError::Disconnected(_) => Rejected::Closed,
                })
            }
        }
    }
}

/// A [`FrameFeed`] of kind [`SourceKind::Hub`].
pub struct HubFeed {
    rx: Receiver<Queued>,
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
        self.rx.try_recv().ok().map(|(frame, queued)| {
            queued.fetch_sub(1, Ordering::AcqRel);
            frame
        })
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
                Ok((frame, queued)) => {
                    queued.fetch_sub(1, Ordering::AcqRel);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::registry::RegistryConfig;
    use crate::sensing::csi::WireFormat;

    fn frame(node: &str) -> CsiFrame {
        CsiFrame {
            node_id: node.into(),
            t_s: 0.0,
            rssi_dbm: None,
            channel: None,
            format: WireFormat::Adr018,
            csi: Vec::new(),
            shape: Default::default(),
        }
    }

    /// A pipeline that stopped taking frames while one node floods: the flooder fills only its
    /// share, the other node still gets every frame in, and taking frames frees the share.
    #[test]
    fn a_flooding_node_cannot_take_the_queue_from_another() {
        let registry = Arc::new(Registry::new(RegistryConfig::default()));
        let (sink, feed) = channel(registry);
        let flooder = Arc::new(AtomicU32::new(0));
        let quiet = Arc::new(AtomicU32::new(0));
        let accepted = (0..QUEUE_CAPACITY)
            .filter(|_| sink.offer(frame("node-9"), &flooder, 2).is_ok())
            .count();
        assert_eq!(accepted, QUEUE_CAPACITY / 2);
        for _ in 0..100 {
            assert_eq!(sink.offer(frame("node-1"), &quiet, 2), Ok(()));
        }
        assert_eq!(
            sink.offer(frame("node-9"), &flooder, 2),
            Err(Rejected::Full)
        );
        let taken = feed.try_recv_for_test().expect("a frame");
        assert_eq!(taken.node_id, "node-9");
        assert_eq!(sink.offer(frame("node-9"), &flooder, 2), Ok(()));
        // Alone, a node may use the whole queue.
        assert_eq!(fair_share(1), QUEUE_CAPACITY as u32);
        assert_eq!(fair_share(0), QUEUE_CAPACITY as u32);
    }
}
