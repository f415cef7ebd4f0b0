//! Breathing and heart rate of one link, from gain-normalised amplitudes on the uniform grid.
//!
//! Chest motion modulates a few subcarriers strongly and most not at all, and neighbouring
//! subcarriers can move in antiphase (adding them cancels the signal). So the estimator keeps the
//! top 8 subcarriers by vital-band SNR, aligns their signs by correlating their band-passed series
//! with the best one, weights them by SNR, and refits that selection every 6 s. The combined
//! series is high-passed at 0.07 Hz (drift) and analysed every second; a rate is emitted only
//! after prominence, SNR, concentration, peak-width, cross-subcarrier coherence and 3-window
//! persistence gates pass.
//!
//! The coherence gate is what keeps an empty room empty. Picking the 8 best of ~52 noise-only
//! subcarriers by their strongest breathing-band peak and sign-aligning them to the best one is a
//! search over hundreds of chances; its winner is a tone-narrow peak that passes every
//! single-series gate, and the 1 s hop over a 30 s window makes it "persist" for several windows.
//! Chest motion changes one body path, so it moves every subcarrier it reaches with the same
//! waveform (band-passed correlation with the best subcarrier 0.5–0.98 on the simulator); the
//! chosen noise subcarriers are nearly independent (0.04–0.35). Heart rate is searched after notching the 2nd–4th
//! breathing harmonics (the 3rd harmonic of 15 br/min sits at 45 bpm, RuView's infamous reading),
//! and breathing folds 2:1 when its first harmonic outshines a real fundamental.

use super::dsp::filter::{BandPass, highpass_zero_phase};
use super::dsp::hampel::hampel_in_place;
use super::dsp::spectrum::{Peak, PeakGates, Persistence, Spectrum, SpectrumAnalyzer};

/// Rate of the uniform grid the vitals run on, Hz.
pub const GRID_HZ: f32 = 10.0;
/// Breathing band, Hz (6–30 br/min).
pub const BREATH_BAND: (f32, f32) = (0.1, 0.5);
/// Band used to pick breathing subcarriers (a little wider so edge rates still select).
pub const BREATH_SELECT_BAND: (f32, f32) = (0.08, 0.6);
/// Slow drift band: when it dominates, the "breathing" is posture or furniture drift.
pub const DRIFT_BAND: (f32, f32) = (0.03, 0.1);
/// Drift removed below this before the breathing spectrum (see `highpass_zero_phase`).
pub const DRIFT_CUTOFF_HZ: f32 = 0.07;
/// Heart band, Hz (50–120 bpm).
pub const HEART_BAND: (f32, f32) = (0.83, 2.0);

pub const BREATH_GATES: PeakGates = PeakGates {
    prominence: 1.5,
    snr: 5.0,
    concentration: 0.6,
    max_width: 1.6,
};
/// Least median band-passed correlation between the selected subcarriers and the best one for a
/// breathing candidate (see `Selection::coherence`). Measured on the simulator: empty room
/// 0.04–0.35 (median 0.13) on windows whose peak passed every other gate; a still breathing
/// person 0.53–0.98.
pub const BREATH_COHERENCE: f32 = 0.4;
/// Half-width of the notch around each breathing harmonic in the heart spectrum, Hz. With the
/// 30 s heart window the main lobe is about ±0.05 Hz; wider notches blank most of the band once
/// every harmonic is notched.
pub const HARMONIC_NOTCH_HZ: f32 = 0.05;
/// A heart peak just outside a harmonic's notch must be this many times stronger than the
/// harmonic itself, or it is taken for the harmonic's skirt.
pub const HARMONIC_MARGIN: f32 = 2.0;
pub const HEART_GATES: PeakGates = PeakGates {
    prominence: 4.0,
    snr: 8.0,
    concentration: 0.55,
    max_width: 1.6,
};

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
    /// Grid samples between subcarrier re-selections.
    pub refit: usize,
    /// Subcarriers kept.
    pub top_k: usize,
}

impl Default for VitalsConfig {
    fn default() -> Self {
        Self {
            breath_window: 300,
            breath_min_window: 240,
            heart_window: 300,
            heart_min_window: 120,
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

#[derive(Debug, Clone, Default)]
struct Selection {
    idx: Vec<usize>,
    sign_weight: Vec<f32>,
    age: usize,
    /// Median |correlation| of the other selected subcarriers' band-passed series with the
    /// best one's: chest motion moves every subcarrier with one waveform, noise does not.
    coherence: f32,
}

/// Per-link vitals estimator.
#[derive(Debug)]
pub struct VitalsEstimator {
    cfg: VitalsConfig,
    n_sc: usize,
    cap: usize,
    ring: Vec<f32>,
    head: usize,
    count: usize,
    still: usize,
    since_hop: usize,
    sel_breath: Selection,
    sel_heart: Selection,
    fft_breath: SpectrumAnalyzer,
    fft_heart: SpectrumAnalyzer,
    pers_breath: Persistence,
    pers_heart: Persistence,
    pub breathing: VitalReading,
    pub heart: VitalReading,
    /// The chest motion behind the latest breathing analysis: the combined, drift-free series
    /// low-passed for display, at `GRID_HZ`, oldest first. `None` until a still window was
    /// analysed, and again after motion. Shared, so publishing it costs a reference count.
    pub breathing_wave: Option<std::sync::Arc<[f32]>>,
    spec: Spectrum,
    spec_drift: Spectrum,
    spec_raw: Spectrum,
    drift: Vec<f32>,
    series: Vec<f32>,
    combined: Vec<f32>,
    scratch: Vec<f32>,
    scored: Vec<(f32, usize, f32)>,
    bp_ref: Vec<f32>,
    bp_tmp: Vec<f32>,
}

impl VitalsEstimator {
    pub fn new(cfg: VitalsConfig) -> Self {
        let cap = cfg.breath_window.max(cfg.heart_window).max(16);
        Self {
            fft_breath: SpectrumAnalyzer::new(1024.max(cfg.breath_window * 2)),
            fft_heart: SpectrumAnalyzer::new(512.max(cfg.heart_window * 2)),
            pers_breath: Persistence::new(3, 0.06),
            // Heart needs 5 agreeing windows: its peak is weak and a wrong rate is worse than none.
            pers_heart: Persistence::new(5, 0.10),
            cfg,
            n_sc: 0,
            cap,
            ring: Vec::new(),
            head: 0,
            count: 0,
            still: 0,
            since_hop: 0,
            sel_breath: Selection::default(),
            sel_heart: Selection::default(),
            breathing: VitalReading::default(),
            heart: VitalReading::default(),
            breathing_wave: None,
            spec: Spectrum::default(),
            spec_drift: Spectrum::default(),
            spec_raw: Spectrum::default(),
            drift: Vec::new(),
            series: Vec::new(),
            combined: Vec::new(),
            scratch: Vec::new(),
            scored: Vec::new(),
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
        self.clear_readings();
    }

    fn clear_readings(&mut self) {
        self.pers_breath.reset();
        self.pers_heart.reset();
        self.breathing = VitalReading::default();
        self.heart = VitalReading::default();
        self.breathing_wave = None;
    }

    /// Still grid samples available (the analysis window never spans motion).
    pub fn still_samples(&self) -> usize {
        self.still.min(self.count)
    }

    /// Adds one grid sample of per-subcarrier amplitudes. `moving` restarts the still window and
    /// the persistence (a moving body swamps the vital band).
    pub fn push_tick(&mut self, amps: &[f32], moving: bool) {
        if amps.len() != self.n_sc {
            self.n_sc = amps.len();
            self.ring.clear();
            self.ring.resize(self.n_sc * self.cap, 0.0);
            self.reset();
        }
        if self.n_sc == 0 {
            return;
        }
        for (k, a) in amps.iter().enumerate() {
            self.ring[k * self.cap + self.head] = if a.is_finite() { *a } else { 0.0 };
        }
        self.head = (self.head + 1) % self.cap;
        self.count = (self.count + 1).min(self.cap);
        if moving {
            self.still = 0;
            self.clear_readings();
        } else {
            self.still += 1;
        }
        self.since_hop += 1;
        self.sel_breath.age += 1;
        self.sel_heart.age += 1;
        if self.since_hop >= self.cfg.hop {
            self.since_hop = 0;
            self.analyse();
        }
    }

    /// Copies the last `len` samples of subcarrier `k` into `out`, oldest first.
    fn copy_series(&self, k: usize, len: usize, out: &mut Vec<f32>) {
        out.clear();
        let base = k * self.cap;
        let start = (self.head + self.cap - len) % self.cap;
        for i in 0..len {
            out.push(self.ring[base + (start + i) % self.cap]);
        }
    }

    /// The last `len` samples of subcarrier `k`, mean removed and scaled to unit RMS, in
    /// `self.series` (the spectrum detrends; Hampel runs on the combined series).
    fn prepared_series(&mut self, k: usize, len: usize) {
        let mut s = std::mem::take(&mut self.series);
        self.copy_series(k, len, &mut s);
        let mean = s.iter().sum::<f32>() / len.max(1) as f32;
        s.iter_mut().for_each(|v| *v -= mean);
        let rms = (s.iter().map(|v| v * v).sum::<f32>() / len.max(1) as f32).sqrt();
        if rms > 1e-9 {
            s.iter_mut().for_each(|v| *v /= rms);
        }
        self.series = s;
    }

    fn valid_subcarrier(&self, k: usize, len: usize) -> bool {
        let base = k * self.cap;
        let start = (self.head + self.cap - len) % self.cap;
        let mut zeros = 0;
        for i in 0..len {
            if self.ring[base + (start + i) % self.cap] <= 0.0 {
                zeros += 1;
            }
        }
        zeros * 10 < len
    }

    /// Picks the top-k subcarriers by band SNR and aligns their signs to the best one.
    fn refit(&mut self, len: usize, band: (f32, f32), notches: &[f32], heart: bool) -> Selection {
        self.scored.clear();
        let mut spec = std::mem::take(&mut self.spec);
        for k in 0..self.n_sc {
            if !self.valid_subcarrier(k, len) {
                continue;
            }
            self.prepared_series(k, len);
            let an = if heart {
                &mut self.fft_heart
            } else {
                &mut self.fft_breath
            };
            an.power(&mut self.series, GRID_HZ, &mut spec);
            for f in notches {
                spec.notch(*f, HARMONIC_NOTCH_HZ);
            }
            if let Some(p) = spec.peak(band.0, band.1, &mut self.scratch) {
                self.scored.push((p.snr, k, p.freq_hz));
            }
        }
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
        // low-pass at 0.6 Hz and, moving the subcarriers with other signs than the breath,
        // would decorrelate them.
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
            sel.sign_weight.push(sign * snr);
        }
        self.bp_ref = bp_ref;
        self.bp_tmp = bp_tmp;
        cors.sort_unstable_by(f32::total_cmp);
        sel.coherence = cors.get(cors.len() / 2).copied().unwrap_or(0.0);
        sel
    }

    /// The SNR-weighted, sign-aligned sum of the selected subcarriers over the last `len` samples.
    fn combine(&mut self, sel: &Selection, len: usize) {
        let mut combined = std::mem::take(&mut self.combined);
        combined.clear();
        combined.resize(len, 0.0);
        for (k, w) in sel.idx.iter().zip(sel.sign_weight.iter()) {
            self.prepared_series(*k, len);
            for (c, v) in combined.iter_mut().zip(self.series.iter()) {
                *c += w * v;
            }
        }
        // One Hampel pass on the combination (spikes are common to all subcarriers: an AGC
        // glitch or a corrupted packet) costs an eighth of filtering each subcarrier.
        hampel_in_place(&mut combined, &mut self.scratch);
        self.combined = combined;
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
            return;
        }
        if self.sel_breath.idx.is_empty() || self.sel_breath.age >= self.cfg.refit {
            self.sel_breath = self.refit(len, BREATH_SELECT_BAND, &[], false);
        }
        let sel = std::mem::take(&mut self.sel_breath);
        self.combine(&sel, len);
        self.sel_breath = sel;
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
        self.fft_breath
            .power(&mut self.combined, GRID_HZ, &mut spec);
        let peak = spec.peak(BREATH_BAND.0, BREATH_BAND.1, &mut self.scratch);
        let mut candidate = None;
        if let Some(p) = peak {
            let p = fold_half(&spec, p, &mut self.scratch);
            // Reject when the slow drift band dominates: a random walk (thermal creep, a door)
            // detrended by a quadratic leaves a hump just above 0.1 Hz that looks like breathing.
            let drift = dspec.band_max(DRIFT_BAND.0, DRIFT_BAND.1);
            let at_peak = dspec.power_at(p.freq_hz);
            if BREATH_GATES.pass(&p)
                && drift < at_peak
                && self.sel_breath.coherence >= BREATH_COHERENCE
            {
                candidate = Some(p.freq_hz);
            }
        }
        self.spec_drift = dspec;
        self.spec = spec;
        let accepted = self.pers_breath.push(candidate);
        self.breathing = VitalReading {
            bpm: accepted.map(|f| f64::from(f) * 60.0),
            snr: peak.map(|p| f64::from(p.snr)),
            candidate_hz: candidate,
            analysed: true,
        };
    }

    fn analyse_heart(&mut self, still: usize) {
        let len = still.min(self.cfg.heart_window);
        if len < self.cfg.heart_min_window {
            self.heart = VitalReading::default();
            self.pers_heart.reset();
            return;
        }
        let fb = self
            .breathing
            .candidate_hz
            .or(self.breathing.bpm.map(|b| (b / 60.0) as f32));
        // Every breathing harmonic inside the heart band is notched, not only the first few: a
        // slow breath (10 br/min) has harmonics across the whole band, and the unnotched 9th of
        // one measured as a ~115 bpm "heart rate" for a true 58.
        let notches: Vec<f32> = fb
            .map(|f| {
                (2..=40)
                    .map(|h| h as f32 * f)
                    .take_while(|h| *h <= HEART_BAND.1 + HARMONIC_NOTCH_HZ)
                    .collect()
            })
            .unwrap_or_default();
        if self.sel_heart.idx.is_empty() || self.sel_heart.age >= self.cfg.refit {
            self.sel_heart = self.refit(len, HEART_BAND, &notches, true);
        }
        let sel = std::mem::take(&mut self.sel_heart);
        self.combine(&sel, len);
        self.sel_heart = sel;
        let mut spec = std::mem::take(&mut self.spec);
        self.fft_heart.power(&mut self.combined, GRID_HZ, &mut spec);
        let mut raw = std::mem::take(&mut self.spec_raw);
        raw.clone_from(&spec);
        for f in &notches {
            spec.notch(*f, HARMONIC_NOTCH_HZ);
        }
        let peak = spec.peak(HEART_BAND.0, HEART_BAND.1, &mut self.scratch);
        let candidate = peak
            .filter(|p| HEART_GATES.pass(p) && !explained_by_breath(&raw, p, &notches))
            .map(|p| p.freq_hz);
        self.spec_raw = raw;
        self.spec = spec;
        let accepted = self.pers_heart.push(candidate);
        self.heart = VitalReading {
            bpm: accepted.map(|f| f64::from(f) * 60.0),
            snr: peak.map(|p| f64::from(p.snr)),
            candidate_hz: candidate,
            analysed: true,
        };
    }
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

/// A heart candidate next to a breathing harmonic may be that harmonic's skirt leaking past its
/// notch: it must be outside the notch and at least twice as strong as the harmonic itself (taken
/// on the un-notched spectrum `raw`).
fn explained_by_breath(raw: &Spectrum, p: &Peak, harmonics: &[f32]) -> bool {
    let lobe_hz = raw.df * raw.mainlobe_bins() as f32;
    harmonics.iter().any(|h| {
        let d = (p.freq_hz - h).abs();
        d <= HARMONIC_NOTCH_HZ
            || (d <= HARMONIC_NOTCH_HZ + lobe_hz
                && p.power
                    < HARMONIC_MARGIN * raw.band_max(h - HARMONIC_NOTCH_HZ, h + HARMONIC_NOTCH_HZ))
    })
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
            v.push_tick(&amps, false);
        }
        v
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
    fn noise_gives_no_rate() {
        for seed in 0..5 {
            let v = run(15.0, 70.0, 0.0, 60, seed);
            assert_eq!(v.breathing.bpm, None);
            assert_eq!(v.heart.bpm, None);
        }
    }
}
