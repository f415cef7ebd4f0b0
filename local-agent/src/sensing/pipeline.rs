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

use num_complex::Complex32;

use super::calibration::{CalibrationPhase, CalibrationStatus};
use super::csi::{CsiFrame, CsiShape};
use super::dsp::rate::{Arrival, RateTracker};
use super::dsp::resample::{GridStep, UniformGrid};
use super::dsp::{angle, magnitude};
use super::motion::{MotionConfig, MotionDetector};
use super::presence::{BreathEvidence, PresenceTracker};
use super::range::{RangeEstimator, sanitise};
use super::still::StillCue;
use super::vitals::{BreathDiag, GRID_HZ, HeartDiag, VitalsConfig, VitalsEstimator};

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
    /// Why `breathing_bpm` is null (`None` while a rate is shown).
    pub breathing_null: Option<VitalNull>,
    /// Why `heart_bpm` is null (`None` while a rate is shown).
    pub heart_null: Option<VitalNull>,
    /// Unsmoothed motion of the latest grid tick: the mean packet-to-packet amplitude change
    /// (relative to the mean amplitude), max over links. Not calibrated: only its ratio to the
    /// same link's recent level means anything (a recalibration must not move it). `motion` is
    /// smoothed for display and presence; this keeps the short burst of a fall's impact for the
    /// fall monitor.
    pub motion_burst: f64,
    /// The same block's mean packet-to-packet *second* difference (relative to the mean
    /// amplitude). Its ratio to `motion_burst` is a frequency: 2·sin(π f / rate) for a
    /// fluctuation at f Hz, so it reads how fast the reflecting body moves (the Doppler of the
    /// paths) whatever its distance to the link.
    pub motion_burst_d2: f64,
    /// Grid ticks behind `motion_burst` (the most of any link): it changes once per 0.1 s block,
    /// however often the estimates are read, so the fall monitor counts each block once. 0 before
    /// the first tick.
    #[serde(skip)]
    pub motion_tick: u64,
    /// Seconds of still data the vitals window of the most advanced present link holds (a rate
    /// needs a full window: `VitalsConfig::breath_min_window` grid samples).
    pub still_s: f64,
    /// Nobody is present and every link has gone a minute without motion or breathing-based
    /// presence: breathing alone no longer makes the room present, only motion does
    /// (`presence::SEALED_AFTER_S`). Says why a still person can read absent.
    #[serde(skip)]
    pub sealed: bool,
    /// The filtered chest motion of the link with the strongest breathing-band peak, at the
    /// vitals grid rate (10 Hz), oldest first; `None` before a still window was analysed.
    #[serde(skip)]
    pub breathing_wave: Option<std::sync::Arc<[f32]>>,
}

/// Why a vital sign carries no value, for people looking at a null.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VitalNull {
    /// Nobody is in the room (or nobody has been found yet).
    NotPresent,
    /// The empty-room calibration is still running and nobody has been found.
    Calibrating,
    /// Someone moves: body motion swamps chest motion.
    Moving,
    /// Still, but the analysis window is filling (24–30 s of stillness are needed, then three
    /// agreeing windows).
    Settling,
    /// Still and analysed, but no rate passed the quality gates.
    WeakSignal,
    /// Heart only: no breathing rate, so breathing cannot be removed from the heart band.
    NoBreathing,
}

/// The detail behind the fused vitals, for the live view: the chest-motion waveform of the link
/// that carries breathing, and what the heart estimators saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VitalsDetail {
    /// Link (node id) the waveform comes from.
    pub node_id: Option<String>,
    /// Filtered chest motion (breathing band, drift removed), unit RMS, oldest first.
    pub breathing_waveform: Vec<f32>,
    /// Sample rate of the waveform, Hz.
    pub waveform_hz: f32,
    /// Series the link analyses (amplitudes + phases), and phase series among the breathing
    /// selection (0 = amplitude only).
    pub series: usize,
    pub breathing_phase_series: usize,
    pub breathing: BreathDiag,
    pub heart: HeartDiag,
    /// The still-presence cue and the threshold it must stay above.
    pub still_cue: Option<f32>,
    pub still_threshold: f32,
}

/// Subcarriers of the LLTF block used for range (the series every layout shares).
const RANGE_SUBCARRIERS: usize = 64;
/// Ticks (at `GRID_HZ`) of the breathing window that presence also listens to: 120 s. A
/// breath too weak for a 30 s window (the rate's, which must follow a changing rate and lose a
/// stopped breath within seconds) stands out of four times as much data: on the simulator's
/// weakest seated breathers the selected series' coherence rose from 0.17–0.20 to 0.31–0.34
/// while the quiet rooms' fell from 0.14–0.16 to 0.07–0.10 (median). A rate accepted on it
/// only ever counts as evidence that someone breathes, and it is the one breathing evidence that
/// opens a sealed room (`presence::SEALED_AFTER_S`): an empty room's chance rhythms last
/// seconds, not two minutes. The rate shown and the no-breathing alarm stay on 30 s.
pub const PRESENCE_BREATH_WINDOW: usize = 1200;
/// Still ticks before the presence window is analysed at all (60 s): over less, it would only
/// take a second look at the rate's own 30 s, and a second look is a second chance for an empty
/// room to pass (walk-outs held their 75 s bridge more often with it).
pub const PRESENCE_BREATH_MIN_WINDOW: usize = 600;
/// Ticks between the presence window's analyses: a 120 s window moves little in a second.
pub const PRESENCE_BREATH_HOP: usize = 50;
/// Ticks between the presence window's series re-selections (each re-selection takes a spectrum
/// of every pre-selected series over the whole window, so it runs less often than the rate's).
pub const PRESENCE_BREATH_REFIT: usize = 150;

/// Largest CSI vector accepted (HT40 STBC is 306 subcarriers; leave headroom).
const MAX_SUBCARRIERS: usize = 2048;
/// A stream unheard for this many pipeline frames (scaled by stream count) stops counting.
const STALE_FRAMES_PER_STREAM: u64 = 200;

/// What one link reports to the fusion.
#[derive(Debug, Clone, Default)]
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
    burst_d2: f64,
    /// Grid ticks this link has published (`Estimates::motion_tick`).
    ticks: u64,
    still_s: f64,
    wave: Option<std::sync::Arc<[f32]>>,
    wave_snr: f64,
    /// The vitals window is still filling (not enough still data analysed yet).
    settling: bool,
    /// The presence tracker is sealed (`PresenceTracker::sealed`).
    sealed: bool,
}

/// Where a link's phase series come from.
#[derive(Debug, Clone, PartialEq)]
enum PhaseSource {
    /// Products `h_a · conj(h_b)` of these block pairs (same stream, two receive chains), per
    /// tone: the per-packet phase offsets the chains share cancel.
    ChainPairs(Vec<(usize, usize)>),
    /// One chain: the phase of the sanitised subcarriers (the range block).
    Sanitised,
}

#[derive(Debug)]
struct Link {
    rate: RateTracker,
    grid: UniformGrid,
    motion: MotionDetector,
    presence: PresenceTracker,
    vitals: VitalsEstimator,
    /// Breathing over [`PRESENCE_BREATH_WINDOW`] ticks, for presence only (see there).
    vitals_long: VitalsEstimator,
    range: RangeEstimator,
    still: StillCue,
    n_sc: usize,
    shape: CsiShape,
    /// Tones per block (chain-stream link), and blocks per frame.
    tones: usize,
    blocks: usize,
    /// Per-block mean amplitude of the current frame.
    block_mean: Vec<f32>,
    /// What the motion detector sees: the amplitudes, averaged over the blocks when there are
    /// several.
    motion_in: Vec<f32>,
    phase_source: PhaseSource,
    /// Complex products per frame (0 for a single chain).
    n_prod: usize,
    /// Subcarriers handed to the range estimator.
    n_range: usize,
    amps: Vec<f32>,
    row: Vec<f32>,
    sanitised: Vec<f32>,
    /// Phase tracking per phase series: last valid value on the grid and its unwrapped phase.
    last_z: Vec<Complex32>,
    unwrapped: Vec<f32>,
    phases: Vec<f32>,
    done: Vec<f32>,
    last_frame: u64,
    view: LinkView,
}

impl Link {
    fn new(cfg: &PipelineConfig, n_sc: usize, shape: CsiShape) -> Self {
        let tick = 1.0 / f64::from(GRID_HZ);
        let blocks = shape.blocks(n_sc);
        let tones = n_sc / blocks.max(1);
        let (rx, tx) = (usize::from(shape.rx.max(1)), usize::from(shape.tx.max(1)));
        let phase_source = if blocks > 1 && rx >= 2 {
            let mut pairs = Vec::new();
            for t in 0..tx {
                for a in 0..rx {
                    for b in a + 1..rx {
                        pairs.push((a * tx + t, b * tx + t));
                    }
                }
            }
            PhaseSource::ChainPairs(pairs)
        } else {
            PhaseSource::Sanitised
        };
        let n_prod = match &phase_source {
            PhaseSource::ChainPairs(p) => p.len() * tones,
            PhaseSource::Sanitised => 0,
        };
        // Range looks at the first block's tones (the first 64 slots of an ESP32 buffer).
        let n_range = RANGE_SUBCARRIERS.min(tones);
        let n_phase = if n_prod > 0 { n_prod } else { n_range };
        let mut vitals = VitalsEstimator::new(cfg.vitals.clone());
        if n_prod > 0 {
            vitals.require_beat_agreement();
        }
        let vitals_long = VitalsEstimator::new(VitalsConfig {
            breath_window: PRESENCE_BREATH_WINDOW,
            refit: PRESENCE_BREATH_REFIT,
            hop: PRESENCE_BREATH_HOP,
            breath_min_window: PRESENCE_BREATH_MIN_WINDOW,
            // Breathing only: a heart window of 0 never fills.
            heart_window: 0,
            heart_min_window: 1,
            ..cfg.vitals.clone()
        });
        Self {
            rate: RateTracker::new(),
            grid: UniformGrid::new(tick, cfg.max_gap_s),
            motion: MotionDetector::new(MotionConfig {
                calibration_s: cfg.calibration_s,
                ..cfg.motion.clone()
            }),
            presence: PresenceTracker::new(),
            vitals,
            vitals_long,
            range: RangeEstimator::new(),
            still: StillCue::new(),
            n_sc,
            shape,
            tones,
            blocks,
            block_mean: vec![0.0; blocks],
            motion_in: Vec::with_capacity(tones),
            phase_source,
            n_prod,
            n_range,
            amps: Vec::with_capacity(n_sc),
            row: Vec::with_capacity(n_sc + 2 * n_prod + 2 * n_range),
            sanitised: Vec::with_capacity(2 * n_range),
            last_z: vec![Complex32::new(0.0, 0.0); n_phase],
            unwrapped: vec![0.0; n_phase],
            phases: Vec::with_capacity(n_phase),
            done: Vec::new(),
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
        // Gain normalisation per packet and per receive chain: AGC swings the whole packet by
        // ±15–30 % on an ESP32, and each chain of a multi-antenna card by itself (the Atheros
        // captures' chain levels jump by 18 % from packet to packet, median).
        // Written by index, not pushed, and summed in a second pass: the magnitudes then run
        // two to a vector instruction (the sum keeps its order, so its value is unchanged).
        self.amps.clear();
        self.amps.resize(frame.csi.len(), 0.0);
        for (o, c) in self.amps.iter_mut().zip(&frame.csi) {
            let a = magnitude(*c);
            *o = if a.is_finite() { a } else { 0.0 };
        }
        let mut sum = 0.0f32;
        let mut valid = 0usize;
        for &a in &self.amps {
            if a > 0.0 {
                sum += a;
                valid += 1;
            }
        }
        if valid == 0 || sum <= 0.0 || !sum.is_finite() {
            return (false, false);
        }
        let mean = sum / valid as f32;
        let t = self.tones;
        for (b, m) in self.block_mean.iter_mut().enumerate() {
            let blk = &self.amps[(b * t).min(self.amps.len())..((b + 1) * t).min(self.amps.len())];
            let (s, n) = blk
                .iter()
                .filter(|a| **a > 0.0)
                .fold((0.0f32, 0usize), |(s, n), a| (s + a, n + 1));
            *m = if n > 0 && s > 0.0 { s / n as f32 } else { mean };
        }
        match self.rate.observe(frame.t_s) {
            Arrival::Reordered => return (false, false),
            Arrival::ClockReset => {
                self.grid.reset();
                self.vitals.reset();
                self.vitals_long.reset();
                self.range.reset();
                self.motion.restart();
            }
            Arrival::Gap => self.motion.break_continuity(),
            Arrival::First | Arrival::Regular => {}
        }
        if let Some(rate) = self.rate.take_rederive() {
            self.motion.set_rate(rate);
        }
        for (b, blk) in self.amps.chunks_mut(t.max(1)).enumerate() {
            let inv = 1.0 / self.block_mean.get(b).copied().unwrap_or(mean);
            blk.iter_mut().for_each(|a| *a *= inv);
        }
        if self.blocks > 1 {
            // One motion input per tone, averaged over the chain-stream blocks: a moving body
            // changes them all, while their per-packet noise (3 % on one Atheros block at
            // 10 Hz, the ESP32's unaveraged level) averages down.
            self.motion_in.clear();
            self.motion_in.resize(t, 0.0);
            let w = 1.0 / self.blocks as f32;
            for blk in self.amps.chunks(t) {
                for (m, a) in self.motion_in.iter_mut().zip(blk) {
                    *m += a * w;
                }
            }
            self.motion.push(frame.t_s, &self.motion_in);
        } else {
            self.motion.push(frame.t_s, &self.amps);
        }
        sanitise(
            &frame.csi[..t.min(frame.csi.len())],
            self.n_range,
            self.block_mean.first().copied().unwrap_or(mean),
            &mut self.sanitised,
        );
        self.row.clear();
        self.row.extend_from_slice(&self.amps);
        if let PhaseSource::ChainPairs(pairs) = &self.phase_source {
            // The chain-pair products go straight into their slots of the row (one pass per
            // pair, no per-value capacity checks).
            let start = self.row.len();
            self.row.resize(start + 2 * t * pairs.len(), 0.0);
            let out = self.row[start..].chunks_exact_mut(2 * t.max(1));
            for (&(a, b), out) in pairs.iter().zip(out) {
                // Normalised by the two chains' mean levels, so that cell averages are not
                // dominated by the packets the AGC happened to amplify.
                let norm = 1.0
                    / (self.block_mean.get(a).copied().unwrap_or(mean)
                        * self.block_mean.get(b).copied().unwrap_or(mean));
                let (ha, hb) = (
                    &frame.csi[a * t..(a + 1) * t],
                    &frame.csi[b * t..(b + 1) * t],
                );
                for ((x, y), o) in ha.iter().zip(hb).zip(out.chunks_exact_mut(2)) {
                    let z = x * y.conj() * norm;
                    let ok = z.re.is_finite() && z.im.is_finite();
                    o[0] = if ok { z.re } else { 0.0 };
                    o[1] = if ok { z.im } else { 0.0 };
                }
            }
        }
        self.row.extend_from_slice(&self.sanitised);
        self.last_frame = frame_no;
        let mut ticked = false;
        match self.grid.push(frame.t_s, &self.row) {
            GridStep::Accumulated => {}
            GridStep::Restarted => {
                self.vitals.reset();
                self.vitals_long.reset();
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

    /// Phase of every phase series on this tick, unwrapped along time (steps between ticks are
    /// far below π for chest motion), NaN where the series has no value.
    fn track_phases(&mut self, z: &[f32]) {
        self.phases.clear();
        for (j, pair) in z.chunks_exact(2).enumerate() {
            let Some(last) = self.last_z.get_mut(j) else {
                break;
            };
            let c = Complex32::new(pair[0], pair[1]);
            let m = c.norm_sqr();
            if !(m > 0.0 && m.is_finite()) {
                self.phases.push(f32::NAN);
                continue;
            }
            if last.norm_sqr() > 0.0 {
                let d = c * last.conj();
                self.unwrapped[j] += angle::atan2(d.im, d.re);
            } else {
                self.unwrapped[j] = angle::atan2(c.im, c.re);
            }
            *last = c;
            self.phases.push(self.unwrapped[j]);
        }
    }

    fn on_tick(&mut self, t_s: f64, tick_s: f64) {
        let n = self.n_sc;
        let np = 2 * self.n_prod;
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        done.extend_from_slice(self.grid.completed());
        if done.len() < n + np {
            self.done = done;
            return;
        }
        let (burst, burst_d2) = self.motion.take_peak();
        let (burst, burst_d2) = (f64::from(burst), f64::from(burst_d2));
        let b = self.vitals.breathing;
        let long = self.vitals_long.breathing;
        let accepted = b.bpm.is_some() || long.bpm.is_some();
        // What the still cue counts as an empty room also teaches the vitals the room's floor.
        let empty = !self.presence.present()
            && !self.motion.moving()
            && !self.motion.calibration().calibrating()
            && !accepted;
        self.still.note_bridge(self.presence.bridging());
        let still_cue = self.still.on_tick(
            self.vitals.breath_cue(),
            self.vitals.breath_cue_coherence(),
            self.motion.moving(),
            accepted,
            self.motion.calibration().calibrating(),
            self.presence.present(),
        );
        let evidence = BreathEvidence {
            analysed: b.analysed,
            candidate: b.candidate_hz.is_some(),
            accepted,
            still_cue,
            long_accepted: long.bpm.is_some(),
        };
        let moving = self.motion.moving();
        self.presence.on_tick(t_s, tick_s, moving, evidence);
        self.vitals.note_bridge(self.presence.bridging());
        self.vitals_long.note_bridge(self.presence.bridging());
        let (amps, rest) = done.split_at(n);
        let (prod, h) = rest.split_at(np);
        if np > 0 {
            self.track_phases(prod);
        } else {
            self.track_phases(h);
        }
        self.vitals.push_tick(amps, &self.phases, moving);
        self.vitals.note_room(empty);
        self.vitals_long
            .push_tick_sharing(amps, &self.phases, moving, &self.vitals);
        self.vitals_long.note_room(empty);
        self.range.push_tick(h, !moving);
        self.done = done;
        let present = self.presence.present();
        let still = present && !moving;
        let b = self.vitals.breathing;
        let hr = self.vitals.heart;
        // Range needs bandwidth: a 20 MHz frame's delay cell is ~18 m of path, far longer than
        // any in-room excess path (see `range`).
        let wide = self.shape.bandwidth_mhz.is_some_and(|bw| bw >= 40);
        self.view = LinkView {
            present,
            moving,
            motion: self.motion.motion_value(),
            breathing: b.bpm.filter(|_| still),
            breathing_snr: b.snr.filter(|_| present),
            heart: hr.bpm.filter(|_| still && b.bpm.is_some()),
            heart_snr: hr.snr.filter(|_| present),
            range: self.range.range_m.filter(|_| present && wide),
            range_snr: self.range.strength.filter(|_| present),
            calibration: self.motion.calibration(),
            burst,
            burst_d2,
            ticks: self.view.ticks + 1,
            still_s: self.vitals.still_samples() as f64 * tick_s,
            wave: self.vitals.breathing_wave.clone(),
            wave_snr: b.snr.unwrap_or(0.0),
            settling: !b.analysed,
            sealed: self.presence.sealed(),
        };
    }
}

/// The sensing pipeline. Not thread-safe by itself; the engine owns it behind one task.
#[derive(Debug, Default)]
pub struct Pipeline {
    config: PipelineConfig,
    links: HashMap<(String, usize), Link>,
    estimates: Estimates,
    /// The link the latest breathing detail comes from.
    detail_link: Option<(String, usize)>,
}

impl Pipeline {
    pub fn new(config: PipelineConfig) -> Self {
        Self {
            config,
            links: HashMap::new(),
            estimates: Estimates {
                calibrating: true,
                breathing_null: Some(VitalNull::Calibrating),
                heart_null: Some(VitalNull::Calibrating),
                ..Estimates::default()
            },
            detail_link: None,
        }
    }

    /// Feeds one frame. Never panics, whatever the frame holds.
    pub fn push(&mut self, frame: &CsiFrame) {
        let n = frame.csi.len();
        if n == 0 || n > MAX_SUBCARRIERS || !frame.t_s.is_finite() {
            return;
        }
        let frame_no = self.estimates.frames + 1;
        let key = (frame.node_id.clone(), n);
        // A stream whose chain layout changed is a different stream.
        if self
            .links
            .get(&key)
            .is_some_and(|l| (l.shape.rx, l.shape.tx) != (frame.shape.rx, frame.shape.tx))
        {
            self.links.remove(&key);
        }
        if !self.links.contains_key(&key) {
            if !frame
                .csi
                .iter()
                .any(|c| c.norm_sqr() > 0.0 && c.norm_sqr().is_finite())
            {
                return;
            }
            self.evict_if_full();
            self.links
                .insert(key.clone(), Link::new(&self.config, n, frame.shape));
        }
        let Some(link) = self.links.get_mut(&key) else {
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
        let mut wave_snr = f64::NEG_INFINITY;
        let mut any_settling = false;
        let mut all_sealed = true;
        let mut detail: Option<(&(String, usize), f64)> = None;
        for (key, link) in &self.links {
            if now.saturating_sub(link.last_frame) > horizon {
                continue;
            }
            let s = link.view.breathing_snr.unwrap_or(0.0)
                + if link.view.breathing.is_some() {
                    1e6
                } else {
                    0.0
                };
            if detail.is_none_or(|(_, best)| s > best) {
                detail = Some((key, s));
            }
            any_settling |= link.view.present && !link.view.moving && link.view.settling;
            e.links += 1;
            if let Some(r) = link.rate.rate_hz() {
                rate += r;
            }
            let v = &link.view;
            cal = Some(least_calibrated(cal, v.calibration));
            if v.present {
                e.still_s = e.still_s.max(v.still_s);
            }
            if v.wave.is_some() && v.wave_snr > wave_snr {
                wave_snr = v.wave_snr;
                e.breathing_wave.clone_from(&v.wave);
            }
            e.present |= v.present;
            e.moving |= v.moving;
            all_sealed &= v.sealed;
            e.motion = e.motion.max(v.motion);
            e.motion_tick = e.motion_tick.max(v.ticks);
            if v.burst > e.motion_burst {
                e.motion_burst = v.burst;
                e.motion_burst_d2 = v.burst_d2;
            }
            e.breathing_strength = max_opt(e.breathing_strength, v.breathing_snr);
            e.heart_strength = max_opt(e.heart_strength, v.heart_snr);
            e.range_strength = max_opt(e.range_strength, v.range_snr);
            pick(&mut best_b, v.breathing, v.breathing_snr);
            pick(&mut best_h, v.heart, v.heart_snr);
            pick(&mut best_r, v.range, v.range_snr);
        }
        self.detail_link = detail.map(|(k, _)| k.clone());
        e.rate_hz = (rate > 0.0).then_some(rate);
        e.calibration = cal.unwrap_or_default();
        e.calibrating = e.calibration.calibrating() || e.links == 0;
        e.sealed = all_sealed && e.links > 0 && !e.present;
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
        let reason = if !e.present {
            Some(if e.calibrating {
                VitalNull::Calibrating
            } else {
                VitalNull::NotPresent
            })
        } else if e.moving {
            Some(VitalNull::Moving)
        } else if any_settling {
            Some(VitalNull::Settling)
        } else {
            Some(VitalNull::WeakSignal)
        };
        e.breathing_null = if e.breathing_bpm.is_some() {
            None
        } else {
            reason
        };
        e.heart_null = if e.heart_bpm.is_some() {
            None
        } else if e.present && !e.moving && e.breathing_bpm.is_none() && !any_settling {
            Some(VitalNull::NoBreathing)
        } else {
            reason
        };
        self.estimates = e;
    }

    /// The current fused estimates.
    pub fn estimates(&self) -> Estimates {
        self.estimates.clone()
    }

    /// The waveform and heart diagnostics behind the current vitals (the link with the
    /// strongest breathing), for the live view. Empty when there is no link.
    pub fn vitals_detail(&self) -> VitalsDetail {
        let Some(link) = self.detail_link.as_ref().and_then(|k| self.links.get(k)) else {
            return VitalsDetail::default();
        };
        VitalsDetail {
            node_id: self.detail_link.as_ref().map(|k| k.0.clone()),
            breathing_waveform: link.vitals.waveform().to_vec(),
            waveform_hz: GRID_HZ,
            series: link.vitals.series_count(),
            breathing_phase_series: link.vitals.breath_phase_series(),
            breathing: link.vitals.breath_diag,
            heart: link.vitals.heart_diag,
            still_cue: link.still.level(),
            still_threshold: link.still.threshold(),
        }
    }

    /// Every link's vitals estimator (diagnostics).
    #[doc(hidden)]
    pub fn vitals_estimators(&self) -> impl Iterator<Item = &VitalsEstimator> {
        self.links.values().map(|l| &l.vitals)
    }

    /// Forgets the learned background and starts a new calibration.
    pub fn recalibrate(&mut self) {
        for link in self.links.values_mut() {
            link.motion.recalibrate();
            link.still.recalibrate();
            link.vitals.forget_room();
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
            shape: Default::default(),
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
