//! Per-node signal health: what a support person asks about a node that "sends but nothing
//! shows". The registry feeds one [`Probe`] per accepted packet; the doctor and the live view
//! read [`NodeHealthView`]s.
//!
//! Everything here is bounded (fixed-size rings) and cheap per packet: a few comparisons, and one
//! pass over the subcarriers for the gain estimate.
//!
//! The gain estimate: with automatic gain control the radio rescales each packet, so the mean CSI
//! amplitude jumps from packet to packet while the spectrum's shape stays. On the ESPectre
//! captures (which record whether the gain was locked), the median packet-to-packet change of the
//! mean amplitude is 0.07–0.37 dB on all 17 gain-locked captures (empty and with movement) and
//! 0.63–1.24 dB on all 4 unlocked ones, so 0.5 dB separates them.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use num_complex::Complex32;
use serde::Serialize;

/// Below this packet rate the vitals have too few samples per breath to work (the pipeline
/// resamples to 10 Hz; breathing and heart estimates need ≥ 20 Hz of input to stay clean).
pub const MIN_VITALS_HZ: f64 = 20.0;
/// An arrival gap longer than this restarts the vitals windows (`PipelineConfig::max_gap_s`).
pub const GAP_S: f64 = 1.0;
/// Median packet-to-packet change of the mean amplitude above which the gain is not locked.
pub const GAIN_UNLOCKED_DB: f64 = 0.5;
/// RSSI below this is too weak for stable CSI.
pub const RSSI_LOW_DBM: f64 = -80.0;
/// RSSI above this saturates the receiver (the node is too close to the access point).
pub const RSSI_SATURATED_DBM: f64 = -30.0;

const INTERVALS: usize = 256;
const GAIN_SAMPLES: usize = 200;
const RSSI_SAMPLES: usize = 256;
const RATE_BLOCK: Duration = Duration::from_secs(10);
const RATE_BLOCKS: usize = 30;
/// A rate that differs from the expected one by more than this share, two blocks running, is a
/// rate change.
const RATE_CHANGE: f64 = 0.3;
const EVENTS: usize = 8;
const RECENT: Duration = Duration::from_secs(600);
/// A node clock that drifts more than this against the arrival clock is mis-stamping.
pub const CLOCK_DRIFT_WARN: f64 = 0.01;
/// A jump between node time and arrival time larger than this is a clock reset.
const CLOCK_JUMP_S: f64 = 2.0;
/// Node time and arrival time are compared over at least this long.
const CLOCK_MIN_SPAN_S: f64 = 20.0;

/// What one accepted packet says about the node's signal.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probe<'a> {
    /// The node's own capture time, when the format carries one (esp-csi, ESP32-CSI-Tool).
    pub node_t_s: Option<f64>,
    pub channel: Option<u16>,
    /// The CSI, for the gain estimate.
    pub csi: Csi<'a>,
    /// AGC and FFT gain, when the node reports them (esp-csi lines of C5/C6 chips).
    pub reported_gain: Option<(i32, i32)>,
}

/// The CSI of one packet as the transport carries it.
#[derive(Debug, Clone, Copy, Default)]
pub enum Csi<'a> {
    #[default]
    None,
    /// ADR-018 (imag, real) int8 pairs.
    Iq(&'a [i8]),
    Complex(&'a [Complex32]),
}

impl Csi<'_> {
    /// Mean amplitude of the non-zero subcarriers.
    fn mean_amplitude(&self) -> Option<f64> {
        let (sum, n) = match self {
            Csi::None => return None,
            Csi::Iq(b) => b.chunks_exact(2).fold((0.0f64, 0u32), |(s, n), p| {
                let a = f64::from(p[0]).hypot(f64::from(p[1]));
                if a > 0.0 { (s + a, n + 1) } else { (s, n) }
            }),
            Csi::Complex(c) => c.iter().fold((0.0f64, 0u32), |(s, n), c| {
                let a = f64::from(c.norm());
                if a > 0.0 && a.is_finite() {
                    (s + a, n + 1)
                } else {
                    (s, n)
                }
            }),
        };
        (n > 0).then(|| sum / f64::from(n))
    }
}

/// Something about a node that changed and may explain a change in the estimates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeEvent {
    pub kind: EventKind,
    /// RFC 3339 UTC.
    pub at: String,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Rate,
    Channel,
    Gain,
    Clock,
}

/// Drops of one node, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NodeDrops {
    /// Over the per-node rate cap.
    pub rate_limited: u64,
    /// The pipeline's queue was full.
    pub queue_full: u64,
}

/// One node's signal health, for the doctor and the live view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeHealthView {
    pub id: String,
    /// The rate the node held over the last minutes (median of 10 s blocks); `null` until a
    /// block completed.
    pub expected_hz: Option<f64>,
    /// Median and 95th percentile of the recent arrival intervals, ms.
    pub interval_p50_ms: Option<f64>,
    pub interval_p95_ms: Option<f64>,
    /// The 95th-percentile interval over the median (1–2 for an evenly paced node; a node whose
    /// packets come in bunches scores far higher).
    pub burstiness: Option<f64>,
    /// Arrival gaps longer than [`GAP_S`] in the last 10 minutes, and the longest.
    pub gaps_recent: u32,
    pub longest_gap_s: Option<f64>,
    pub channel: Option<u16>,
    pub channel_changes: u32,
    pub rssi_mean_dbm: Option<f64>,
    pub rssi_min_dbm: Option<i16>,
    pub rssi_max_dbm: Option<i16>,
    /// Median packet-to-packet change of the mean CSI amplitude, dB; `null` until enough
    /// packets arrived.
    pub gain_jitter_db: Option<f64>,
    /// The last reported (AGC, FFT) gain, for nodes that report it.
    pub reported_gain: Option<(i32, i32)>,
    pub gain_changes: u32,
    /// How fast the node's clock runs against arrival time (0.01 = 1 % fast); `null` for formats
    /// without node timestamps or before 20 s of data.
    pub clock_drift: Option<f64>,
    pub clock_jumps: u32,
    pub drops: NodeDrops,
    /// Newest first.
    pub events: Vec<NodeEvent>,
}

/// The health tracker of one node.
#[derive(Debug, Default)]
pub struct NodeHealth {
    last_arrival: Option<Instant>,
    intervals: VecDeque<f32>,
    gaps: VecDeque<(Instant, f64)>,
    block_start: Option<Instant>,
    block_count: u32,
    blocks: VecDeque<f64>,
    expected_hz: Option<f64>,
    off_blocks: u32,
    channel: Option<u16>,
    channel_changes: u32,
    rssi: VecDeque<i16>,
    last_scale: Option<f64>,
    gain_steps: VecDeque<f32>,
    reported_gain: Option<(i32, i32)>,
    gain_changes: u32,
    gain_unlocked: bool,
    clock_anchor: Option<(f64, Instant)>,
    last_node_t: Option<(f64, Instant)>,
    clock_drift: Option<f64>,
    clock_jumps: u32,
    pub drops: NodeDrops,
    events: VecDeque<NodeEvent>,
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(v);
}

fn quantile(values: impl Iterator<Item = f64>, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v.get(i).copied()
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

impl NodeHealth {
    fn event(&mut self, kind: EventKind, detail: String) {
        tracing::info!(kind = ?kind, %detail, "node signal changed");
        push_bounded(
            &mut self.events,
            NodeEvent {
                kind,
                at: format!("{:.0}", jiff::Timestamp::now()),
                detail,
            },
            EVENTS,
        );
    }

    /// The node came back after being offline: its gap is not an arrival interval.
    pub fn reconnected(&mut self) {
        self.last_arrival = None;
        self.block_start = None;
        self.block_count = 0;
        self.last_scale = None;
        self.clock_anchor = None;
        self.last_node_t = None;
    }

    /// One accepted packet at `now`.
    pub fn observe(&mut self, now: Instant, rssi: Option<i16>, probe: &Probe<'_>) {
        self.arrival(now);
        if let Some(r) = rssi {
            push_bounded(&mut self.rssi, r, RSSI_SAMPLES);
        }
        if let Some(ch) = probe.channel {
            if let Some(old) = self.channel
                && old != ch
            {
                self.channel_changes += 1;
                self.event(
                    EventKind::Channel,
                    format!(
                        "channel changed from {old} to {ch}: the access point moved, so the empty-room calibration no longer fits"
                    ),
                );
            }
            self.channel = Some(ch);
        }
        if let Some(g) = probe.reported_gain {
            if let Some(old) = self.reported_gain
                && old != g
            {
                self.gain_changes += 1;
            }
            self.reported_gain = Some(g);
        }
        if let Some(scale) = probe.csi.mean_amplitude() {
            if let Some(prev) = self.last_scale {
                let db = 20.0 * (scale / prev).log10();
                if db.is_finite() {
                    push_bounded(&mut self.gain_steps, db.abs() as f32, GAIN_SAMPLES);
                }
            }
            self.last_scale = Some(scale);
            self.judge_gain();
        }
        if let Some(t) = probe.node_t_s.filter(|t| t.is_finite()) {
            self.clock(t, now);
        }
    }

    fn arrival(&mut self, now: Instant) {
        if let Some(last) = self.last_arrival {
            let dt = now.saturating_duration_since(last).as_secs_f64();
            push_bounded(&mut self.intervals, dt as f32, INTERVALS);
            if dt > GAP_S {
                self.gaps.push_back((now, dt));
            }
        }
        while self
            .gaps
            .front()
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) > RECENT)
        {
            self.gaps.pop_front();
        }
        self.last_arrival = Some(now);
        let start = *self.block_start.get_or_insert(now);
        self.block_count += 1;
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= RATE_BLOCK {
            let hz = f64::from(self.block_count) / elapsed.as_secs_f64();
            self.block_start = Some(now);
            self.block_count = 0;
            self.rate_block(hz);
        }
    }

    fn rate_block(&mut self, hz: f64) {
        push_bounded(&mut self.blocks, hz, RATE_BLOCKS);
        match self.expected_hz {
            Some(exp) if exp > 0.0 && ((hz - exp) / exp).abs() > RATE_CHANGE => {
                self.off_blocks += 1;
                if self.off_blocks >= 2 {
                    self.event(
                        EventKind::Rate,
                        format!("packet rate changed from {exp:.1} to {hz:.1} packets/s"),
                    );
                    // The new rate is the node's rate now.
                    let keep = self.blocks.len().saturating_sub(2);
                    self.blocks.drain(..keep);
                    self.expected_hz = quantile(self.blocks.iter().copied(), 0.5);
                    self.off_blocks = 0;
                }
            }
            _ => {
                self.off_blocks = 0;
                self.expected_hz = quantile(self.blocks.iter().copied(), 0.5);
            }
        }
    }

    fn gain_jitter(&self) -> Option<f64> {
        (self.gain_steps.len() >= GAIN_SAMPLES / 2)
            .then(|| quantile(self.gain_steps.iter().map(|v| f64::from(*v)), 0.5))
            .flatten()
    }

    fn judge_gain(&mut self) {
        let unlocked = if self.reported_gain.is_some() {
            self.gain_changes > 0
        } else {
            self.gain_jitter().is_some_and(|j| j > GAIN_UNLOCKED_DB)
        };
        if unlocked && !self.gain_unlocked {
            let detail = match (self.reported_gain, self.gain_jitter()) {
                (Some(_), _) => "the node reports a changing receive gain".to_string(),
                (None, Some(j)) => format!(
                    "the CSI amplitude jumps {j:.1} dB from packet to packet: automatic gain is on"
                ),
                (None, None) => "automatic gain is on".to_string(),
            };
            self.event(EventKind::Gain, detail);
        }
        self.gain_unlocked = unlocked;
    }

    fn clock(&mut self, node_t: f64, now: Instant) {
        if let Some((t0, a0)) = self.last_node_t {
            let dn = node_t - t0;
            let da = now.saturating_duration_since(a0).as_secs_f64();
            if (dn - da).abs() > CLOCK_JUMP_S {
                self.clock_jumps += 1;
                self.clock_anchor = None;
                self.event(
                    EventKind::Clock,
                    format!(
                        "the node's timestamps jumped by {:.1} s against arrival time (a reboot or a clock reset)",
                        dn - da
                    ),
                );
            }
        }
        self.last_node_t = Some((node_t, now));
        let (n0, a0) = *self.clock_anchor.get_or_insert((node_t, now));
        let span = now.saturating_duration_since(a0).as_secs_f64();
        if span >= CLOCK_MIN_SPAN_S {
            self.clock_drift = Some((node_t - n0 - span) / span);
        }
    }

    /// The view of this node.
    pub fn view(&self, id: &str) -> NodeHealthView {
        let ms = |q| {
            quantile(self.intervals.iter().map(|v| f64::from(*v)), q).map(|s| round(s * 1000.0, 1))
        };
        let raw = |q| quantile(self.intervals.iter().map(|v| f64::from(*v)), q);
        let burstiness = match (raw(0.5), raw(0.95)) {
            (Some(p50), Some(p95)) if self.intervals.len() >= 20 => {
                // Packets handed over in one go arrive microseconds apart; floor the median so the
                // ratio stays finite.
                Some(round(p95 / p50.max(5e-5), 1))
            }
            _ => None,
        };
        NodeHealthView {
            id: id.to_string(),
            burstiness,
            expected_hz: self.expected_hz.map(|h| round(h, 1)),
            interval_p50_ms: ms(0.5),
            interval_p95_ms: ms(0.95),
            gaps_recent: u32::try_from(self.gaps.len()).unwrap_or(u32::MAX),
            longest_gap_s: self
                .gaps
                .iter()
                .map(|(_, d)| *d)
                .reduce(f64::max)
                .map(|d| round(d, 1)),
            channel: self.channel,
            channel_changes: self.channel_changes,
            rssi_mean_dbm: (!self.rssi.is_empty()).then(|| {
                round(
                    self.rssi.iter().map(|r| f64::from(*r)).sum::<f64>() / self.rssi.len() as f64,
                    1,
                )
            }),
            rssi_min_dbm: self.rssi.iter().copied().min(),
            rssi_max_dbm: self.rssi.iter().copied().max(),
            gain_jitter_db: self.gain_jitter().map(|j| round(j, 2)),
            reported_gain: self.reported_gain,
            gain_changes: self.gain_changes,
            clock_drift: self.clock_drift.map(|d| round(d, 4)),
            clock_jumps: self.clock_jumps,
            drops: self.drops,
            events: self.events.iter().rev().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, s: f64) -> Instant {
        t0 + Duration::from_secs_f64(s)
    }

    #[test]
    fn rate_gaps_and_rate_changes() {
        let mut h = NodeHealth::default();
        let t0 = Instant::now();
        let mut t = 0.0;
        while t < 60.0 {
            h.observe(at(t0, t), Some(-60), &Probe::default());
            t += 0.01;
        }
        let v = h.view("n");
        assert!((v.expected_hz.unwrap_or(0.0) - 100.0).abs() < 1.0, "{v:?}");
        assert!((v.interval_p50_ms.unwrap_or(0.0) - 10.0).abs() < 0.5);
        assert_eq!(v.gaps_recent, 0);
        t += 1.5;
        while t < 120.0 {
            h.observe(at(t0, t), Some(-60), &Probe::default());
            t += 0.2;
        }
        let v = h.view("n");
        assert_eq!(v.gaps_recent, 1);
        assert_eq!(v.longest_gap_s, Some(1.5));
        assert!((v.expected_hz.unwrap_or(0.0) - 5.0).abs() < 0.5, "{v:?}");
        assert!(v.events.iter().any(|e| e.kind == EventKind::Rate));
    }

    #[test]
    fn channel_change_is_an_event() {
        let mut h = NodeHealth::default();
        let t0 = Instant::now();
        for (i, ch) in [6, 6, 11].into_iter().enumerate() {
            let p = Probe {
                channel: Some(ch),
                ..Probe::default()
            };
            h.observe(at(t0, i as f64 * 0.01), None, &p);
        }
        let v = h.view("n");
        assert_eq!((v.channel, v.channel_changes), (Some(11), 1));
        assert_eq!(v.events[0].kind, EventKind::Channel);
    }

    #[test]
    fn gain_steps_tell_automatic_gain_from_locked_gain() {
        let run = |scale_of: &dyn Fn(usize) -> f32| {
            let mut h = NodeHealth::default();
            let t0 = Instant::now();
            for i in 0..300 {
                let s = scale_of(i);
                let csi: Vec<Complex32> = (0..64)
                    .map(|k| Complex32::new(s * (10.0 + (k % 7) as f32), s * 3.0))
                    .collect();
                let p = Probe {
                    csi: Csi::Complex(&csi),
                    ..Probe::default()
                };
                h.observe(at(t0, i as f64 * 0.01), None, &p);
            }
            h.view("n")
        };
        let locked = run(&|i| 1.0 + 0.005 * (i % 3) as f32);
        assert!(locked.gain_jitter_db.unwrap_or(9.0) < GAIN_UNLOCKED_DB);
        assert!(locked.events.is_empty());
        let agc = run(&|i| if i % 2 == 0 { 1.0 } else { 1.2 });
        assert!(agc.gain_jitter_db.unwrap_or(0.0) > GAIN_UNLOCKED_DB);
        assert_eq!(agc.events[0].kind, EventKind::Gain);
    }

    #[test]
    fn clock_drift_and_jumps() {
        let mut h = NodeHealth::default();
        let t0 = Instant::now();
        for i in 0..3000 {
            let a = i as f64 * 0.01;
            let p = Probe {
                node_t_s: Some(1000.0 + a * 1.05),
                ..Probe::default()
            };
            h.observe(at(t0, a), None, &p);
        }
        let d = h.view("n").clock_drift.unwrap_or(0.0);
        assert!((d - 0.05).abs() < 0.002, "{d}");
        let p = Probe {
            node_t_s: Some(5.0),
            ..Probe::default()
        };
        h.observe(at(t0, 30.01), None, &p);
        assert_eq!(h.view("n").clock_jumps, 1);
    }
}
