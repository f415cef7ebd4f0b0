//! Breathing and heart rate of one link, from the link's candidate series on the uniform grid.
//!
//! **Series.** Each link hands in two kinds of series per grid tick: gain-normalised amplitudes
//! (one per subcarrier, every radio has them) and phases. On a receiver with several chains the
//! phases are those of `h_r · conj(h_s)` for each pair of receive chains, each transmit stream
//! and each tone: the chains share one oscillator, so the product cancels the per-packet phase
//! offsets and what is left moves with the path lengths, i.e. with the chest. A single-chain radio
//! (the ESP32) gives the phase of its sanitised subcarriers instead (common phase and linear
//! slope removed per packet). Amplitude alone throws away most of what a multi-antenna receiver
//! sees: on the BreathSense captures the breathing shows in the chain-pair phase of most tones
//! and only weakly in any amplitude.
//!
//! **Selection and combination.** Chest motion moves a few series strongly and most not at all,
//! and neighbouring series can move in antiphase (adding them cancels the signal). Every series
//! keeps a running breathing-band quality (band-passed energy over first-difference energy,
//! cheap per tick). Every 6 s the best candidates (all of them when there are at most
//! [`FULL_SCAN`], else the [`PRESELECT`] best by that quality) are scored by the SNR of their own
//! spectral peak, the top 8 are kept, their signs aligned by correlating their band-passed
//! series with the best one, and they are summed with maximum-ratio weights
//! (`sqrt(snr·(1+snr))`) before the spectrum. The combined series is high-passed (drift) and
//! analysed every second; a rate is emitted only after prominence, SNR, concentration,
//! peak-width, cross-series coherence and 3-window persistence gates pass.
//!
//! The coherence gate is what keeps an empty room empty. Picking the 8 best of many noise-only
//! series by their strongest breathing-band peak and sign-aligning them to the best one is a
//! search over hundreds of chances; its winner is a tone-narrow peak that passes every
//! single-series gate, and the 1 s hop over a 30 s window makes it "persist" for several windows.
//! Chest motion changes one body path, so it moves every series it reaches with the same
//! waveform; the chosen noise series are nearly independent.
//!
//! **Heart.** The heartbeat rides on the same paths as the breath at a tenth of its
//! displacement or less, and breathing's harmonics fill the heart band. The chest moves every
//! body path with breath and heartbeat alike, so the heart combination weights each series by
//! its regression on the breathing combination over its white-noise level (`heart_weights`): no
//! series is picked by its own heart-band peak, a search that over hundreds of series finds
//! noise. The breath is removed from the combination in the time domain ([`BreathModel`]:
//! harmonics locked to the tracked breathing phase, with depth changes). Two estimators then
//! look at what is left: the spectral peak (gated, away from breathing harmonics, and not a
//! pulse's second harmonic) and the median beat-to-beat interval of the band-passed pulse train
//! ([`beat_rate`]). A heart rate is a candidate when both agree within [`HEART_AGREE_BPM`] with
//! a regular beat train, or when the spectral peak alone reaches [`STRONG_HEART_SNR`]; it is
//! emitted after persistence. A wrong heart rate is worse than none.

use super::dsp::beats::beat_rate;
use super::dsp::filter::{BandPass, highpass_zero_phase};
use super::dsp::hampel::hampel_in_place;
use super::dsp::harmonics::BreathModel;
use super::dsp::running::RunningQuantile;
use super::dsp::spectrum::{Peak, PeakGates, Persistence, Spectrum, SpectrumAnalyzer};

/// Rate of the uniform grid the vitals run on, Hz.
pub const GRID_HZ: f32 = 10.0;
/// Breathing band, Hz (5–33 br/min): a slow 6 br/min breath (0.1 Hz) must sit inside the band,
/// not on its edge, where a rising slope is rejected.
pub const BREATH_BAND: (f32, f32) = (0.083, 0.55);
/// Band used to pick breathing series (a little wider so edge rates still select).
pub const BREATH_SELECT_BAND: (f32, f32) = (0.07, 0.6);
/// Slow drift band: when it dominates, the "breathing" is posture or furniture drift. Its top
/// moves down for slow breaths so that the breath's own main lobe is not taken for drift.
pub const DRIFT_BAND: (f32, f32) = (0.02, 0.1);
/// Drift removed below this before the breathing spectrum (see `highpass_zero_phase`).
pub const DRIFT_CUTOFF_HZ: f32 = 0.055;
/// Heart band, Hz (50–120 bpm).
pub const HEART_BAND: (f32, f32) = (0.83, 2.0);
/// Band the beat-interval estimator filters with (a little wider than the heart band so a
/// pulse's shape survives).
pub const BEAT_FILTER_BAND: (f32, f32) = (0.7, 2.4);
/// Largest disagreement between the spectral and the beat-interval heart rate, bpm.
pub const HEART_AGREE_BPM: f32 = 4.0;
/// Least share of regular beat intervals (within ±20 % of the median). 0.7 let a consistent
/// wrong rate through on an ECG-timed stream with ectopic beats (MIT-BIH 208).
pub const HEART_REGULARITY: f32 = 0.8;
/// A heart candidate this close to a breathing harmonic (2nd and up) is refused: what the
/// breath model leaves of a harmonic can pass both estimators (the spectral peak dominates the
/// band-passed pulse train), and a harmonic is the classic wrong heart rate (ECG-timed streams:
/// 4 × 15.6 br/min read as 62 bpm for a true 97).
pub const HARMONIC_GUARD_HZ: f32 = 0.04;

/// Concentration 0.5: a slow breath (6 br/min, three cycles in a 30 s window) keeps only
/// 0.49–0.55 of the band's power within ±1 bin on the BreathSense captures (the tuning half);
/// the simulator's noise-only windows that pass every other gate are stopped by coherence.
pub const BREATH_GATES: PeakGates = PeakGates {
    prominence: 1.5,
    snr: 5.0,
    concentration: 0.5,
    max_width: 1.6,
};
/// Least median band-passed correlation between the selected series and the best one for a
/// breathing candidate (see `Selection::coherence`). Measured on the simulator: empty room
/// 0.04–0.35 (median 0.13) on windows whose peak passed every other gate; a still breathing
/// person 0.53–0.98.
pub const BREATH_COHERENCE: f32 = 0.4;
/// A peak this far above the band's floor needs less coherence: a faint rhythm that only a few
/// series carry well (the BreathSense phantom at 24 br/min: SNR 60–200, coherence 0.3–0.5).
/// The simulator's empty rooms reach SNR 36 at coherence 0.11 at most.
pub const STRONG_BREATH_SNR: f32 = 25.0;
/// Above the 0.25–0.26 that a simulated empty room at 20 packets/s reaches with a strong
/// breathing-band peak (SNR 31–60), below the phantom's 0.3.
pub const STRONG_BREATH_COHERENCE: f32 = 0.28;
/// A breathing candidate at least this coherent ([`CLEAR_BREATH_COHERENCE`]) and this far above
/// the band's floor ([`CLEAR_BREATH_SNR`]) is believed after the usual 3-window persistence.
/// Any other candidate must first hold its rate for [`RHYTHM_SPAN_S`] (or be back at the rate
/// accepted since the last motion): consecutive 1 s windows share 29 of their 30 s, so three of
/// them agreeing is nearly one observation, and a chance rhythm in an empty room does persist
/// that long. Measured on the tuning data (every breathing
/// analysis logged with its gate figures): the simulator's quiet rooms (ten quiet minutes seeds
/// 1–4, the empty scene seeds 1–4) passed every gate on 17 windows in three runs of 1–9 s, at
/// coherence 0.37–0.54 (SNR 12–83, the ones above SNR 25 at coherence ≤ 0.39); a still person
/// breathing at 4 mm (seeds 31–40) passes at coherence ≥ 0.41 on 95 % of passing windows
/// (median 0.77, SNR median 142), the BreathSense tuning captures at 0.30–0.81.
pub const CLEAR_BREATH_COHERENCE: f32 = 0.6;
/// See [`CLEAR_BREATH_COHERENCE`].
pub const CLEAR_BREATH_SNR: f32 = 50.0;
/// Seconds a candidate that is not clear must hold its rate (each candidate within the
/// persistence tolerance of the one before, gaps up to [`RHYTHM_LAPSE_S`]) before it is
/// accepted: above the 9 s the longest chance rhythm of the tuning data lasted.
pub const RHYTHM_SPAN_S: f32 = 12.0;
/// Longest gap between candidates that still continues a rhythm (the BreathSense 6 br/min
/// phantom at 6 br/min, a 10 s breath, passes no gate for 11 s between two runs of its rate).
pub const RHYTHM_LAPSE_S: f32 = 15.0;
/// Spread the persistence accepts between a breathing rhythm's windows, Hz (±3.6 br/min).
pub const BREATH_TOLERANCE_HZ: f32 = 0.06;
/// Breathing analyses of a room read empty that set its floor's slope ([`RoomFloor`]): the
/// median over the last ten minutes (one analysis a second)...
pub const ROOM_FLOOR_WINDOW: usize = 600;
/// ...once half a minute of them is in.
pub const ROOM_FLOOR_MIN: usize = 30;
/// A room whose empty band's median slope is at or below this has a red floor (seeds of the
/// simulator's quiet rooms that read present learned -0.3 to -1.0; the clean ones 0 to -0.14).
pub const RED_ROOM_SLOPE: f32 = -0.2;
/// Steepest floor a room or a window can have: a random walk's 1/f² tail. Steeper fits come from a few
/// low bins under a hump and would bury a slow breath.
pub const ROOM_FLOOR_STEEPEST: f32 = -2.0;
/// Least coherence for the still-presence cue to count a breathing-band peak.
pub const CUE_COHERENCE: f32 = 0.25;
/// With the breath subtracted, the heart peak only has to stand out from the residual; the
/// beat-interval agreement is the second, independent test.
pub const HEART_GATES: PeakGates = PeakGates {
    prominence: 2.0,
    snr: 6.0,
    concentration: 0.4,
    max_width: 1.8,
};
/// A heart peak this far above the band's floor (with [`HEART_GATES`] passed and away from
/// breathing harmonics) needs no beat-interval agreement. Chosen on the tuning half of the
/// ECG-timed streams (seeds 0, 1 of each recording): there, 46 of 47 windows whose peak reached
/// SNR 30 with prominence 2 were within ±5 bpm with a visible pulse, 1 of 2 with a realistic
/// one; persistence (4 windows within 3 bpm) removes such a lone wrong window.
pub const STRONG_HEART_SNR: f32 = 20.0;
/// A heart peak whose half frequency has this much of the heart band's median power (or lies
/// on a breathing harmonic) may be the pulse's second harmonic, and is refused.
pub const SUBHARMONIC_RATIO: f32 = 3.0;
/// The half-frequency check reaches this far below the heart band (a 45 bpm heart's second
/// harmonic is in the band).
pub const SUBHARMONIC_MARGIN_HZ: f32 = 0.1;
/// Series the heart combination keeps (the largest breath-derived contributions).
pub const HEART_SERIES: usize = 32;
/// Series counts up to this are all scored by their spectrum at each re-selection.
pub const FULL_SCAN: usize = 128;
/// Above [`FULL_SCAN`], this many series with the best running breathing-band quality are.
pub const PRESELECT: usize = 32;
const _: () = assert!(PRESELECT >= 1);
/// Series prepared side by side from the ring (see `VitalsEstimator::prepare_lanes`).
const LANES: usize = 4;

/// The drift-free chest motion, low-passed above the breathing band so a person can see the
/// breaths (the spectrum works on the unfiltered series). Runs once per analysis (1 s).
fn display_wave(combined: &[f32]) -> Option<std::sync::Arc<[f32]>> {
    let bp = BandPass::new(GRID_HZ, DRIFT_CUTOFF_HZ, BREATH_SELECT_BAND.1 + 0.2)?;
    let mut out = Vec::with_capacity(combined.len());
    bp.filter_series(combined, &mut out);
    out.iter().all(|v| v.is_finite()).then(|| out.into())
}

/// Tunables (grid samples at `GRID_HZ`).
#[derive(Debug, Clone, PartialEq)]
pub struct VitalsConfig {
    /// Longest breathing window (30 s resolves 1 br/min well).
    pub breath_window: usize,
    /// Shortest still window analysed for breathing.
    pub breath_min_window: usize,
    pub heart_window: usize,
    pub heart_min_window: usize,
    /// Grid samples between analyses.
    pub hop: usize,
    /// Grid samples between series re-selections.
    pub refit: usize,
    /// Series kept.
    pub top_k: usize,
}

impl Default for VitalsConfig {
    fn default() -> Self {
        Self {
            breath_window: 300,
            breath_min_window: 240,
            heart_window: 300,
            heart_min_window: 200,
            hop: 10,
            refit: 60,
            top_k: 8,
        }
    }
}

/// One vital sign's state after the latest analysis.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VitalReading {
    /// Accepted rate, per minute (all gates and persistence passed).
    pub bpm: Option<f64>,
    /// SNR of the best in-band peak of the latest window (reported as strength while present).
    pub snr: Option<f64>,
    /// The latest window's peak passed the single-window gates (not yet persistent).
    pub candidate_hz: Option<f32>,
    /// Enough still data was available to analyse.
    pub analysed: bool,
}

/// What the latest breathing analysis saw, gate by gate (diagnostics and the live view).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BreathDiag {
    pub peak: Option<Peak>,
    pub coherence: f32,
    /// The drift band stayed below the peak.
    pub drift_ok: bool,
}

/// What the latest heart analysis saw, for diagnostics and the live view.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HeartDiag {
    /// Spectral peak of the breath-free combination, bpm, whether or not it passed its gates.
    pub spectral_bpm: Option<f32>,
    /// The spectral peak passed its gates.
    pub spectral_gated: bool,
    /// Beat-interval rate, bpm.
    pub beat_bpm: Option<f32>,
    /// Share of regular beat intervals.
    pub beat_regularity: Option<f32>,
    /// The breath model was fitted (a breathing rate was available).
    pub breath_removed: bool,
    /// The spectral peak's figures (SNR, prominence, concentration, width) behind
    /// `spectral_bpm`.
    pub peak: Option<Peak>,
}

/// The shape of a room's breathing band with nobody in it, learned while the room reads empty.
///
/// A slow reflection that creeps (a curtain, a door, thermal drift: the simulator's creeping
/// path) is a random walk, so its spectrum falls as 1/f² and is strongest at the band's low
/// edge. Against a flat floor its chance maxima there pass for a slow breath, and the room reads
/// present. Each breathing analysis of an empty room fits the slope of ln power over ln
/// frequency (the peak's lobe left out). Once the median slope of the last
/// [`ROOM_FLOOR_WINDOW`] falls to [`RED_ROOM_SLOPE`], every breathing window of this link is
/// measured against its own fitted power-law floor instead of the flat median. The price is a
/// slow breath at the band's low edge, which a fitted floor partly absorbs: so a room whose
/// empty band is flat keeps the flat floor, and so does a link that has never read empty
/// (someone present from the start, as in the BreathSense captures).
#[derive(Debug, Clone)]
struct RoomFloor {
    /// Median of the fitted slopes of the last [`ROOM_FLOOR_WINDOW`] empty analyses.
    slopes: RunningQuantile,
    /// The latest analysis' fitted slope, not yet offered to [`RoomFloor::learn`].
    latest: Option<f32>,
}

impl Default for RoomFloor {
    fn default() -> Self {
        Self {
            slopes: RunningQuantile::new(ROOM_FLOOR_WINDOW, ROOM_FLOOR_MIN, 10, |n| n / 2),
            latest: None,
        }
    }
}

impl RoomFloor {
    /// The room's median slope, within [[`ROOM_FLOOR_STEEPEST`], 0]; 0 until learned.
    fn slope(&self) -> f32 {
        self.slopes
            .value()
            .map_or(0.0, |m| m.clamp(ROOM_FLOOR_STEEPEST, 0.0))
    }

    /// The room has read empty long enough, and its empty band falls clearly with frequency.
    fn red(&self) -> bool {
        self.slopes.value().is_some() && self.slope() <= RED_ROOM_SLOPE
    }

    fn learn(&mut self) {
        if let Some(s) = self.latest.take().filter(|s| s.is_finite()) {
            self.slopes.push(s);
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Selection {
    idx: Vec<usize>,
    sign_weight: Vec<f32>,
    age: usize,
    /// Median |correlation| of the other selected series' band-passed series with the best
    /// one's: chest motion moves every series with one waveform, noise does not.
    coherence: f32,
    /// Phase series among the selected ones.
    phase_count: usize,
}

impl Selection {
    /// Empty, or older than `refit` ticks: the next analysis picks its series again.
    fn due(&self, refit: usize) -> bool {
        self.idx.is_empty() || self.age >= refit
    }
}

/// Running breathing-band quality of one series: a first-order high-pass and low-pass pair
/// (cheap, per tick) and EMAs of the band energy and of the second-difference energy (the noise
/// floor: it passes white noise 6:1 and suppresses a 0.45 Hz breath by 160:1, a 0.1 Hz one by
/// 64 000:1, so fast and slow breathing rank alike).
#[derive(Debug, Clone, Copy, Default)]
struct BandStat {
    prev_x: f32,
    prev_dx: f32,
    hp: f32,
    lp: f32,
    band_e: f32,
    diff_e: f32,
    warm: bool,
    /// Samples since the last restart (the EMA averages plainly until its memory is reached).
    n: u32,
}

/// First-order filter coefficients on the grid (computed once).
#[derive(Debug, Clone, Copy)]
struct BandCoef {
    hp: f32,
    lp: f32,
    ema: f32,
}

impl BandCoef {
    fn new() -> Self {
        let dt = 1.0 / GRID_HZ;
        let rc_hp = 1.0 / (std::f32::consts::TAU * BREATH_SELECT_BAND.0);
        let rc_lp = 1.0 / (std::f32::consts::TAU * BREATH_SELECT_BAND.1);
        Self {
            hp: rc_hp / (rc_hp + dt),
            lp: dt / (rc_lp + dt),
            // 20 s memory.
            ema: dt / 20.0,
        }
    }
}

impl BandStat {
    fn push(&mut self, x: f32, c: BandCoef) {
        if !x.is_finite() {
            self.warm = false;
            return;
        }
        if !self.warm {
            *self = Self {
                prev_x: x,
                warm: true,
                ..Self::default()
            };
            return;
        }
        let dx = x - self.prev_x;
        self.prev_x = x;
        let d2 = dx - self.prev_dx;
        self.prev_dx = dx;
        self.hp = c.hp * (self.hp + dx);
        self.lp += c.lp * (self.hp - self.lp);
        self.n = self.n.saturating_add(1);
        // Past its memory (1/n ≤ ema) the EMA weight is fixed: no division on the hot path.
        let a = if self.n as f32 * c.ema >= 1.0 {
            c.ema
        } else {
            c.ema.max(1.0 / self.n as f32)
        };
        self.band_e += a * (self.lp * self.lp - self.band_e);
        self.diff_e += a * (d2 * d2 - self.diff_e);
    }

    fn quality(&self) -> f32 {
        if !self.warm || self.diff_e <= 0.0 {
            return 0.0;
        }
        self.band_e / self.diff_e
    }
}

/// The breathing candidate's run: since when its rate has held (grid samples).
#[derive(Debug, Clone, Copy, Default)]
struct Rhythm {
    start: u64,
    last: u64,
    hz: f32,
    active: bool,
    /// The rate last accepted in this still period: a candidate back at it (within the
    /// persistence tolerance) is the same breathing after a lapse, not a new rhythm. Without
    /// this a sleeper's rate that lapsed for more than [`RHYTHM_LAPSE_S`] needed 12 s more, and
    /// the whole simulated day raised a false `no_breathing` at 03:17.
    accepted_hz: Option<f32>,
}

impl Rhythm {
    /// Records a candidate at `t` and returns how long (grid samples) its rate has held.
    fn push(&mut self, t: u64, hz: f32, tolerance_hz: f32, lapse: u64) -> u64 {
        let continues =
            self.active && (hz - self.hz).abs() <= tolerance_hz && t - self.last <= lapse;
        if !continues {
            self.start = t;
        }
        self.last = t;
        self.hz = hz;
        self.active = true;
        t - self.start
    }

    /// How long the rhythm had held at its last candidate, while `t` is within the lapse.
    fn held(&self, t: u64, lapse: u64) -> u64 {
        if self.active && t - self.last <= lapse {
            self.last - self.start
        } else {
            0
        }
    }
}

/// Per-link vitals estimator.
#[derive(Debug)]
pub struct VitalsEstimator {
    cfg: VitalsConfig,
    /// A heart rate needs the beat-interval estimator's agreement even when the spectral peak
    /// is strong (see [`Self::require_beat_agreement`]).
    beats_required: bool,
    /// Amplitude series come first, phase series after them.
    n_amp: usize,
    n_series: usize,
    cap: usize,
    /// Time-major ring of grid samples (one tick's series side by side, so a tick is one
    /// contiguous write); NaN marks a sample the series did not have.
    ring: Vec<f32>,
    /// Per series, the NaN samples anywhere in the ring: a series with none is valid over any
    /// window without a scan (a re-selection looks at hundreds of series).
    nan_count: Vec<u32>,
    head: usize,
    count: usize,
    still: usize,
    since_hop: usize,
    stats: Vec<BandStat>,
    coef: BandCoef,
    sel_breath: Selection,
    sel_heart: Selection,
    fft_breath: SpectrumAnalyzer,
    fft_heart: SpectrumAnalyzer,
    pers_breath: Persistence,
    pers_heart: Persistence,
    rhythm: Rhythm,
    /// Grid samples pushed (the clock of [`Rhythm`]).
    ticks: u64,
    pub breathing: VitalReading,
    pub heart: VitalReading,
    /// The chest motion behind the latest breathing analysis: the combined, drift-free series
    /// low-passed for display, at `GRID_HZ`, oldest first. `None` until a still window was
    /// analysed, and again after motion. Shared, so publishing it costs a reference count.
    pub breathing_wave: Option<std::sync::Arc<[f32]>>,
    pub heart_diag: HeartDiag,
    pub breath_diag: BreathDiag,
    room_floor: RoomFloor,
    /// The link's presence rests on the still bridge ([`Self::note_bridge`]).
    after_motion: bool,
    /// Mean running breathing-band quality of the 8 best series, over stillness only.
    cue: Option<f32>,
    /// Coherence of the selected series behind `cue` (0 when the peak sat at the band edge).
    cue_coherence: Option<f32>,
    /// The latest breathing analysis' chest-motion waveform: the combined series, drift
    /// removed, unit RMS, oldest first (empty until a window was analysed).
    waveform: Vec<f32>,
    breath_model: BreathModel,
    /// The latest heart analysis' breath-free combination (before its spectrum), oldest first.
    heart_series: Vec<f32>,
    spec: Spectrum,
    spec_drift: Spectrum,
    drift: Vec<f32>,
    series: Vec<f32>,
    /// [`LANES`] prepared series side by side, one sample of each per element.
    lanes: Vec<[f32; LANES]>,
    combined: Vec<f32>,
    /// The breathing combination before its high-pass (the breath model is fitted on it).
    breath_raw: Vec<f32>,
    scratch: Vec<f32>,
    scored: Vec<(f32, usize, f32)>,
    candidates: Vec<usize>,
    /// Per series, the running quality at this analysis (each once, not twice per comparison
    /// in the pre-selection).
    quality: Vec<f32>,
    bp_ref: Vec<f32>,
    bp_tmp: Vec<f32>,
}

impl VitalsEstimator {
    pub fn new(cfg: VitalsConfig) -> Self {
        let cap = cfg.breath_window.max(cfg.heart_window).max(16);
        Self {
            beats_required: false,
            fft_breath: SpectrumAnalyzer::new(1024.max(cfg.breath_window * 2)),
            fft_heart: SpectrumAnalyzer::new(512.max(cfg.heart_window * 2)),
            pers_breath: Persistence::new(3, BREATH_TOLERANCE_HZ),
            // Heart needs 4 agreeing windows within 0.05 Hz (3 bpm): its peak is weak and a
            // wrong rate is worse than none.
            pers_heart: Persistence::new(4, 0.05),
            rhythm: Rhythm::default(),
            ticks: 0,
            cfg,
            n_amp: 0,
            n_series: 0,
            cap,
            ring: Vec::new(),
            nan_count: Vec::new(),
            head: 0,
            count: 0,
            still: 0,
            since_hop: 0,
            stats: Vec::new(),
            coef: BandCoef::new(),
            sel_breath: Selection::default(),
            sel_heart: Selection::default(),
            breathing: VitalReading::default(),
            heart: VitalReading::default(),
            breathing_wave: None,
            heart_diag: HeartDiag::default(),
            breath_diag: BreathDiag::default(),
            room_floor: RoomFloor::default(),
            after_motion: false,
            cue: None,
            cue_coherence: None,
            waveform: Vec::new(),
            breath_model: BreathModel::new(),
            heart_series: Vec::new(),
            spec: Spectrum::default(),
            spec_drift: Spectrum::default(),
            drift: Vec::new(),
            series: Vec::new(),
            lanes: Vec::new(),
            combined: Vec::new(),
            breath_raw: Vec::new(),
            scratch: Vec::new(),
            scored: Vec::new(),
            candidates: Vec::new(),
            quality: Vec::new(),
            bp_ref: Vec::new(),
            bp_tmp: Vec::new(),
        }
    }

    /// Forgets all history (gap, clock reset, layout change).
    pub fn reset(&mut self) {
        self.count = 0;
        self.head = 0;
        self.still = 0;
        self.since_hop = 0;
        self.sel_breath = Selection::default();
        self.sel_heart = Selection::default();
        self.stats.iter_mut().for_each(|s| *s = BandStat::default());
        self.clear_readings();
    }

    fn clear_readings(&mut self) {
        self.pers_breath.reset();
        self.rhythm = Rhythm::default();
        self.pers_heart.reset();
        self.breathing = VitalReading::default();
        self.heart = VitalReading::default();
        self.breathing_wave = None;
        self.heart_diag = HeartDiag::default();
        self.waveform.clear();
    }

    /// Turns off the spectral-only way to a heart rate ([`STRONG_HEART_SNR`]): every heart rate
    /// then needs a regular beat train that agrees with the spectral peak. For links whose
    /// series are chain-pair phases at 5 GHz: there a deep breath swings the body path by
    /// radians, so the phase responds to it nonlinearly and its harmonics, irregular from breath
    /// to breath, leave narrow peaks in the heart band that no harmonic model removes. On the
    /// tuning half of the multi-antenna ECG-timed streams (seeds k = 0, 1 at 10 and 50 Hz) 360
    /// windows had a gated heart peak with SNR ≥ 20 away from breathing harmonics, and only
    /// 52 % of them were within ±5 bpm.
    pub fn require_beat_agreement(&mut self) {
        self.beats_required = true;
    }

    /// Still grid samples available (the analysis window never spans motion).
    pub fn still_samples(&self) -> usize {
        self.still.min(self.count)
    }

    /// The latest breathing analysis' filtered chest-motion waveform (unit RMS, oldest first, at
    /// [`GRID_HZ`]); empty while no window has been analysed since the last motion.
    pub fn waveform(&self) -> &[f32] {
        &self.waveform
    }

    /// The latest heart analysis' breath-free combination, oldest first, at [`GRID_HZ`]
    /// (diagnostics: what the heart spectrum and the beat intervals were taken from).
    #[doc(hidden)]
    pub fn heart_series(&self) -> &[f32] {
        &self.heart_series
    }

    /// The last `len` grid samples of every series (amplitudes first, then phases), oldest first,
    /// NaN where missing (diagnostics).
    #[doc(hidden)]
    pub fn window_series(&self, len: usize) -> Vec<Vec<f32>> {
        (0..self.n_series)
            .map(|k| {
                let mut out = Vec::new();
                self.copy_series(k, len, &mut out);
                out
            })
            .collect()
    }

    /// Series (amplitude + phase) this estimator tracks.
    pub fn series_count(&self) -> usize {
        self.n_series
    }

    /// Phase series among the current breathing selection (0 when breathing rides on amplitude
    /// alone).
    pub fn breath_phase_series(&self) -> usize {
        self.sel_breath.phase_count
    }

    /// Adds one grid sample: per-subcarrier amplitudes (≤ 0 or non-finite = not measured) and
    /// phases (non-finite = not measured). `moving` restarts the still window and the
    /// persistence (a moving body swamps the vital band).
    pub fn push_tick(&mut self, amps: &[f32], phases: &[f32], moving: bool) {
        self.push_tick_with(amps, phases, moving, None);
    }

    /// [`Self::push_tick`] for a second estimator fed the same ticks as `stats_of` (a longer
    /// window over the same series): the running band statistics that pre-select its series
    /// are read from `stats_of` instead of kept twice, since on the same input they are the same.
    pub fn push_tick_sharing(
        &mut self,
        amps: &[f32],
        phases: &[f32],
        moving: bool,
        stats_of: &VitalsEstimator,
    ) {
        self.push_tick_with(amps, phases, moving, Some(&stats_of.stats));
    }

    fn push_tick_with(
        &mut self,
        amps: &[f32],
        phases: &[f32],
        moving: bool,
        shared: Option<&[BandStat]>,
    ) {
        let n = amps.len() + phases.len();
        if amps.len() != self.n_amp || n != self.n_series {
            self.n_amp = amps.len();
            self.n_series = n;
            self.ring.clear();
            self.ring.resize(n * self.cap, f32::NAN);
            self.nan_count.clear();
            self.nan_count.resize(n, self.cap as u32);
            self.stats.clear();
            self.stats.resize(n, BandStat::default());
            self.reset();
        }
        if n == 0 {
            return;
        }
        let coef = self.coef;
        let row = &mut self.ring[self.head * n..(self.head + 1) * n];
        let values = amps
            .iter()
            .map(|a| {
                if a.is_finite() && *a > 0.0 {
                    *a
                } else {
                    f32::NAN
                }
            })
            .chain(
                phases
                    .iter()
                    .map(|p| if p.is_finite() { *p } else { f32::NAN }),
            );
        for (((slot, v), stat), nans) in row
            .iter_mut()
            .zip(values)
            .zip(self.stats.iter_mut())
            .zip(self.nan_count.iter_mut())
        {
            *nans = *nans + u32::from(v.is_nan()) - u32::from(slot.is_nan());
            *slot = v;
            if shared.is_none() {
                stat.push(v, coef);
            }
        }
        self.head = (self.head + 1) % self.cap;
        self.count = (self.count + 1).min(self.cap);
        if moving {
            self.still = 0;
            self.clear_readings();
            // The cue measures stillness only: motion's band energy must not linger in it.
            self.stats.iter_mut().for_each(|s| *s = BandStat::default());
            self.cue = None;
            self.cue_coherence = None;
        } else {
            self.still += 1;
        }
        self.since_hop += 1;
        self.ticks += 1;
        self.sel_breath.age += 1;
        self.sel_heart.age += 1;
        if self.since_hop >= self.cfg.hop {
            self.since_hop = 0;
            self.quality.clear();
            // Read only by a re-selection's pre-selection, so taken only when one is due.
            let refit = self.cfg.refit;
            if self.n_series > FULL_SCAN
                && (self.sel_breath.due(refit) || self.sel_heart.due(refit))
            {
                let stats = match shared {
                    Some(stats) if stats.len() == self.n_series => stats,
                    _ => &self.stats,
                };
                self.quality.extend(stats.iter().map(BandStat::quality));
            }
            self.analyse();
        }
    }

    /// Ring slots of the last `len` samples, oldest first, as two contiguous slot ranges.
    fn window_slots(&self, len: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let len = len.min(self.cap);
        let start = (self.head + self.cap - len) % self.cap;
        if start + len <= self.cap {
            (start..start + len, 0..0)
        } else {
            (start..self.cap, 0..start + len - self.cap)
        }
    }

    /// Copies the last `len` samples of series `k` into `out`, oldest first; false if any is
    /// missing.
    fn copy_series(&self, k: usize, len: usize, out: &mut Vec<f32>) -> bool {
        out.clear();
        let n = self.n_series;
        let (a, b) = self.window_slots(len);
        let mut ok = true;
        for slot in a.chain(b) {
            let v = self.ring[slot * n + k];
            ok &= v.is_finite();
            out.push(v);
        }
        ok
    }

    /// The last `len` samples of series `k`, mean removed and scaled to unit RMS, in
    /// `self.series` (the spectrum detrends; Hampel runs on the combined series). Missing
    /// samples read as the mean.
    fn prepared_series(&mut self, k: usize, len: usize) {
        self.prepare_lanes(&[k], len);
        self.lane_into_series(0);
    }

    /// Prepares up to [`LANES`] series at once (each exactly as [`Self::prepared_series`] does)
    /// into `self.lanes`, one sample of every series side by side. Each series' sums keep their
    /// order, so the values are bit for bit those of one series at a time; what changes is that
    /// the ring (time-major, larger than L2) is walked once per batch instead of once per series,
    /// and the latency-bound running sums of the batch's series overlap.
    fn prepare_lanes(&mut self, ks: &[usize], len: usize) {
        let mut x = std::mem::take(&mut self.lanes);
        x.clear();
        let ks = &ks[..ks.len().min(LANES)];
        let n = self.n_series;
        let (a, b) = self.window_slots(len);
        for slot in a.chain(b) {
            let row = &self.ring[slot * n..(slot + 1) * n];
            let mut v = [0.0f32; LANES];
            for (o, &k) in v.iter_mut().zip(ks) {
                *o = row.get(k).copied().unwrap_or(f32::NAN);
            }
            x.push(v);
        }
        // `Iterator::sum` of `f32` starts from -0.0; so do these, to stay bit-identical.
        let mut count = [0u32; LANES];
        let mut sum = [-0.0f32; LANES];
        for v in &x {
            for j in 0..LANES {
                let ok = v[j].is_finite();
                count[j] += u32::from(ok);
                sum[j] = if ok { sum[j] + v[j] } else { sum[j] };
            }
        }
        let mut mean = [0.0f32; LANES];
        for j in 0..LANES {
            mean[j] = sum[j] / count[j].max(1) as f32;
        }
        let mut sq = [-0.0f32; LANES];
        for v in x.iter_mut() {
            for j in 0..LANES {
                let d = if v[j].is_finite() {
                    v[j] - mean[j]
                } else {
                    0.0
                };
                v[j] = d;
                sq[j] += d * d;
            }
        }
        // Dividing by 1 leaves a value as it is: series too flat to scale keep their values.
        let mut div = [1.0f32; LANES];
        for j in 0..LANES {
            let rms = (sq[j] / len.max(1) as f32).sqrt();
            if rms > 1e-9 {
                div[j] = rms;
            }
        }
        for v in x.iter_mut() {
            for j in 0..LANES {
                v[j] /= div[j];
            }
        }
        self.lanes = x;
    }

    /// Copies lane `j` of `self.lanes` into `self.series`.
    fn lane_into_series(&mut self, j: usize) {
        self.series.clear();
        self.series
            .extend(self.lanes.iter().map(|v| v.get(j).copied().unwrap_or(0.0)));
    }

    fn valid_series(&self, k: usize, len: usize) -> bool {
        // The ring's count bounds the window's (and is it when the window is the whole ring):
        // most series are decided without walking a column of the ring, a cache line per row.
        let in_ring = self.nan_count.get(k).map_or(0, |c| *c as usize);
        if in_ring * 10 < len {
            return true;
        }
        if len >= self.cap {
            return false;
        }
        let n = self.n_series;
        let (a, b) = self.window_slots(len);
        let missing = a
            .chain(b)
            .filter(|slot| !self.ring[slot * n + k].is_finite())
            .count();
        missing * 10 < len
    }

    /// The series worth scoring at a re-selection: all valid ones when few, else the best by the
    /// running breathing-band quality.
    fn candidate_series(&mut self, len: usize) {
        let mut c = std::mem::take(&mut self.candidates);
        c.clear();
        c.extend((0..self.n_series).filter(|&k| self.valid_series(k, len)));
        if c.len() > FULL_SCAN && self.quality.len() == self.n_series {
            preselect(&mut c, &self.quality);
        }
        self.candidates = c;
    }

    /// Picks the top-k series by band SNR and aligns their signs to the best one (the breathing
    /// selection; the heart's weights come from [`Self::heart_weights`]).
    fn refit(&mut self, len: usize, band: (f32, f32)) -> Selection {
        self.scored.clear();
        self.candidate_series(len);
        let candidates = std::mem::take(&mut self.candidates);
        let mut spec = std::mem::take(&mut self.spec);
        for batch in candidates.chunks(LANES) {
            self.prepare_lanes(batch, len);
            for (j, &k) in batch.iter().enumerate() {
                self.lane_into_series(j);
                self.fft_breath.power(&mut self.series, GRID_HZ, &mut spec);
                if let Some(p) = spec.peak(band.0, band.1, &mut self.scratch) {
                    self.scored.push((p.snr, k, p.freq_hz));
                }
            }
        }
        self.candidates = candidates;
        self.spec = spec;
        self.scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        self.scored.truncate(self.cfg.top_k);
        let mut sel = Selection::default();
        let Some(&(_, best, _)) = self.scored.first() else {
            return sel;
        };
        let Some(bp) = BandPass::new(GRID_HZ, band.0, band.1) else {
            return sel;
        };
        self.prepared_series(best, len);
        let mut bp_ref = std::mem::take(&mut self.bp_ref);
        let mut bp_tmp = std::mem::take(&mut self.bp_tmp);
        // Two passes (4th order each side): a strong heartbeat leaks through one 2nd-order
        // low-pass at 0.6 Hz and, moving the series with other signs than the breath, would
        // decorrelate them.
        bp.filter_series(&self.series, &mut bp_tmp);
        bp.filter_series(&bp_tmp, &mut bp_ref);
        let scored = self.scored.clone();
        let energy = |x: &[f32]| x.iter().map(|v| v * v).sum::<f32>().max(1e-20);
        let e_ref = energy(&bp_ref);
        let mut cors = Vec::with_capacity(scored.len());
        for (snr, k, _) in scored {
            self.prepared_series(k, len);
            bp.filter_series(&self.series, &mut bp_tmp);
            let mut bp_k = std::mem::take(&mut self.series);
            bp.filter_series(&bp_tmp, &mut bp_k);
            std::mem::swap(&mut bp_k, &mut bp_tmp);
            self.series = bp_k;
            let corr: f32 = bp_ref.iter().zip(bp_tmp.iter()).map(|(a, b)| a * b).sum();
            if k != best {
                cors.push(corr.abs() / (e_ref * energy(&bp_tmp)).sqrt());
            }
            let sign = if corr < 0.0 { -1.0 } else { 1.0 };
            sel.idx.push(k);
            // Maximum-ratio weight for a unit-RMS series whose band SNR is `snr`.
            let snr = snr.max(0.0);
            sel.sign_weight.push(sign * (snr * (1.0 + snr)).sqrt());
            sel.phase_count += usize::from(k >= self.n_amp);
        }
        self.bp_ref = bp_ref;
        self.bp_tmp = bp_tmp;
        cors.sort_unstable_by(f32::total_cmp);
        sel.coherence = cors.get(cors.len() / 2).copied().unwrap_or(0.0);
        sel
    }

    /// Heart weights from the breath: the chest moves every body path with breath and heartbeat
    /// alike, so a series carries the heartbeat in proportion to how it carries the breath. Each
    /// candidate's weight is its regression on the breathing combination (band-passed around
    /// `fb`) over its white-noise level (second differences): maximum-ratio weights for the
    /// chest motion, found without searching the heart band (picking the series whose heart band
    /// happens to peak selects noise).
    fn heart_weights(&mut self, len: usize, fb: f32) -> Selection {
        let mut sel = Selection::default();
        let blen = self.breath_raw.len();
        if blen < len {
            return sel;
        }
        let lo = (0.6 * fb).max(BREATH_SELECT_BAND.0);
        let hi = (1.6 * fb).min(BREATH_SELECT_BAND.1 + 0.1);
        let Some(bp) = BandPass::new(GRID_HZ, lo, hi) else {
            return sel;
        };
        let mut r = std::mem::take(&mut self.bp_ref);
        bp.filter_series(&self.breath_raw[blen - len..], &mut r);
        let rr: f32 = r.iter().map(|v| v * v).sum();
        if !(rr > 0.0 && rr.is_finite()) {
            self.bp_ref = r;
            return sel;
        }
        self.candidate_series(len);
        let candidates = std::mem::take(&mut self.candidates);
        let mut bp_k = std::mem::take(&mut self.bp_tmp);
        self.scored.clear();
        for (i, &k) in candidates.iter().enumerate() {
            if i % LANES == 0 {
                let end = (i + LANES).min(candidates.len());
                self.prepare_lanes(&candidates[i..end], len);
            }
            self.lane_into_series(i % LANES);
            let x = &self.series;
            let d2 = x
                .windows(3)
                .map(|w| (w[2] - 2.0 * w[1] + w[0]).powi(2))
                .sum::<f32>()
                / (x.len().saturating_sub(2)).max(1) as f32;
            let noise = d2 / 6.0;
            if !(noise > 0.0 && noise.is_finite()) {
                continue;
            }
            bp.filter_series(x, &mut bp_k);
            let g = bp_k.iter().zip(&r).map(|(a, b)| a * b).sum::<f32>() / rr;
            if g.is_finite() {
                // (contribution to the combined SNR, series, weight)
                self.scored.push((g * g / noise, k, g / noise));
            }
        }
        self.candidates = candidates;
        self.bp_ref = r;
        self.bp_tmp = bp_k;
        self.scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        self.scored.truncate(HEART_SERIES);
        for &(_, k, w) in &self.scored {
            sel.idx.push(k);
            sel.sign_weight.push(w);
            sel.phase_count += usize::from(k >= self.n_amp);
        }
        sel
    }

    /// The weighted, sign-aligned sum of the selected series over the last `len` samples.
    fn combine(&mut self, sel: &Selection, len: usize) {
        let mut combined = std::mem::take(&mut self.combined);
        combined.clear();
        combined.resize(len, 0.0);
        // Per sample, the series are added in selection order, as one series at a time would.
        for (ks, ws) in sel.idx.chunks(LANES).zip(sel.sign_weight.chunks(LANES)) {
            self.prepare_lanes(ks, len);
            for (c, v) in combined.iter_mut().zip(self.lanes.iter()) {
                for (w, x) in ws.iter().zip(v) {
                    *c += w * x;
                }
            }
        }
        // One Hampel pass on the combination (spikes are common to all series: an AGC glitch
        // or a corrupted packet) costs an eighth of filtering each series.
        hampel_in_place(&mut combined, &mut self.scratch);
        self.combined = combined;
    }

    /// The still-presence cue: the SNR of the latest breathing window's peak when the selected
    /// series move together (coherence ≥ [`CUE_COHERENCE`]), 0 when they do not; `None` during
    /// motion and until a still window has been analysed. Unlike a rate it needs no
    /// persistence and no concentration: it says "something breathes here", not how fast.
    pub fn breath_cue(&self) -> Option<f32> {
        self.cue
    }

    /// How closely the selected series move together behind [`Self::breath_cue`] (median
    /// |correlation| with the best one, 0..1; 0 when the peak sat at the band edge), `None`
    /// whenever the cue is.
    pub fn breath_cue_coherence(&self) -> Option<f32> {
        self.cue_coherence.filter(|_| self.cue.is_some())
    }

    /// Called every tick after [`Self::push_tick`]: when the room reads empty (nobody present,
    /// nothing moving, calibrated, no breathing rate), the breathing analysis just made teaches
    /// the room's floor ([`RoomFloor`]); otherwise it is dropped.
    pub fn note_room(&mut self, empty: bool) {
        if empty {
            self.room_floor.learn();
        } else {
            self.room_floor.latest = None;
        }
    }

    /// Called every tick before [`Self::push_tick`] with whether the link's presence rests on
    /// the still bridge (someone moved less than a bridge ago: they sat down, or they left).
    /// A breath found then decides which, and a just-emptied room's creeping reflection shows
    /// 1/f² humps at the band's low edge: so those windows are measured against their own
    /// fitted floor, as in a room known to be red ([`RoomFloor`]). Someone who has sat down
    /// and breathes in the middle of the band loses little to it; a slow breath at the band's
    /// low edge (6–9 br/min) may pass no window before the bridge ends, and the room then
    /// waits for the next movement (`presence::SEALED_AFTER_S`).
    pub fn note_bridge(&mut self, bridging: bool) {
        self.after_motion = bridging;
    }

    /// Forgets the room's floor (a recalibration: the sensor may have moved).
    pub fn forget_room(&mut self) {
        self.room_floor = RoomFloor::default();
    }

    /// Median slope of the breathing band's floor (ln power per ln frequency) while the room
    /// read empty, and whether the link measures breathing against a fitted floor because of it;
    /// (0, false) until it has read empty for [`ROOM_FLOOR_MIN`] analyses.
    pub fn room_floor(&self) -> (f32, bool) {
        (self.room_floor.slope(), self.room_floor.red())
    }

    fn analyse(&mut self) {
        let still = self.still_samples();
        self.analyse_breathing(still);
        self.analyse_heart(still);
    }

    fn analyse_breathing(&mut self, still: usize) {
        let len = still.min(self.cfg.breath_window);
        if len < self.cfg.breath_min_window {
            self.breathing = VitalReading::default();
            self.breathing_wave = None;
            self.pers_breath.reset();
            self.rhythm = Rhythm::default();
            self.waveform.clear();
            self.cue = None;
            self.cue_coherence = None;
            self.room_floor.latest = None;
            return;
        }
        if self.sel_breath.due(self.cfg.refit) {
            self.sel_breath = self.refit(len, BREATH_SELECT_BAND);
        }
        let sel = std::mem::take(&mut self.sel_breath);
        self.combine(&sel, len);
        self.sel_breath = sel;
        self.breath_raw.clone_from(&self.combined);
        // Drift view first (linear detrend keeps slow wander visible), then the analysis view.
        let mut drift_view = std::mem::take(&mut self.drift);
        drift_view.clear();
        drift_view.extend_from_slice(&self.combined);
        let mut dspec = std::mem::take(&mut self.spec_drift);
        self.fft_breath
            .power_detrended(&mut drift_view, GRID_HZ, 1, &mut dspec);
        self.drift = drift_view;
        let mut spec = std::mem::take(&mut self.spec);
        highpass_zero_phase(&mut self.combined, GRID_HZ, DRIFT_CUTOFF_HZ);
        self.breathing_wave = display_wave(&self.combined);
        self.waveform.clone_from(&self.combined);
        let rms = (self.waveform.iter().map(|v| v * v).sum::<f32>()
            / self.waveform.len().max(1) as f32)
            .sqrt();
        if rms > 1e-9 {
            self.waveform.iter_mut().for_each(|v| *v /= rms);
        }
        self.fft_breath
            .power(&mut self.combined, GRID_HZ, &mut spec);
        // A room that has shown a red floor while empty gets each window's own fitted floor: a
        // creeping reflection's strength changes from minute to minute, so a window where it
        // is strong needs the steeper fit the room's median would miss.
        let slope = if self.room_floor.red() || self.after_motion {
            let fitted = |spec: &Spectrum, around: Option<f32>| {
                spec.floor_slope(BREATH_BAND.0, BREATH_BAND.1, around)
                    .unwrap_or(0.0)
                    .clamp(ROOM_FLOOR_STEEPEST, 0.0)
            };
            let first = fitted(&spec, None);
            let p0 = spec.peak_over(BREATH_BAND.0, BREATH_BAND.1, first, &mut self.scratch);
            fitted(&spec, p0.map(|p| p.freq_hz))
        } else {
            0.0
        };
        let peak = spec.peak_over(BREATH_BAND.0, BREATH_BAND.1, slope, &mut self.scratch);
        self.room_floor.latest =
            spec.floor_slope(BREATH_BAND.0, BREATH_BAND.1, peak.map(|p| p.freq_hz));
        let mut candidate = None;
        let mut clear = false;
        if let Some(p) = peak {
            let p = fold_half(&spec, p, &mut self.scratch);
            // Reject when the slow drift band dominates: a random walk (thermal creep, a door)
            // detrended by a quadratic leaves a hump just above 0.1 Hz that looks like breathing.
            // The band stops short of the peak's own main lobe (a 6 br/min breath is at 0.1 Hz).
            let lobe = dspec.df * dspec.mainlobe_bins() as f32;
            let drift_top = DRIFT_BAND.1.min(p.freq_hz - 0.5 * lobe);
            let drift = if drift_top > DRIFT_BAND.0 {
                dspec.band_max(DRIFT_BAND.0, drift_top)
            } else {
                0.0
            };
            let at_peak = dspec.power_at(p.freq_hz);
            self.breath_diag = BreathDiag {
                peak: Some(p),
                coherence: self.sel_breath.coherence,
                drift_ok: drift < at_peak,
            };
            let coh = self.sel_breath.coherence;
            let coherent = coh >= BREATH_COHERENCE
                || (coh >= STRONG_BREATH_COHERENCE && p.snr >= STRONG_BREATH_SNR);
            if BREATH_GATES.pass(&p) && drift < at_peak && coherent {
                candidate = Some(p.freq_hz);
                clear = coh >= CLEAR_BREATH_COHERENCE && p.snr >= CLEAR_BREATH_SNR;
            }
            self.cue = Some(if coh >= CUE_COHERENCE && !p.at_edge {
                p.snr
            } else {
                0.0
            });
            self.cue_coherence = Some(if p.at_edge { 0.0 } else { coh });
        }
        self.spec_drift = dspec;
        self.spec = spec;
        let lapse = (RHYTHM_LAPSE_S * GRID_HZ) as u64;
        let held = match candidate {
            Some(hz) => self
                .rhythm
                .push(self.ticks, hz, 2.0 * BREATH_TOLERANCE_HZ, lapse),
            None => self.rhythm.held(self.ticks, lapse),
        };
        let previous = self.rhythm.accepted_hz;
        let known = |hz: &f32| previous.is_some_and(|a| (hz - a).abs() <= BREATH_TOLERANCE_HZ);
        let accepted = self
            .pers_breath
            .push(candidate)
            .filter(|hz| clear || known(hz) || held as f32 >= RHYTHM_SPAN_S * GRID_HZ);
        if accepted.is_some() {
            self.rhythm.accepted_hz = accepted;
        }
        self.breathing = VitalReading {
            bpm: accepted.map(|f| f64::from(f) * 60.0),
            snr: peak.map(|p| f64::from(p.snr)),
            candidate_hz: candidate,
            analysed: true,
        };
    }

    fn analyse_heart(&mut self, still: usize) {
        let len = still.min(self.cfg.heart_window);
        self.heart_diag = HeartDiag::default();
        if len < self.cfg.heart_min_window {
            self.heart = VitalReading::default();
            self.pers_heart.reset();
            return;
        }
        // The breathing rate this window: without one, breathing cannot be removed and its
        // harmonics would be taken for a heartbeat.
        let fb = self
            .breathing
            .candidate_hz
            .or(self.breathing.bpm.map(|b| (b / 60.0) as f32));
        let Some(fb) = fb else {
            self.heart = VitalReading::default();
            self.pers_heart.push(None);
            return;
        };
        // The breath model is fitted on the breathing combination (the breath at its
        // strongest), over the heart window.
        let blen = self.breath_raw.len();
        let ready = blen >= len
            && self
                .breath_model
                .fit(&self.breath_raw[blen - len..], fb, GRID_HZ);
        self.heart_diag.breath_removed = ready;
        if !ready {
            self.heart = VitalReading::default();
            self.pers_heart.push(None);
            return;
        }
        if self.sel_heart.due(self.cfg.refit) {
            self.sel_heart = self.heart_weights(len, fb);
        }
        let sel = std::mem::take(&mut self.sel_heart);
        self.combine(&sel, len);
        self.sel_heart = sel;
        self.breath_model.subtract(&mut self.combined);
        let mut beats_in = std::mem::take(&mut self.drift);
        beats_in.clone_from(&self.combined);
        let mut spec = std::mem::take(&mut self.spec);
        self.fft_heart.power(&mut self.combined, GRID_HZ, &mut spec);
        let peak = spec.peak(HEART_BAND.0, HEART_BAND.1, &mut self.scratch);
        self.spec = spec;
        let gated = peak.filter(|p| HEART_GATES.pass(p));
        let beats = beat_rate(
            &beats_in,
            GRID_HZ,
            BEAT_FILTER_BAND,
            peak.map(|p| p.freq_hz),
            &mut self.scratch,
        );
        self.heart_series.clone_from(&beats_in);
        self.drift = beats_in;
        self.heart_diag.spectral_bpm = peak.map(|p| p.freq_hz * 60.0);
        self.heart_diag.peak = peak;
        self.heart_diag.spectral_gated = gated.is_some();
        self.heart_diag.beat_bpm = beats.map(|b| b.bpm);
        self.heart_diag.beat_regularity = beats.map(|b| b.regularity);
        let near_harmonic = |f: f32| {
            let h = (f / fb).round();
            h >= 2.0 && (f - h * fb).abs() <= HARMONIC_GUARD_HZ
        };
        // A pulse is narrow, so its second harmonic can rival its fundamental; when the
        // fundamental sits on a breathing harmonic, the breath model takes it and the second
        // harmonic is the band's peak (simulator, 58 bpm under 10 br/min: 116 read). A peak
        // whose half lies on a breathing harmonic or carries power is ambiguous.
        let median = {
            let (a, b) = (
                (HEART_BAND.0 / self.spec.df.max(1e-9)) as usize,
                (HEART_BAND.1 / self.spec.df.max(1e-9)) as usize,
            );
            self.scratch.clear();
            self.scratch
                .extend(self.spec.power.iter().skip(a).take(b.saturating_sub(a) + 1));
            let mid = self.scratch.len() / 2;
            if self.scratch.is_empty() {
                0.0
            } else {
                *self.scratch.select_nth_unstable_by(mid, f32::total_cmp).1
            }
        };
        let spec = &self.spec;
        let half_ambiguous = |f: f32| {
            let h = 0.5 * f;
            if h < HEART_BAND.0 - SUBHARMONIC_MARGIN_HZ {
                return false;
            }
            let w = spec.df * spec.resolution_bins() as f32;
            near_harmonic(h) || spec.band_max(h - w, h + w) >= SUBHARMONIC_RATIO * median
        };
        // Two ways in: the beat train agrees with the spectrum, or the spectral peak alone is
        // strong enough (on a real pulse the beat picker fails long before the spectrum does:
        // the spectrum integrates 30 beats, a beat is picked from one).
        let candidate = gated
            .filter(|p| {
                !near_harmonic(p.freq_hz)
                    && !half_ambiguous(p.freq_hz)
                    && ((p.snr >= STRONG_HEART_SNR && !self.beats_required)
                        || beats.is_some_and(|b| {
                            b.regularity >= HEART_REGULARITY
                                && (b.bpm - p.freq_hz * 60.0).abs() <= HEART_AGREE_BPM
                        }))
            })
            .map(|p| p.freq_hz);
        let accepted = self.pers_heart.push(candidate);
        self.heart = VitalReading {
            bpm: accepted.map(|f| f64::from(f) * 60.0),
            snr: peak.map(|p| f64::from(p.snr)),
            candidate_hz: candidate,
            analysed: true,
        };
    }
}

/// Keeps the [`PRESELECT`] series of `c` (ascending indices) with the best quality `q`, best
/// first: what a stable sort of all of them by falling quality puts first, ties in index order.
/// Selected, then sorted, instead of sorting every series (672 on a 3 × 2 × 56 link): with the
/// index as tie-break the order is total, so the unstable selection gives the same result.
fn preselect(c: &mut Vec<usize>, q: &[f32]) {
    let key = |k: &usize| q.get(*k).copied().unwrap_or(f32::NEG_INFINITY);
    let order = |a: &usize, b: &usize| key(b).total_cmp(&key(a)).then(a.cmp(b));
    if c.len() > PRESELECT {
        c.select_nth_unstable_by(PRESELECT - 1, order);
        c.truncate(PRESELECT);
    }
    c.sort_unstable_by(order);
}

/// Breathing folds 2:1: amplitude CSI can show the first harmonic above the fundamental; when a
/// clear peak sits at half the frequency (still in band), that is the breathing rate.
fn fold_half(spec: &Spectrum, p: Peak, scratch: &mut Vec<f32>) -> Peak {
    let half = p.freq_hz / 2.0;
    if half < BREATH_BAND.0 {
        return p;
    }
    let w = 1.5 * spec.df * spec.resolution_bins() as f32;
    let Some(sub) = spec.peak(half - w, half + w, scratch) else {
        return p;
    };
    if !sub.at_edge && sub.snr >= BREATH_GATES.snr && sub.snr >= 0.3 * p.snr {
        Peak {
            freq_hz: sub.freq_hz,
            ..p
        }
    } else {
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    /// 32 subcarriers, a few carrying breathing (some in antiphase) and heart, the rest noise.
    fn run(
        breath_bpm: f32,
        heart_bpm: f32,
        amp: f32,
        seconds: usize,
        seed: u64,
    ) -> VitalsEstimator {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let Ok(noise) = Normal::new(0.0f32, 0.01) else {
            panic!("normal")
        };
        let mut v = VitalsEstimator::new(VitalsConfig::default());
        let mut amps = vec![0.0f32; 32];
        for i in 0..seconds * 10 {
            let t = i as f32 / GRID_HZ;
            let b = (2.0 * std::f32::consts::PI * breath_bpm / 60.0 * t).sin();
            let h = (2.0 * std::f32::consts::PI * heart_bpm / 60.0 * t).sin();
            for (k, a) in amps.iter_mut().enumerate() {
                let gain = match k % 8 {
                    1 => amp,
                    5 => -amp,
                    _ => 0.0,
                };
                *a = 1.0 + gain * b + 0.1 * gain * h + noise.sample(&mut rng);
            }
            amps[0] = 0.0;
            v.push_tick(&amps, &[], false);
        }
        v
    }

    /// The one-series-at-a-time preparation the lanes replaced, kept as the reference.
    fn prepared_reference(v: &VitalsEstimator, k: usize, len: usize) -> Vec<f32> {
        let mut s = Vec::new();
        v.copy_series(k, len, &mut s);
        let finite = s.iter().filter(|v| v.is_finite()).count().max(1);
        let mean = s.iter().filter(|v| v.is_finite()).sum::<f32>() / finite as f32;
        s.iter_mut().for_each(|v| {
            *v = if v.is_finite() { *v - mean } else { 0.0 };
        });
        let rms = (s.iter().map(|v| v * v).sum::<f32>() / len.max(1) as f32).sqrt();
        if rms > 1e-9 {
            s.iter_mut().for_each(|v| *v /= rms);
        }
        s
    }

    #[test]
    fn preselect_keeps_what_a_stable_sort_puts_first() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let Ok(noise) = Normal::new(0.0f32, 1.0) else {
            panic!("normal")
        };
        for n in [5, 32, 33, 200, 672] {
            // Coarse values so that ties are common, and the -0.0/0.0 pair `total_cmp` orders.
            let q: Vec<f32> = (0..n)
                .map(|i| match i % 17 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => (noise.sample(&mut rng) * 4.0).round(),
                })
                .collect();
            let all: Vec<usize> = (0..n).filter(|k| k % 5 != 3).collect();
            let mut want = all.clone();
            want.sort_by(|a, b| q[*b].total_cmp(&q[*a]));
            want.truncate(PRESELECT);
            let mut got = all;
            preselect(&mut got, &q);
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn lanes_prepare_series_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let Ok(noise) = Normal::new(0.0f32, 1.0) else {
            panic!("normal")
        };
        let mut v = VitalsEstimator::new(VitalsConfig::default());
        // Amplitudes with gaps, flat series, signed zeros and phases that drift far from zero.
        let (mut amps, mut phases) = (vec![0.0f32; 9], vec![0.0f32; 7]);
        for i in 0..420 {
            for (k, a) in amps.iter_mut().enumerate() {
                *a = match k {
                    0 => 1.0,
                    1 if i % 13 == 0 => f32::NAN,
                    2 if i % 50 < 3 => 0.0,
                    _ => 1.0 + 0.3 * noise.sample(&mut rng),
                };
            }
            for (k, p) in phases.iter_mut().enumerate() {
                *p = match k {
                    0 => -0.0,
                    1 if i % 7 == 0 => f32::INFINITY,
                    _ => 100.0 * k as f32 + 0.01 * i as f32 + noise.sample(&mut rng),
                };
            }
            v.push_tick(&amps, &phases, false);
        }
        let all: Vec<usize> = (0..16).collect();
        for len in [1, 17, 240, 300, 400] {
            for batch in all.chunks(3).chain(all.chunks(LANES)) {
                v.prepare_lanes(batch, len);
                for (j, &k) in batch.iter().enumerate() {
                    v.lane_into_series(j);
                    let want = prepared_reference(&v, k, len);
                    assert_eq!(v.series.len(), want.len());
                    for (a, b) in v.series.iter().zip(&want) {
                        assert_eq!(a.to_bits(), b.to_bits(), "series {k}, len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_estimator_sharing_the_band_statistics_selects_and_reads_the_same() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let Ok(noise) = Normal::new(0.0f32, 0.01) else {
            panic!("normal")
        };
        let mut own = VitalsEstimator::new(VitalsConfig::default());
        let mut shared = VitalsEstimator::new(VitalsConfig::default());
        // More series than a full scan takes, the breathing ones last: a pre-selection that did
        // not see the running statistics would keep the first 32 and miss them.
        let mut amps = vec![0.0f32; 200];
        let mut checked = 0;
        for i in 0..900 {
            let t = i as f32 / GRID_HZ;
            let b = (std::f32::consts::TAU * 14.0 / 60.0 * t).sin();
            for (k, a) in amps.iter_mut().enumerate() {
                let gain = if k >= 180 { 0.02 } else { 0.0 };
                *a = 1.0 + gain * b + noise.sample(&mut rng);
            }
            // A movement halfway restarts both windows.
            let moving = (400..420).contains(&i);
            own.push_tick(&amps, &[], moving);
            shared.push_tick_sharing(&amps, &[], moving, &own);
            assert_eq!(own.breathing, shared.breathing, "tick {i}");
            assert_eq!(own.sel_breath.idx, shared.sel_breath.idx, "tick {i}");
            checked += usize::from(own.breathing.bpm.is_some());
        }
        assert!(checked > 100, "a rate on {checked} ticks");
        assert!(own.sel_breath.idx.iter().all(|&k| k >= 180));
    }

    #[test]
    fn accepts_breathing_and_heart_after_the_window_fills() {
        for (b, h) in [(10.0, 62.0), (15.0, 75.0), (24.0, 96.0)] {
            let v = run(b, h, 0.02, 40, 11);
            let Some(bpm) = v.breathing.bpm else {
                panic!("no breathing for {b}: {:?}", v.breathing)
            };
            assert!((bpm - f64::from(b)).abs() < 0.7, "{b} -> {bpm}");
            if let Some(hr) = v.heart.bpm {
                assert!((hr - f64::from(h)).abs() < 5.0, "{h} -> {hr}");
            }
        }
    }

    #[test]
    fn a_room_floor_turns_red_only_after_half_a_minute_of_falling_empty_windows() {
        let mut f = RoomFloor::default();
        for i in 0..ROOM_FLOOR_MIN {
            assert!(!f.red(), "red after {i} analyses");
            f.latest = Some(-0.8);
            f.learn();
            // A tick without a new analysis offers nothing.
            f.learn();
        }
        assert!(f.red());
        assert!((f.slope() - -0.8).abs() < 1e-6);
        // A flat empty room stays flat; a steeper-than-random-walk fit is held at the limit.
        let mut flat = RoomFloor::default();
        let mut steep = RoomFloor::default();
        for _ in 0..ROOM_FLOOR_MIN {
            flat.latest = Some(-0.1);
            flat.learn();
            steep.latest = Some(-5.0);
            steep.learn();
        }
        assert!(!flat.red());
        assert!(steep.red() && (steep.slope() - ROOM_FLOOR_STEEPEST).abs() < 1e-6);
    }

    #[test]
    fn noise_gives_no_rate() {
        for seed in 0..5 {
            let v = run(15.0, 70.0, 0.0, 60, seed);
            assert_eq!(v.breathing.bpm, None);
            assert_eq!(v.heart.bpm, None);
        }
    }
}
