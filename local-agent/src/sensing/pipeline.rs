//! Per-node estimators fused into one view of the room.
//!
//! Every (node, subcarrier layout) stream gets its own state: a measured sample rate, gain
//! normalisation per packet, a per-packet motion detector with its own empty-room calibration, a
//! uniform 10 Hz grid feeding the vitals and range estimators, and a presence tracker. The fused
//! view is present if any link sees presence, motion is the maximum over links, and each vital
//! comes from the link with the strongest accepted peak. Motion (and the presence it implies) is
//! fused after every packet; everything else on the 10 Hz grid. Nothing here panics on malformed frames: frames
//! with no usable subcarrier or a non-finite time are ignored, reordered frames are dropped, and a
//! clock jump or long gap restarts the affected stream.

use std::collections::HashMap;

use super::calibration::{CalibrationPhase, CalibrationStatus};
use super::csi::CsiFrame;
use super::dsp::rate::{Arrival, RateTracker};
use super::dsp::resample::{GridStep, UniformGrid};
use super::motion::{MotionConfig, MotionDetector};
use super::presence::{BreathEvidence, PresenceTracker};
use super::range::{RangeEstimator, sanitise};
use super::vitals::{GRID_HZ, VitalsConfig, VitalsEstimator};

/// Tunables of the pipeline. `Default` gives the production settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Seconds of still data used for each link's empty-room calibration after its warm-up or
    /// `recalibrate`. 0 disables calibration (the uncalibrated motion threshold is used).
    pub calibration_s: f64,
    /// The motion detector (its `calibration_s` is replaced by the field above).
    pub motion: MotionConfig,
    /// Longest gap (seconds) bridged by holding the last value on the uniform grid; longer gaps
    /// restart the vitals windows.
    pub max_gap_s: f64,
    /// Most (node, layout) streams tracked at once; the least recently heard is dropped beyond it.
    pub max_streams: usize,
    /// Vitals windows and gates.
    pub vitals: VitalsConfig,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            calibration_s: MotionConfig::default().calibration_s,
            motion: MotionConfig::default(),
            max_gap_s: 1.0,
            max_streams: 256,
            vitals: VitalsConfig::default(),
        }
    }
}

/// The fused estimates at one instant. `None` means "no honest estimate", never zero.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Estimates {
    /// Someone is in the room (motion implies presence; a still breathing person is present).
    pub present: bool,
    /// Motion level, 0..1; an empty, still room reads below 0.05.
    pub motion: f64,
    pub breathing_bpm: Option<f64>,
    /// SNR of the best breathing-band peak while someone is present, else `None`.
    pub breathing_strength: Option<f64>,
    pub heart_bpm: Option<f64>,
    pub heart_strength: Option<f64>,
    pub range_peak_m: Option<f64>,
    pub range_strength: Option<f64>,
    /// Measured frame rate over all nodes, Hz.
    pub rate_hz: Option<f64>,
    /// True while a link's empty-room calibration is still being learned.
    pub calibrating: bool,
    /// Calibration of the least advanced link (phase, progress 0..1, why it waits).
    pub calibration: CalibrationStatus,
    /// Frames accepted into the pipeline since start.
    pub frames: u64,
    /// Source time (`CsiFrame::t_s`) of the newest frame.
    pub last_t_s: Option<f64>,
    /// True while at least one link sees motion above its calibrated threshold.
    pub moving: bool,
    /// Links (node, layout) currently contributing.
    pub links: usize,
    /// Unsmoothed motion of the latest grid tick: the mean packet-to-packet amplitude change
    /// (relative to the mean amplitude), max over links. Not calibrated: only its ratio to the
    /// same link's recent level means anything (a recalibration must not move it). `motion` is
    /// smoothed for display and presence; this keeps the short burst of a fall's impact for the
    /// fall monitor.
    pub motion_burst: f64,
}

/// Subcarriers of the LLTF block used for range (the series every layout shares).
const RANGE_SUBCARRIERS: usize = 64;
/// Largest CSI vector accepted (HT40 STBC is 306 subcarriers; leave headroom).
const MAX_SUBCARRIERS: usize = 2048;
/// A stream unheard for this many pipeline frames (scaled by stream count) stops counting.
const STALE_FRAMES_PER_STREAM: u64 = 200;

/// What one link reports to the fusion.
#[derive(Debug, Clone, Copy, Default)]
struct LinkView {
    present: bool,
    moving: bool,
    motion: f64,
    breathing: Option<f64>,
    breathing_snr: Option<f64>,
    heart: Option<f64>,
    heart_snr: Option<f64>,
    range: Option<f64>,
    range_snr: Option<f64>,
    calibration: CalibrationStatus,
    burst: f64,
}

#[derive(Debug)]
struct Link {
    rate: RateTracker,
    grid: UniformGrid,
    motion: MotionDetector,
    presence: PresenceTracker,
    vitals: VitalsEstimator,
    range: RangeEstimator,
    n_sc: usize,
    amps: Vec<f32>,
    row: Vec<f32>,
    sanitised: Vec<f32>,
    last_frame: u64,
    view: LinkView,
}

impl Link {
    fn new(cfg: &PipelineConfig, n_sc: usize) -> Self {
        let tick = 1.0 / f64::from(GRID_HZ);
        Self {
            rate: RateTracker::new(),
            grid: UniformGrid::new(tick, cfg.max_gap_s),
            motion: MotionDetector::new(MotionConfig {
                calibration_s: cfg.calibration_s,
                ..cfg.motion.clone()
            }),
            presence: PresenceTracker::new(),
            vitals: VitalsEstimator::new(cfg.vitals.clone()),
            range: RangeEstimator::new(),
            n_sc,
            amps: Vec::with_capacity(n_sc),
            row: Vec::with_capacity(n_sc + 2 * RANGE_SUBCARRIERS),
            sanitised: Vec::with_capacity(2 * RANGE_SUBCARRIERS),
            last_frame: 0,
            view: LinkView::default(),
        }
    }

    /// Feeds one frame; returns true when the frame was accepted (and whether a tick completed).
    fn push(&mut self, frame: &CsiFrame, frame_no: u64) -> (bool, bool) {
        let accepted = self.push_inner(frame, frame_no);
        if accepted.0 {
            // Motion is decided per packet; presence follows it at once.
            self.view.moving = self.motion.moving();
            self.view.motion = self.motion.motion_value();
            self.view.present = self.presence.present() || self.view.moving;
            self.view.calibration = self.motion.calibration();
        }
        accepted
    }

    fn push_inner(&mut self, frame: &CsiFrame, frame_no: u64) -> (bool, bool) {
        // Gain normalisation per packet: AGC swings the whole packet by ±15–30%.
        self.amps.clear();
        let mut sum = 0.0f32;
        let mut valid = 0usize;
        for c in &frame.csi {
            let a = c.norm();
            let a = if a.is_finite() { a } else { 0.0 };
            if a > 0.0 {
                sum += a;
                valid += 1;
            }
            self.amps.push(a);
        }
        if valid == 0 || sum <= 0.0 || !sum.is_finite() {
            return (false, false);
        }
        let mean = sum / valid as f32;
        match self.rate.observe(frame.t_s) {
            Arrival::Reordered => return (false, false),
            Arrival::ClockReset => {
                self.grid.reset();
                self.vitals.reset();
                self.range.reset();
                self.motion.restart();
            }
            Arrival::Gap => self.motion.break_continuity(),
            Arrival::First | Arrival::Regular => {}
        }
        if let Some(rate) = self.rate.take_rederive() {
            self.motion.set_rate(rate);
        }
        let inv = 1.0 / mean;
        self.amps.iter_mut().for_each(|a| *a *= inv);
        self.motion.push(frame.t_s, &self.amps);
        let nr = RANGE_SUBCARRIERS.min(frame.csi.len());
        sanitise(&frame.csi, nr, mean, &mut self.sanitised);
        self.row.clear();
        self.row.extend_from_slice(&self.amps);
        self.row.extend_from_slice(&self.sanitised);
        self.last_frame = frame_no;
        let mut ticked = false;
        match self.grid.push(frame.t_s, &self.row) {
            GridStep::Accumulated => {}
            GridStep::Restarted => {
                self.vitals.reset();
                self.range.reset();
            }
            GridStep::Completed { cells } => {
                let tick_s = self.grid.period_s();
                let t_cell = frame.t_s;
                for _ in 0..cells {
                    self.on_tick(t_cell, tick_s);
                }
                ticked = true;
            }
        }
        (true, ticked)
    }

    fn on_tick(&mut self, t_s: f64, tick_s: f64) {
        let n = self.n_sc;
        let done = self.grid.completed();
        if done.len() < n {
            return;
        }
        let burst = f64::from(self.motion.take_peak());
        let b = self.vitals.breathing;
        let evidence = BreathEvidence {
            analysed: b.analysed,
            candidate: b.candidate_hz.is_some(),
            accepted: b.bpm.is_some(),
        };
        let moving = self.motion.moving();
        self.presence.on_tick(t_s, tick_s, moving, evidence);
        let (amps, h) = done.split_at(n);
        self.vitals.push_tick(amps, moving);
        self.range.push_tick(h, !moving);
        let present = self.presence.present();
        let still = present && !moving;
        let b = self.vitals.breathing;
        let hr = self.vitals.heart;
        self.view = LinkView {
            present,
            moving,
            motion: self.motion.motion_value(),
            breathing: b.bpm.filter(|_| still),
            breathing_snr: b.snr.filter(|_| present),
            heart: hr.bpm.filter(|_| still && b.bpm.is_some()),
            heart_snr: hr.snr.filter(|_| present),
            range: self.range.range_m.filter(|_| present),
            range_snr: self.range.strength.filter(|_| present),
            calibration: self.motion.calibration(),
            burst,
        };
    }
}

/// The sensing pipeline. Not thread-safe by itself; the engine owns it behind one task.
#[derive(Debug, Default)]
pub struct Pipeline {
    config: PipelineConfig,
    links: HashMap<(String, usize), Link>,
    estimates: Estimates,
}

impl Pipeline {
    pub fn new(config: PipelineConfig) -> Self {
        Self {
            config,
            links: HashMap::new(),
            estimates: Estimates {
                calibrating: true,
                ..Estimates::default()
            },
        }
    }

    /// Feeds one frame. Never panics, whatever the frame holds.
    pub fn push(&mut self, frame: &CsiFrame) {
        let n = frame.csi.len();
        if n == 0 || n > MAX_SUBCARRIERS || !frame.t_s.is_finite() {
            return;
        }
        let frame_no = self.estimates.frames + 1;
        let key_exists = self.links.contains_key(&(frame.node_id.clone(), n));
        if !key_exists {
            if !frame
                .csi
                .iter()
                .any(|c| c.norm_sqr() > 0.0 && c.norm_sqr().is_finite())
            {
                return;
            }
            self.evict_if_full();
            self.links
                .insert((frame.node_id.clone(), n), Link::new(&self.config, n));
        }
        let Some(link) = self.links.get_mut(&(frame.node_id.clone(), n)) else {
            return;
        };
        let (accepted, ticked) = link.push(frame, frame_no);
        if !accepted {
            return;
        }
        self.estimates.frames = frame_no;
        self.estimates.last_t_s = Some(frame.t_s);
        if ticked {
            self.fuse();
        } else {
            self.fuse_motion();
        }
    }

    /// Refreshes the per-packet part of the fused view (motion, and the presence it implies).
    fn fuse_motion(&mut self) {
        let now = self.estimates.frames;
        let horizon = STALE_FRAMES_PER_STREAM * self.links.len().max(1) as u64;
        let (mut moving, mut motion, mut present) = (false, 0.0f64, false);
        let mut cal: Option<CalibrationStatus> = None;
        for link in self.links.values() {
            if now.saturating_sub(link.last_frame) > horizon {
                continue;
            }
            let v = &link.view;
            moving |= v.moving;
            motion = motion.max(v.motion);
            present |= v.present;
            cal = Some(least_calibrated(cal, v.calibration));
        }
        let e = &mut self.estimates;
        e.moving = moving;
        e.motion = motion;
        e.present = present;
        if let Some(c) = cal {
            e.calibrating = c.calibrating();
            e.calibration = c;
        }
    }

    fn evict_if_full(&mut self) {
        if self.links.len() < self.config.max_streams.max(1) {
            return;
        }
        if let Some(oldest) = self
            .links
            .iter()
            .min_by_key(|(_, l)| l.last_frame)
            .map(|(k, _)| k.clone())
        {
            self.links.remove(&oldest);
        }
    }

    fn fuse(&mut self) {
        let now = self.estimates.frames;
        let horizon = STALE_FRAMES_PER_STREAM * self.links.len().max(1) as u64;
        let mut e = Estimates {
            frames: self.estimates.frames,
            last_t_s: self.estimates.last_t_s,
            ..Estimates::default()
        };
        let mut rate = 0.0;
        let mut best_b: Option<(f64, f64)> = None;
        let mut best_h: Option<(f64, f64)> = None;
        let mut best_r: Option<(f64, f64)> = None;
        let mut cal: Option<CalibrationStatus> = None;
        for link in self.links.values() {
            if now.saturating_sub(link.last_frame) > horizon {
                continue;
            }
            e.links += 1;
            if let Some(r) = link.rate.rate_hz() {
                rate += r;
            }
            let v = &link.view;
            cal = Some(least_calibrated(cal, v.calibration));
            e.present |= v.present;
            e.moving |= v.moving;
            e.motion = e.motion.max(v.motion);
            e.motion_burst = e.motion_burst.max(v.burst);
            e.breathing_strength = max_opt(e.breathing_strength, v.breathing_snr);
            e.heart_strength = max_opt(e.heart_strength, v.heart_snr);
            e.range_strength = max_opt(e.range_strength, v.range_snr);
            pick(&mut best_b, v.breathing, v.breathing_snr);
            pick(&mut best_h, v.heart, v.heart_snr);
            pick(&mut best_r, v.range, v.range_snr);
        }
        e.rate_hz = (rate > 0.0).then_some(rate);
        e.calibration = cal.unwrap_or_default();
        e.calibrating = e.calibration.calibrating() || e.links == 0;
        if e.present {
            e.breathing_bpm = best_b.map(|b| b.0);
            e.heart_bpm = best_h.map(|h| h.0);
            e.range_peak_m = best_r.map(|r| r.0);
            if let Some((_, s)) = best_b {
                e.breathing_strength = Some(s);
            }
            if let Some((_, s)) = best_h {
                e.heart_strength = Some(s);
            }
            if let Some((_, s)) = best_r {
                e.range_strength = Some(s);
            }
        } else {
            e.breathing_strength = None;
            e.heart_strength = None;
            e.range_strength = None;
        }
        self.estimates = e;
    }

    /// The current fused estimates.
    pub fn estimates(&self) -> Estimates {
        self.estimates.clone()
    }

    /// Forgets the learned background and starts a new calibration.
    pub fn recalibrate(&mut self) {
        for link in self.links.values_mut() {
            link.motion.recalibrate();
            link.range.reset();
            link.view.calibration = link.motion.calibration();
        }
        self.estimates.calibrating = self.config.calibration_s > 0.0;
        if let Some(c) = self
            .links
            .values()
            .map(|l| l.view.calibration)
            .reduce(|a, b| least_calibrated(Some(a), b))
        {
            self.estimates.calibration = c;
        }
    }

    /// Every link's calibration: node id, subcarriers, status.
    pub fn link_calibrations(&self) -> Vec<LinkCalibration> {
        let mut v: Vec<LinkCalibration> = self
            .links
            .iter()
            .map(|((node, n), l)| LinkCalibration {
                node_id: node.clone(),
                subcarriers: *n,
                status: l.motion.calibration(),
            })
            .collect();
        v.sort_by(|a, b| {
            a.node_id
                .cmp(&b.node_id)
                .then(a.subcarriers.cmp(&b.subcarriers))
        });
        v
    }
}

/// One link's calibration, for diagnostics.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LinkCalibration {
    pub node_id: String,
    pub subcarriers: usize,
    pub status: CalibrationStatus,
}

/// The less advanced of two calibrations (a link still collecting before a calibrated one).
fn least_calibrated(a: Option<CalibrationStatus>, b: CalibrationStatus) -> CalibrationStatus {
    let rank = |c: &CalibrationStatus| match c.phase {
        CalibrationPhase::WarmingUp => 0,
        CalibrationPhase::Collecting => 1,
        CalibrationPhase::Calibrated => 2,
        CalibrationPhase::Disabled => 3,
    };
    match a {
        None => b,
        Some(a) => {
            let (ra, rb) = (rank(&a), rank(&b));
            if rb < ra || (rb == ra && b.progress < a.progress) {
                b
            } else {
                a
            }
        }
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Keeps the (value, strength) with the highest strength.
fn pick(best: &mut Option<(f64, f64)>, value: Option<f64>, strength: Option<f64>) {
    if let (Some(v), Some(s)) = (value, strength)
        && best.is_none_or(|(_, bs)| s > bs)
    {
        *best = Some((v, s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensing::csi::WireFormat;
    use num_complex::Complex32;

    fn frame(node: &str, t: f64, csi: Vec<Complex32>) -> CsiFrame {
        CsiFrame {
            node_id: node.to_string(),
            t_s: t,
            rssi_dbm: None,
            channel: None,
            format: WireFormat::Simulator,
            csi,
        }
    }

    #[test]
    fn never_panics_on_hostile_frames() {
        let mut p = Pipeline::new(PipelineConfig::default());
        let c = |re: f32, im: f32| Complex32::new(re, im);
        let frames = vec![
            frame("a", 0.0, vec![]),
            frame("a", 0.01, vec![c(0.0, 0.0); 64]),
            frame("a", f64::NAN, vec![c(1.0, 1.0); 64]),
            frame("a", 0.02, vec![c(f32::NAN, 1.0); 64]),
            frame("a", 0.03, vec![c(f32::INFINITY, 1.0); 64]),
            frame("a", 0.04, vec![c(1.0, 2.0); 3]),
            frame("a", 0.05, vec![c(1.0, 2.0); 192]),
            frame("a", -100.0, vec![c(1.0, 2.0); 192]),
            frame("a", 1e300, vec![c(1.0, 2.0); 192]),
            frame("", 0.0, vec![c(1.0, 2.0); 1]),
            frame("b", 0.0, vec![c(1e30, 1e30); 64]),
        ];
        for _ in 0..3 {
            for f in &frames {
                p.push(f);
                let _ = p.estimates();
            }
        }
        let mut t = 5.0;
        for i in 0..5000 {
            let n = [64, 128, 192, 7][i % 4];
            t += if i % 97 == 0 { -0.5 } else { 0.01 };
            let csi = (0..n)
                .map(|k| c(((i * k) % 13) as f32, ((i + k) % 7) as f32 - 3.0))
                .collect();
            p.push(&frame("c", t, csi));
        }
        p.recalibrate();
        let e = p.estimates();
        assert!(e.frames > 0);
        assert!(e.motion.is_finite() && (0.0..=1.0).contains(&e.motion));
    }
}
