//! Motion of one link, decided per packet.
//!
//! A person moving changes the multipath, so the amplitude of whole stretches of the spectrum
//! wanders within a fraction of a second, while a still room only adds independent noise to each
//! subcarrier. The detector works on that difference:
//!
//! 1. **Bands.** The gain-normalised amplitudes of the valid subcarriers are averaged in
//!    [`MotionConfig::bands`] contiguous bands. Neighbouring subcarriers move together when the
//!    channel changes (they are well inside the coherence bandwidth) but carry independent noise,
//!    so averaging keeps the motion and cuts the noise by √(subcarriers per band).
//! 2. **Glitch packets.** Some radios deliver the odd packet with a completely different shape
//!    (half the level, a different spectrum: another transmitter or PHY format; the ESP32-C6
//!    captures hold dozens). A packet far from the smoothed state is held back; if the next
//!    packet is close again the held packets are dropped, if the change persists (someone really
//!    moved) they are used after all. The decision costs at most two packets of delay.
//! 3. **Low-pass.** Each band is smoothed by a one-pole filter at [`MotionConfig::lowpass_hz`]
//!    (human motion is below ~5 Hz; per-packet noise is white up to half the packet rate).
//! 4. **Spread.** The standard deviation of each smoothed band over the last
//!    [`MotionConfig::window_s`] is the band's spread (running sums, O(bands) per packet).
//! 5. **Score.** Before calibration, the mean spread against a fixed level
//!    ([`MotionConfig::uncalibrated`], in units of the mean amplitude), set above every quiet
//!    link seen. After calibration (see `calibration`), each used band's spread in units of its
//!    own still-room floor, averaged, against [`MotionConfig::threshold`].
//! 6. **State.** Moving starts when the score crosses 1 and lasts while it stays above
//!    [`MotionConfig::release`], plus [`MotionConfig::hold_s`].
//!
//! A link starts with a warm-up: the radio's gain and the channel settle first (ESPectre's
//! firmware locks the gain after 300 packets and its own evaluation discards them; the ESP32-C6
//! and ESP32-S3 captures show the spectrum reshaping in their first 1–2 s). No motion is
//! reported and nothing is learned until the signal has stayed steady (the uncalibrated score
//! below the calibration's stillness level) for [`MotionConfig::steady_s`], and at least
//! [`MotionConfig::warmup_s`] passed; after [`MotionConfig::warmup_max_s`] the warm-up ends
//! regardless, so someone moving from the start is reported then.
//!
//! Drift: while the room is calm the floor follows the spread slowly (a median tracker with a
//! [`DRIFT_TAU_S`] time constant). If a link reads moving for [`DRIFT_RECAL_S`] while the
//! uncalibrated detector calls it still, the floor was learned too low (a quieter moment than
//! the room's usual): a re-calibration runs in the background and replaces it once it finds
//! still, stationary data. A packet rate change of more than [`RATE_RECAL`] invalidates the floor.

use super::calibration::{CalibrationPhase, CalibrationStatus, Calibrator, NoiseFloor, WaitReason};

/// Seconds of packets averaged into one block of the fall monitor's burst measure.
pub const BLOCK_S: f64 = 0.1;
/// Time constant of the calm-time floor tracking.
pub const DRIFT_TAU_S: f64 = 120.0;
/// Seconds of "moving" that the uncalibrated detector calls still before a re-calibration.
pub const DRIFT_RECAL_S: f64 = 60.0;
/// Relative packet-rate change that invalidates a learned floor.
pub const RATE_RECAL: f64 = 0.25;
/// A packet is a glitch candidate when its median band deviation from the smoothed state exceeds
/// this many times the typical deviation...
const GLITCH_K: f32 = 5.0;
/// ...and this absolute deviation (relative amplitude).
const GLITCH_FLOOR: f32 = 0.03;
/// Consecutive far packets held back before the change is taken as real.
const GLITCH_HOLD: usize = 2;
/// Calibration collects only while the uncalibrated score stays below this.
const CAL_STILL: f32 = 0.7;
/// The floor tracks the spread only while the calibrated score stays below this.
const DRIFT_CALM: f32 = 0.6;
/// Packet rate assumed until the link's rate is measured.
const DEFAULT_RATE_HZ: f64 = 100.0;

/// Tunables of the motion detector. `Default` gives the production settings; the thresholds were
/// tuned on the ESP32-C3/C5/C6 captures and checked on the ESP32/ESP32-S3 ones (README,
/// "Accuracy").
#[derive(Debug, Clone, PartialEq)]
pub struct MotionConfig {
    /// Contiguous bands the valid subcarriers are averaged in.
    pub bands: usize,
    /// Bands used after calibration (the steadiest).
    pub keep_bands: usize,
    /// Window of the spread, seconds.
    pub window_s: f64,
    /// Cut-off of the per-band smoothing, Hz.
    pub lowpass_hz: f64,
    /// Measure the spread around the window's straight-line fit (not its mean).
    pub detrend: bool,
    /// Calibrated threshold: mean band spread in units of the still-room floor.
    pub threshold: f32,
    /// Uncalibrated threshold: mean band spread in units of the mean amplitude.
    pub uncalibrated: f32,
    /// Moving ends when the score falls below this fraction of the threshold...
    pub release: f32,
    /// ...for this long.
    pub hold_s: f64,
    /// Shortest warm-up after a link starts, seconds: no motion is reported or learned in it.
    pub warmup_s: f64,
    /// The warm-up ends once the signal was steady this long...
    pub steady_s: f64,
    /// ...or at the latest after this many seconds.
    pub warmup_max_s: f64,
    /// Seconds of still data to learn the floor from; 0 disables calibration.
    pub calibration_s: f64,
}

impl MotionConfig {
    /// Sets one field by name (`threshold=2.5`), for tuning runs of `eval motion --set`.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("{assignment:?} is not KEY=VALUE"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{key}: {e}");
        let f = || value.trim().parse::<f64>().map_err(|e| bad(&e));
        match key.trim() {
            "bands" => self.bands = value.trim().parse().map_err(|e| bad(&e))?,
            "keep_bands" => self.keep_bands = value.trim().parse().map_err(|e| bad(&e))?,
            "window_s" => self.window_s = f()?,
            "lowpass_hz" => self.lowpass_hz = f()?,
            "detrend" => self.detrend = value.trim().parse().map_err(|e| bad(&e))?,
            "threshold" => self.threshold = f()? as f32,
            "uncalibrated" => self.uncalibrated = f()? as f32,
            "release" => self.release = f()? as f32,
            "hold_s" => self.hold_s = f()?,
            "warmup_s" => self.warmup_s = f()?,
            "steady_s" => self.steady_s = f()?,
            "warmup_max_s" => self.warmup_max_s = f()?,
            "calibration_s" => self.calibration_s = f()?,
            other => return Err(format!("unknown motion setting {other:?}")),
        }
        Ok(())
    }
}

impl Default for MotionConfig {
    fn default() -> Self {
        Self {
            bands: 8,
            keep_bands: 6,
            window_s: 0.4,
            lowpass_hz: 5.5,
            detrend: true,
            threshold: 3.0,
            uncalibrated: 0.02,
            release: 0.7,
            hold_s: 0.5,
            warmup_s: 1.2,
            steady_s: 1.0,
            warmup_max_s: 3.0,
            calibration_s: 2.0,
        }
    }
}

/// Per-packet motion detector of one link; see the module docs.
#[derive(Debug, Clone)]
pub struct MotionDetector {
    cfg: MotionConfig,
    rate_hz: f64,
    window: usize,
    alpha: f32,
    /// Band of each subcarrier (`u8::MAX` = unused), fixed from the first usable packet.
    band_of: Vec<u8>,
    band_sum: Vec<f32>,
    band_n: Vec<u16>,
    bands_now: Vec<f32>,
    /// Smoothed band values.
    lp: Vec<f32>,
    lp_ready: bool,
    /// Typical median deviation of a packet from `lp`.
    dev_scale: Option<f32>,
    pending: Vec<f32>,
    pending_n: usize,
    ring: Vec<f32>,
    ring_pos: usize,
    ring_len: usize,
    sum1: Vec<f64>,
    sum2: Vec<f64>,
    /// Σ position·value over the window (oldest at position 0), for the straight-line fit.
    sum_ix: Vec<f64>,
    since_resum: usize,
    spread: Vec<f32>,
    start_t: Option<f64>,
    warm: bool,
    steady_since: Option<f64>,
    last_t: f64,
    calibrator: Calibrator,
    /// Background re-calibration after drift.
    recal: Option<Calibrator>,
    floor: Option<NoiseFloor>,
    drift_since: Option<f64>,
    score: f32,
    raw_score: f32,
    moving: bool,
    hold_until: f64,
    burst: BurstMeter,
}

impl Default for MotionDetector {
    fn default() -> Self {
        Self::new(MotionConfig::default())
    }
}

impl MotionDetector {
    pub fn new(cfg: MotionConfig) -> Self {
        let bands = cfg.bands.clamp(1, 64);
        let keep = cfg.keep_bands.clamp(1, bands);
        let cfg = MotionConfig {
            bands,
            keep_bands: keep,
            ..cfg
        };
        let mut d = Self {
            calibrator: Calibrator::new(bands, keep),
            cfg,
            rate_hz: DEFAULT_RATE_HZ,
            window: 0,
            alpha: 0.0,
            band_of: Vec::new(),
            band_sum: vec![0.0; bands],
            band_n: vec![0; bands],
            bands_now: vec![0.0; bands],
            lp: vec![0.0; bands],
            lp_ready: false,
            dev_scale: None,
            pending: Vec::with_capacity(GLITCH_HOLD * bands),
            pending_n: 0,
            ring: Vec::new(),
            ring_pos: 0,
            ring_len: 0,
            sum1: vec![0.0; bands],
            sum2: vec![0.0; bands],
            sum_ix: vec![0.0; bands],
            since_resum: 0,
            spread: vec![0.0; bands],
            start_t: None,
            warm: false,
            steady_since: None,
            last_t: 0.0,
            recal: None,
            floor: None,
            drift_since: None,
            score: 0.0,
            raw_score: 0.0,
            moving: false,
            hold_until: f64::NEG_INFINITY,
            burst: BurstMeter::default(),
        };
        d.derive(DEFAULT_RATE_HZ);
        d
    }

    fn bands(&self) -> usize {
        self.cfg.bands
    }

    fn derive(&mut self, rate_hz: f64) {
        self.rate_hz = rate_hz;
        self.window = ((self.cfg.window_s * rate_hz).round() as usize).clamp(4, 1024);
        let a = 1.0 - (-2.0 * std::f64::consts::PI * self.cfg.lowpass_hz / rate_hz).exp();
        self.alpha = a.clamp(0.01, 1.0) as f32;
        // Keep the newest values across a re-derive: a rate estimate settling must not blind the
        // detector for a window.
        let b = self.bands();
        let old_window = self.ring.len() / b;
        let keep = self.ring_len.min(self.window);
        let mut ring = vec![0.0; self.window * b];
        for i in 0..keep {
            // i-th newest value of the old ring goes to slot keep-1-i of the new one.
            let src = (self.ring_pos + old_window - 1 - i) % old_window.max(1);
            let dst = keep - 1 - i;
            ring[dst * b..(dst + 1) * b].copy_from_slice(&self.ring[src * b..(src + 1) * b]);
        }
        self.ring = ring;
        self.ring_len = keep;
        self.ring_pos = keep % self.window;
        self.resum();
        let needed = (self.cfg.calibration_s * rate_hz).round() as usize;
        self.calibrator.set_needed(needed);
        if let Some(r) = &mut self.recal {
            r.set_needed(needed);
        }
    }

    /// Re-derives windows from a newly measured packet rate.
    pub fn set_rate(&mut self, rate_hz: f64) {
        if !(rate_hz.is_finite() && rate_hz > 0.0) {
            return;
        }
        self.derive(rate_hz.clamp(1.0, 5000.0));
        self.burst.set_rate(rate_hz);
        if let Some(f) = &self.floor
            && f.rate_hz > 0.0
            && ((rate_hz - f.rate_hz) / f.rate_hz).abs() > RATE_RECAL
        {
            // The spread of a smoothed band depends on the rate: the floor no longer applies.
            self.floor = None;
            self.recal = None;
            self.calibrator.clear(None);
        }
    }

    /// Forgets the smoothing state after a gap (differences across it mean nothing); the
    /// calibration and the moving state's hold are kept.
    pub fn break_continuity(&mut self) {
        self.lp_ready = false;
        self.pending_n = 0;
        self.ring_len = 0;
        self.ring_pos = 0;
        self.sum1.iter_mut().for_each(|s| *s = 0.0);
        self.sum2.iter_mut().for_each(|s| *s = 0.0);
        self.sum_ix.iter_mut().for_each(|s| *s = 0.0);
        self.burst.break_continuity();
    }

    /// A restarted stream (clock reset): warm-up again, calibration kept.
    pub fn restart(&mut self) {
        self.break_continuity();
        self.start_t = None;
        self.warm = false;
        self.steady_since = None;
        self.moving = false;
        self.score = 0.0;
        self.hold_until = f64::NEG_INFINITY;
    }

    /// Forgets the learned floor and starts a new calibration.
    pub fn recalibrate(&mut self) {
        self.floor = None;
        self.recal = None;
        self.drift_since = None;
        self.calibrator.clear(None);
    }

    /// Feeds one packet of gain-normalised amplitudes at source time `t_s` (0 marks an invalid
    /// subcarrier).
    pub fn push(&mut self, t_s: f64, amp: &[f32]) {
        self.burst.push(amp);
        if !t_s.is_finite() {
            return;
        }
        self.last_t = t_s;
        if self.band_of.len() != amp.len() && !self.layout(amp) {
            return;
        }
        let start = *self.start_t.get_or_insert(t_s);
        if !self.band_values(amp) {
            return;
        }
        if !self.lp_ready {
            self.lp.copy_from_slice(&self.bands_now);
            self.lp_ready = true;
            self.update_state(t_s, start);
            return;
        }
        let dev = median_abs_dev(&self.bands_now, &self.lp);
        let limit = self
            .dev_scale
            .map_or(f32::INFINITY, |s| (GLITCH_K * s).max(GLITCH_FLOOR));
        if dev > limit {
            if self.pending_n < GLITCH_HOLD {
                self.pending.extend_from_slice(&self.bands_now);
                self.pending_n += 1;
                return;
            }
            // A third far packet in a row: the channel really changed. Use the held ones too.
            let held = std::mem::take(&mut self.pending);
            for row in held.chunks_exact(self.bands()) {
                self.bands_now.copy_from_slice(row);
                self.feed(t_s, start, None);
            }
            self.pending = held;
            self.pending.clear();
            self.pending_n = 0;
            self.band_values(amp);
            self.feed(t_s, start, None);
            return;
        }
        // Close to the state again: whatever was held back was a glitch.
        self.pending.clear();
        self.pending_n = 0;
        self.feed(t_s, start, Some(dev));
    }

    /// Assigns subcarriers to bands from the first packet with enough valid ones.
    fn layout(&mut self, amp: &[f32]) -> bool {
        let valid: Vec<usize> = amp
            .iter()
            .enumerate()
            .filter(|(_, a)| **a > 0.0 && a.is_finite())
            .map(|(i, _)| i)
            .collect();
        let b = self.bands();
        if valid.len() < b {
            return false;
        }
        self.band_of = vec![u8::MAX; amp.len()];
        for (j, &i) in valid.iter().enumerate() {
            self.band_of[i] = (j * b / valid.len()) as u8;
        }
        self.lp_ready = false;
        self.pending_n = 0;
        self.pending.clear();
        self.ring_len = 0;
        self.ring_pos = 0;
        self.sum1.iter_mut().for_each(|s| *s = 0.0);
        self.sum2.iter_mut().for_each(|s| *s = 0.0);
        self.sum_ix.iter_mut().for_each(|s| *s = 0.0);
        self.floor = None;
        self.recal = None;
        self.calibrator.clear(None);
        true
    }

    /// Band means of this packet into `bands_now`; false if a band has no valid subcarrier.
    fn band_values(&mut self, amp: &[f32]) -> bool {
        self.band_sum.iter_mut().for_each(|s| *s = 0.0);
        self.band_n.iter_mut().for_each(|n| *n = 0);
        for (a, &b) in amp.iter().zip(&self.band_of) {
            if b != u8::MAX && *a > 0.0 {
                let b = usize::from(b);
                self.band_sum[b] += *a;
                self.band_n[b] += 1;
            }
        }
        for ((v, s), n) in self
            .bands_now
            .iter_mut()
            .zip(&self.band_sum)
            .zip(&self.band_n)
        {
            if *n == 0 || !s.is_finite() {
                return false;
            }
            *v = s / f32::from(*n);
        }
        true
    }

    /// Smooths `bands_now` into the state, updates the spread and the decision.
    fn feed(&mut self, t_s: f64, start: f64, dev: Option<f32>) {
        if let Some(d) = dev {
            self.dev_scale = Some(match self.dev_scale {
                None => d,
                Some(s) => s + 0.02 * (d - s),
            });
        }
        let a = self.alpha;
        for (l, v) in self.lp.iter_mut().zip(&self.bands_now) {
            *l += a * (v - *l);
        }
        let b = self.bands();
        let base = self.ring_pos * b;
        let full = self.ring_len == self.window;
        let last = (self.window - 1) as f64;
        let pos = self.ring_len as f64;
        for g in 0..b {
            let new = f64::from(self.lp[g]);
            if full {
                // The oldest leaves position 0 and every other value moves down one position.
                let old = f64::from(self.ring[base + g]);
                self.sum_ix[g] -= self.sum1[g] - old;
                self.sum1[g] -= old;
                self.sum2[g] -= old * old;
                self.sum_ix[g] += last * new;
            } else {
                self.sum_ix[g] += pos * new;
            }
            self.sum1[g] += new;
            self.sum2[g] += new * new;
            self.ring[base + g] = self.lp[g];
        }
        self.ring_pos = (self.ring_pos + 1) % self.window;
        self.ring_len = (self.ring_len + 1).min(self.window);
        self.since_resum += 1;
        if self.since_resum >= 64 * self.window {
            self.resum();
        }
        if self.ring_len == self.window {
            // Spread = RMS deviation from the window's straight-line fit: what the band did
            // beyond a steady drift. Breathing (0.1–0.5 Hz) and slow creep are close to straight
            // lines over 0.4 s; a body moving is not.
            let n = self.window as f64;
            let t_mean = (n - 1.0) / 2.0;
            let s_tt = n * (n * n - 1.0) / 12.0;
            for g in 0..b {
                let sxx = self.sum2[g] - self.sum1[g] * self.sum1[g] / n;
                let sxy = self.sum_ix[g] - t_mean * self.sum1[g];
                let res = if self.cfg.detrend && s_tt > 0.0 {
                    sxx - sxy * sxy / s_tt
                } else {
                    sxx
                };
                self.spread[g] = (res / n).max(0.0).sqrt() as f32;
            }
        }
        self.update_state(t_s, start);
    }

    /// Recomputes the running sums from the ring (bounds float drift on endless streams).
    fn resum(&mut self) {
        self.since_resum = 0;
        let b = self.bands();
        self.sum1.iter_mut().for_each(|s| *s = 0.0);
        self.sum2.iter_mut().for_each(|s| *s = 0.0);
        self.sum_ix.iter_mut().for_each(|s| *s = 0.0);
        let w = self.window.max(1);
        let oldest = if self.ring_len == w { self.ring_pos } else { 0 };
        for k in 0..self.ring_len {
            let slot = (oldest + k) % w;
            let row = &self.ring[slot * b..(slot + 1) * b];
            for (g, v) in row.iter().enumerate() {
                let v = f64::from(*v);
                self.sum1[g] += v;
                self.sum2[g] += v * v;
                self.sum_ix[g] += k as f64 * v;
            }
        }
    }

    fn update_state(&mut self, t_s: f64, start: f64) {
        if self.ring_len < self.window {
            // Filling the spread window (start, or after a gap): a moving state keeps its hold.
            self.score = 0.0;
            if !self.warm || t_s > self.hold_until {
                self.moving = false;
            }
            if self.floor.is_none() {
                let why = if self.warm {
                    WaitReason::NoSignal
                } else {
                    WaitReason::WarmingUp
                };
                self.calibrator.hold(why);
            }
            return;
        }
        let b = self.bands();
        let raw = self.spread.iter().sum::<f32>() / b as f32 / self.cfg.uncalibrated.max(1e-9);
        self.raw_score = raw;
        if !self.warm {
            if raw < CAL_STILL {
                self.steady_since.get_or_insert(t_s);
            } else {
                self.steady_since = None;
            }
            let age = t_s - start;
            let steady = self
                .steady_since
                .is_some_and(|s| t_s - s >= self.cfg.steady_s);
            self.warm = (age >= self.cfg.warmup_s && steady) || age >= self.cfg.warmup_max_s;
            if !self.warm {
                self.score = 0.0;
                self.moving = false;
                if self.floor.is_none() {
                    self.calibrator.hold(WaitReason::WarmingUp);
                }
                return;
            }
        }
        self.score = match &self.floor {
            Some(f) => {
                let mut z = 0.0f32;
                let mut n = 0u32;
                for g in 0..b {
                    if f.used[g] {
                        z += self.spread[g] / f.sigma[g];
                        n += 1;
                    }
                }
                z / n.max(1) as f32 / self.cfg.threshold.max(1e-6)
            }
            None => raw,
        };
        if !self.score.is_finite() {
            self.score = 0.0;
        }
        if self.score > 1.0 || (self.moving && self.score > self.cfg.release) {
            self.moving = true;
            self.hold_until = t_s + self.cfg.hold_s;
        } else if self.moving && t_s > self.hold_until {
            self.moving = false;
        }
        self.learn(t_s);
    }

    /// Calibration, calm-time floor tracking and drift re-calibration.
    fn learn(&mut self, t_s: f64) {
        if self.cfg.calibration_s <= 0.0 {
            return;
        }
        let still = self.raw_score < CAL_STILL;
        let rate = self.rate_hz;
        let Some(floor) = &mut self.floor else {
            if still && !self.moving {
                if let Some(mut f) = self.calibrator.offer(&self.spread, &self.lp) {
                    f.rate_hz = rate;
                    self.floor = Some(f);
                    self.drift_since = None;
                }
            } else if self.moving {
                self.calibrator.hold(WaitReason::Motion);
            } else {
                self.calibrator.hold(WaitReason::Unsteady);
            }
            return;
        };
        if !self.moving && self.score < DRIFT_CALM {
            let eta = (1.0 / (DRIFT_TAU_S * rate)) as f32;
            for (s, v) in floor.sigma.iter_mut().zip(&self.spread) {
                *s *= if *v > *s { 1.0 + eta } else { 1.0 - eta };
            }
        }
        if self.moving && still {
            let since = *self.drift_since.get_or_insert(t_s);
            if t_s - since >= DRIFT_RECAL_S && self.recal.is_none() {
                let mut c = Calibrator::new(self.cfg.bands, self.cfg.keep_bands);
                c.set_needed(self.calibrator.needed());
                self.recal = Some(c);
            }
        } else {
            self.drift_since = None;
            if !self.moving {
                // Calm again under the learned floor: the drift resolved itself.
                self.recal = None;
            }
        }
        if let Some(c) = &mut self.recal {
            if still {
                if let Some(mut f) = c.offer(&self.spread, &self.lp) {
                    f.rate_hz = rate;
                    self.floor = Some(f);
                    self.recal = None;
                    self.drift_since = None;
                }
            } else {
                c.hold(WaitReason::Motion);
            }
        }
    }

    /// Someone is moving on this link.
    pub fn moving(&self) -> bool {
        self.moving
    }

    /// Score relative to the threshold in use (1.0 = threshold).
    pub fn score(&self) -> f32 {
        self.score
    }

    /// Motion on the documented 0..1 scale: below 0.05 whenever the link is not moving, at least
    /// 0.05 when it is, saturating for vigorous motion.
    pub fn motion_value(&self) -> f64 {
        let s = f64::from(self.score.max(0.0));
        if self.moving {
            let over = (s - f64::from(self.cfg.release)).max(0.0);
            (0.05 + 0.95 * (1.0 - (-over / 3.0).exp())).clamp(0.05, 1.0)
        } else {
            0.045 * s.min(1.0)
        }
    }

    /// The calibration state as plain data.
    pub fn calibration(&self) -> CalibrationStatus {
        let needed_s = self.cfg.calibration_s.max(0.0);
        if self.cfg.calibration_s <= 0.0 {
            return CalibrationStatus {
                phase: CalibrationPhase::Disabled,
                progress: 0.0,
                reason: None,
                recalibrating: false,
                needed_s,
            };
        }
        if self.floor.is_some() {
            return CalibrationStatus {
                phase: CalibrationPhase::Calibrated,
                progress: 1.0,
                reason: None,
                recalibrating: self.recal.is_some(),
                needed_s,
            };
        }
        let reason = self.calibrator.reason();
        let warming = matches!(reason, Some(WaitReason::WarmingUp | WaitReason::NoSignal));
        CalibrationStatus {
            phase: if warming {
                CalibrationPhase::WarmingUp
            } else {
                CalibrationPhase::Collecting
            },
            progress: self.calibrator.progress().clamp(0.0, 1.0),
            reason,
            recalibrating: false,
            needed_s,
        }
    }

    /// True until the floor is learned (the uncalibrated detector is in use).
    pub fn calibrating(&self) -> bool {
        self.calibration().calibrating()
    }

    /// The largest unsmoothed block value since the previous call, then forgets it (the fall
    /// monitor's impact measure).
    pub fn take_peak(&mut self) -> (f32, f32) {
        self.burst.take_peak()
    }
}

/// Median over bands of |value − state| (at most 64 bands).
fn median_abs_dev(v: &[f32], state: &[f32]) -> f32 {
    let n = v.len().min(state.len());
    if n == 0 {
        return 0.0;
    }
    let mut buf = [0.0f32; 64];
    let n = n.min(64);
    for i in 0..n {
        buf[i] = (v[i] - state[i]).abs();
    }
    let s = &mut buf[..n];
    s.sort_unstable_by(f32::total_cmp);
    s[n / 2]
}

/// The fall monitor's impact measure: the mean packet-to-packet amplitude change (relative to the
/// mean amplitude) over ~0.1 s blocks, largest block since the last read. Unsmoothed on purpose:
/// the spread that makes motion robust would flatten a 0.6 s impact into the walking before it.
#[derive(Debug, Clone)]
struct BurstMeter {
    prev: Vec<f32>,
    sum: Vec<f32>,
    block_len: usize,
    block_n: usize,
    peak: f32,
    /// The second-difference measure of the peak block (see [`BurstMeter::push`]).
    peak_d2: f32,
    last_packet: Vec<f32>,
    /// The packet before `last_packet`.
    packet_before: Vec<f32>,
    fast_sum: f32,
    fast2_sum: f32,
    fast2_n: u32,
    fast_n: u32,
}

impl Default for BurstMeter {
    fn default() -> Self {
        Self {
            prev: Vec::new(),
            sum: Vec::new(),
            block_len: 1,
            block_n: 0,
            peak: 0.0,
            peak_d2: 0.0,
            last_packet: Vec::new(),
            packet_before: Vec::new(),
            fast_sum: 0.0,
            fast2_sum: 0.0,
            fast2_n: 0,
            fast_n: 0,
        }
    }
}

impl BurstMeter {
    fn set_rate(&mut self, rate_hz: f64) {
        if rate_hz.is_finite() && rate_hz > 0.0 {
            self.block_len = ((rate_hz * BLOCK_S).round() as usize).clamp(1, 1000);
        }
    }

    fn break_continuity(&mut self) {
        self.prev.clear();
        self.last_packet.clear();
        self.packet_before.clear();
        self.fast_sum = 0.0;
        self.fast_n = 0;
        self.fast2_sum = 0.0;
        self.fast2_n = 0;
        self.block_n = 0;
        self.sum.iter_mut().for_each(|s| *s = 0.0);
    }

    fn push(&mut self, amp: &[f32]) {
        if self.sum.len() != amp.len() {
            self.sum.clear();
            self.sum.resize(amp.len(), 0.0);
            self.prev.clear();
            self.block_n = 0;
        }
        for (s, a) in self.sum.iter_mut().zip(amp) {
            *s += *a;
        }
        if self.last_packet.len() == amp.len() {
            let mut num = 0.0f32;
            let mut den = 0.0f32;
            let mut num2 = 0.0f32;
            let second = self.packet_before.len() == amp.len();
            if second {
                // One pass for both differences (the first's sums keep their order).
                for ((q, p), a) in self.packet_before.iter().zip(&self.last_packet).zip(amp) {
                    let ok = *a > 0.0 && *p > 0.0;
                    num += if ok { (a - p).abs() } else { 0.0 };
                    den += if ok { *a } else { 0.0 };
                    num2 += if ok && *q > 0.0 {
                        (a - 2.0 * p + q).abs()
                    } else {
                        0.0
                    };
                }
            } else {
                for (p, a) in self.last_packet.iter().zip(amp) {
                    if *a > 0.0 && *p > 0.0 {
                        num += (a - p).abs();
                        den += a;
                    }
                }
            }
            if den > 0.0 && num.is_finite() {
                self.fast_sum += num / den;
                self.fast_n += 1;
                if second && num2.is_finite() {
                    self.fast2_sum += num2 / den;
                    self.fast2_n += 1;
                }
            }
        }
        std::mem::swap(&mut self.packet_before, &mut self.last_packet);
        self.last_packet.clear();
        self.last_packet.extend_from_slice(amp);
        self.block_n += 1;
        if self.block_n < self.block_len {
            return;
        }
        let inv = 1.0 / self.block_n as f32;
        self.block_n = 0;
        if self.prev.len() != self.sum.len() {
            self.prev.clear();
            self.prev.extend(self.sum.iter().map(|s| s * inv));
            self.sum.iter_mut().for_each(|s| *s = 0.0);
            return;
        }
        let mut den = 0.0f32;
        for (s, p) in self.sum.iter_mut().zip(self.prev.iter_mut()) {
            let a = *s * inv;
            if a > 0.0 && *p > 0.0 {
                den += a;
            }
            *p = a;
            *s = 0.0;
        }
        if den <= 0.0 {
            return;
        }
        if self.fast_n > 0 {
            let v = self.fast_sum / self.fast_n as f32;
            if v > self.peak {
                self.peak = v;
                self.peak_d2 = if self.fast2_n > 0 {
                    self.fast2_sum / self.fast2_n as f32
                } else {
                    0.0
                };
            }
        }
        self.fast_sum = 0.0;
        self.fast_n = 0;
        self.fast2_sum = 0.0;
        self.fast2_n = 0;
    }

    fn take_peak(&mut self) -> (f32, f32) {
        (
            std::mem::take(&mut self.peak),
            std::mem::take(&mut self.peak_d2),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    /// 64 subcarriers of white noise around a fixed shape, plus a multipath wander at a walking
    /// pace (~1.4 Hz) while `moving`. Slower wander (breathing, drift) is what the detector is
    /// built to ignore, so it would not stand for motion here.
    fn run(md: &mut MotionDetector, rng: &mut ChaCha8Rng, t0: f64, n: usize, moving: bool) {
        let Ok(noise) = Normal::new(0.0f32, 0.03) else {
            return;
        };
        for i in 0..n {
            let t = t0 + i as f64 / 100.0;
            let a: Vec<f32> = (0..64)
                .map(|k| {
                    if k == 0 || (29..=35).contains(&k) {
                        return 0.0;
                    }
                    let m = if moving {
                        0.15 * (t as f32 * 9.0 + k as f32 * 0.2).sin()
                    } else {
                        0.0
                    };
                    (1.0 + 0.3 * (k as f32 * 0.1).cos() + m + noise.sample(rng)).max(0.01)
                })
                .collect();
            md.push(t, &a);
        }
    }

    #[test]
    fn calibrates_on_still_data_then_flags_motion_and_releases() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut md = MotionDetector::default();
        md.set_rate(100.0);
        run(&mut md, &mut rng, 0.0, 100, false);
        assert_eq!(md.calibration().phase, CalibrationPhase::WarmingUp);
        assert!(!md.moving());
        run(&mut md, &mut rng, 1.0, 600, false);
        assert_eq!(md.calibration().phase, CalibrationPhase::Calibrated);
        assert!(!md.moving() && md.motion_value() < 0.05);
        run(&mut md, &mut rng, 7.5, 100, true);
        assert!(md.moving() && md.motion_value() >= 0.05);
        run(&mut md, &mut rng, 8.5, 200, false);
        assert!(!md.moving(), "released after the hold");
    }

    #[test]
    fn refuses_to_calibrate_while_someone_moves() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut md = MotionDetector::default();
        md.set_rate(100.0);
        run(&mut md, &mut rng, 0.0, 1500, true);
        let c = md.calibration();
        assert!(c.calibrating(), "{c:?}");
        assert_eq!(c.reason, Some(WaitReason::Motion));
        assert!(md.moving(), "the uncalibrated detector sees the motion");
        run(&mut md, &mut rng, 15.0, 500, false);
        assert_eq!(md.calibration().phase, CalibrationPhase::Calibrated);
        run(&mut md, &mut rng, 20.0, 100, true);
        assert!(md.moving(), "motion after a still calibration");
    }

    #[test]
    fn glitch_packets_are_dropped() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut md = MotionDetector::default();
        md.set_rate(100.0);
        run(&mut md, &mut rng, 0.0, 600, false);
        assert!(!md.calibrating());
        for i in 0..20 {
            let t = 6.0 + i as f64;
            // One packet with another transmitter's shape every second.
            let glitch: Vec<f32> = (0..64)
                .map(|k| 0.2 + (k as f32 * 0.37).sin().abs())
                .collect();
            md.push(t, &glitch);
            run(&mut md, &mut rng, t + 0.01, 99, false);
            assert!(!md.moving(), "glitch at {t} read as motion");
        }
    }

    #[test]
    fn hostile_input_is_harmless() {
        let mut md = MotionDetector::default();
        md.set_rate(f64::NAN);
        md.set_rate(0.0);
        md.push(0.0, &[]);
        md.push(f64::NAN, &[1.0; 64]);
        md.push(0.1, &[f32::NAN; 64]);
        md.push(0.2, &[f32::INFINITY; 64]);
        md.push(0.3, &[1.0; 3]);
        md.push(0.4, &[1.0; 64]);
        md.push(0.5, &[0.0; 64]);
        md.set_rate(1e9);
        for i in 0..5000 {
            md.push(0.5 + i as f64 * 1e-3, &[1.0 + (i % 7) as f32 * 1e-3; 64]);
        }
        assert!(md.motion_value().is_finite());
        assert!(md.score().is_finite());
    }

    #[test]
    fn the_burst_measure_reads_the_frequency_of_the_fluctuation() {
        // A fluctuation at f Hz sampled at 100 packets/s: second over first difference is
        // 2·sin(π f / 100) (mean |Δ²| / mean |Δ| of a sinusoid), whatever its amplitude.
        for (f_hz, depth) in [(5.0f64, 0.05f64), (15.0, 0.2), (35.0, 0.02)] {
            let mut b = BurstMeter::default();
            b.set_rate(100.0);
            for i in 0..300 {
                let t = f64::from(i) / 100.0;
                let a: Vec<f32> = (0..32)
                    .map(|k| {
                        let ph = 0.3 * f64::from(k);
                        (1.0 + depth * (std::f64::consts::TAU * f_hz * t + ph).sin()) as f32
                    })
                    .collect();
                b.push(&a);
            }
            let (d1, d2) = b.take_peak();
            let want = 2.0 * (std::f64::consts::PI * f_hz / 100.0).sin();
            let got = f64::from(d2 / d1);
            assert!(
                (got - want).abs() < 0.1 * want,
                "{f_hz} Hz: {got} vs {want}"
            );
        }
    }
}
