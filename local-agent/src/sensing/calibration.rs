//! Empty-room calibration of one link's motion noise floor, and its state as plain data.
//!
//! The motion detector (see `motion`) measures, per band of subcarriers, how much the smoothed
//! amplitude moves within a short window. What a still room reads on that measure differs 5–10×
//! between links (chip, distance, interference), so each link learns its own floor: the median
//! of each band's short-window spread over `calibration_s` of still data. Scores are then read
//! in units of that floor, and one threshold fits every link.
//!
//! Calibration refuses data that is not still. It only collects while the uncalibrated detector
//! reads no motion and the link is past its warm-up, starts over when motion shows, and at the
//! end checks that the collected spread is stationary (its 95th percentile within
//! [`STATIONARITY`] × its median); a window that fails drops its older half and keeps collecting.
//! Someone walking about at boot is therefore never learned as the empty room (ESPectre learns
//! it, and then misses most later motion).
//!
//! [`CalibrationStatus`] is the state as plain data for the API and the live view: the phase,
//! progress in 0..1, and the reason calibration is not progressing.

use serde::Serialize;

/// Highest ratio of the 95th percentile to the median of a calibration window's spread. Quiet
/// captures read 1.2–1.4; someone moving reads far above.
pub const STATIONARITY: f32 = 1.6;

/// Where a link's calibration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationPhase {
    /// No usable frame yet, or the link's first seconds (radio and gain still settling).
    #[default]
    WarmingUp,
    /// Collecting still data; the uncalibrated detector is in use meanwhile.
    Collecting,
    /// The noise floor is learned. A re-calibration may run in the background (see
    /// [`CalibrationStatus::recalibrating`]).
    Calibrated,
    /// Calibration is switched off (`calibration_s = 0`): the uncalibrated detector is used.
    Disabled,
}

/// Why calibration is not progressing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The link's first seconds are skipped while the radio settles.
    WarmingUp,
    /// Someone is moving: calibration waits for the room to be still.
    Motion,
    /// The collected data was not stationary (something changed during it); collecting again.
    Unsteady,
    /// No frames with usable subcarriers arrived yet.
    NoSignal,
}

impl WaitReason {
    /// A sentence for people.
    pub fn describe(self) -> &'static str {
        match self {
            WaitReason::WarmingUp => "the link started moments ago; its first seconds are skipped",
            WaitReason::Motion => "someone is moving; calibration needs a still room",
            WaitReason::Unsteady => {
                "the signal changed while calibrating (someone moved, or interference); collecting again"
            }
            WaitReason::NoSignal => "no usable CSI frames yet",
        }
    }
}

/// A link's calibration state as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct CalibrationStatus {
    pub phase: CalibrationPhase,
    /// 0..1: share of the still data collected (1 once calibrated).
    pub progress: f64,
    /// Why it is not progressing, if it is not.
    pub reason: Option<WaitReason>,
    /// A background re-calibration is running after drift; the learned floor stays in use.
    pub recalibrating: bool,
    /// Seconds of still data needed.
    pub needed_s: f64,
}

impl CalibrationStatus {
    /// Calibration has not finished (the uncalibrated detector is in use).
    pub fn calibrating(&self) -> bool {
        matches!(
            self.phase,
            CalibrationPhase::WarmingUp | CalibrationPhase::Collecting
        )
    }
}

/// A learned noise floor: per band, the median short-window spread of a still room, the band's
/// mean level, and whether the band is used.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseFloor {
    pub sigma: Vec<f32>,
    pub level: Vec<f32>,
    pub used: Vec<bool>,
    /// Packet rate the floor was learned at: the spread depends on it.
    pub rate_hz: f64,
}

/// Collects still data and learns a [`NoiseFloor`]. Samples are band spreads (one value per
/// band) for one packet each.
#[derive(Debug, Clone)]
pub struct Calibrator {
    bands: usize,
    keep: usize,
    needed: usize,
    samples: Vec<f32>,
    levels: Vec<f64>,
    reason: Option<WaitReason>,
    scratch: Vec<f32>,
}

impl Calibrator {
    /// `keep` of the `bands` bands are used: those with the lowest spread relative to their level
    /// (the NBVI idea at band level: the most stable parts of the spectrum carry motion best).
    pub fn new(bands: usize, keep: usize) -> Self {
        Self {
            bands: bands.max(1),
            keep: keep.clamp(1, bands.max(1)),
            needed: 0,
            samples: Vec::new(),
            levels: Vec::new(),
            reason: Some(WaitReason::NoSignal),
            scratch: Vec::new(),
        }
    }

    /// Sets the number of still packets needed (from seconds and the measured rate).
    pub fn set_needed(&mut self, packets: usize) {
        self.needed = packets.max(8);
        let cap = self.needed * self.bands;
        if self.samples.len() > cap {
            let extra = self.samples.len() - cap;
            self.samples.drain(..extra);
        }
    }

    pub fn needed(&self) -> usize {
        self.needed
    }

    /// Share of the needed data collected.
    pub fn progress(&self) -> f64 {
        if self.needed == 0 {
            return 0.0;
        }
        (self.samples.len() / self.bands) as f64 / self.needed as f64
    }

    pub fn reason(&self) -> Option<WaitReason> {
        self.reason
    }

    /// Forgets everything collected.
    pub fn clear(&mut self, reason: Option<WaitReason>) {
        self.samples.clear();
        self.levels.clear();
        self.reason = reason;
    }

    /// Notes that no sample could be offered, and why. Motion or an unsteady signal starts the
    /// collection over: what came before it may already have been a person.
    pub fn hold(&mut self, reason: WaitReason) {
        if matches!(reason, WaitReason::Motion | WaitReason::Unsteady) {
            self.samples.clear();
            self.levels.clear();
        }
        self.reason = Some(reason);
    }

    /// Offers one still packet's band spreads and band levels. Returns the floor once enough
    /// stationary data was collected.
    pub fn offer(&mut self, spread: &[f32], level: &[f32]) -> Option<NoiseFloor> {
        if spread.len() != self.bands || level.len() != self.bands || self.needed == 0 {
            return None;
        }
        if spread.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return None;
        }
        self.reason = None;
        self.samples.extend_from_slice(spread);
        if self.levels.len() != self.bands {
            self.levels = vec![0.0; self.bands];
        }
        for (l, v) in self.levels.iter_mut().zip(level) {
            *l += f64::from(*v);
        }
        let n = self.samples.len() / self.bands;
        if n < self.needed {
            return None;
        }
        let floor = self.judge(n);
        if floor.is_none() {
            // Not stationary: keep the newer half and go on collecting.
            let half = (n / 2) * self.bands;
            self.samples.drain(..half);
            let keep = (n - n / 2) as f64 / n as f64;
            self.levels.iter_mut().for_each(|l| *l *= keep);
            self.reason = Some(WaitReason::Unsteady);
        } else {
            self.samples.clear();
            self.levels.clear();
        }
        floor
    }

    fn judge(&mut self, n: usize) -> Option<NoiseFloor> {
        let b = self.bands;
        let mut sigma = vec![0.0f32; b];
        for (g, s) in sigma.iter_mut().enumerate() {
            self.scratch.clear();
            self.scratch
                .extend(self.samples.iter().skip(g).step_by(b).copied());
            *s = median(&mut self.scratch);
        }
        if sigma.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return None;
        }
        let level: Vec<f32> = self.levels.iter().map(|l| (*l / n as f64) as f32).collect();
        // Bands ranked by relative spread; the `keep` steadiest are used.
        let mut order: Vec<usize> = (0..b).collect();
        let rel = |g: usize| sigma[g] / level[g].abs().max(1e-6);
        order.sort_by(|&x, &y| rel(x).total_cmp(&rel(y)));
        let mut used = vec![false; b];
        for &g in order.iter().take(self.keep) {
            used[g] = true;
        }
        // Stationarity of the score the detector will compute.
        self.scratch.clear();
        let kept = self.keep as f32;
        for row in self.samples.chunks_exact(b) {
            let z: f32 = row
                .iter()
                .zip(&sigma)
                .zip(&used)
                .filter(|(_, u)| **u)
                .map(|((v, s), _)| v / s)
                .sum::<f32>()
                / kept;
            self.scratch.push(z);
        }
        let med = median(&mut self.scratch);
        let p95 = percentile_sorted(&self.scratch, 0.95);
        if !(med > 0.0 && p95 <= STATIONARITY * med) {
            return None;
        }
        Some(NoiseFloor {
            sigma,
            level,
            used,
            rate_hz: 0.0,
        })
    }
}

/// Median (sorts `v`); 0 when empty.
fn median(v: &mut [f32]) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Nearest-rank percentile of an already sorted slice.
fn percentile_sorted(v: &[f32], p: f32) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() - 1) as f32 * p).round() as usize;
    v[i.min(v.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(c: &mut Calibrator, n: usize, f: impl Fn(usize) -> [f32; 4]) -> Option<NoiseFloor> {
        let mut out = None;
        for i in 0..n {
            if let Some(fl) = c.offer(&f(i), &[1.0, 1.0, 2.0, 1.0]) {
                out = Some(fl);
            }
        }
        out
    }

    #[test]
    fn learns_the_median_spread_and_keeps_the_steadiest_bands() {
        let mut c = Calibrator::new(4, 3);
        c.set_needed(100);
        let fl = feed(&mut c, 100, |i| {
            let w = 1.0 + 0.05 * (i % 7) as f32;
            [0.01 * w, 0.02 * w, 0.01 * w, 0.05 * w]
        });
        let Some(fl) = fl else { panic!("no floor") };
        assert!((fl.sigma[0] - 0.0115).abs() < 0.002, "{:?}", fl.sigma);
        // Band 3 has the highest spread relative to its level; band 2 is steadier than band 1
        // because its level is twice as high.
        assert_eq!(fl.used, vec![true, true, true, false]);
        assert_eq!(c.progress(), 0.0);
    }

    #[test]
    fn refuses_a_window_with_bursts_of_motion() {
        let mut c = Calibrator::new(4, 4);
        c.set_needed(100);
        // One packet in five jumps 3x: someone moving in and out of the link.
        let fl = feed(&mut c, 100, |i| {
            let w = if i % 5 == 0 { 3.0 } else { 1.0 };
            [0.01 * w; 4]
        });
        assert!(fl.is_none());
        assert_eq!(c.reason(), Some(WaitReason::Unsteady));
        assert!((c.progress() - 0.5).abs() < 0.02, "keeps the newer half");
        // Once the bursts left the window, it completes.
        let fl = feed(&mut c, 150, |_| [0.01; 4]);
        assert!(fl.is_some());
    }

    #[test]
    fn motion_starts_the_collection_over() {
        let mut c = Calibrator::new(4, 4);
        c.set_needed(100);
        assert!(feed(&mut c, 80, |_| [0.01; 4]).is_none());
        c.hold(WaitReason::Motion);
        assert_eq!(c.progress(), 0.0);
        assert_eq!(c.reason(), Some(WaitReason::Motion));
        assert!(feed(&mut c, 99, |_| [0.01; 4]).is_none());
        assert!(feed(&mut c, 1, |_| [0.01; 4]).is_some());
    }

    #[test]
    fn ignores_malformed_samples() {
        let mut c = Calibrator::new(4, 4);
        c.set_needed(10);
        assert!(c.offer(&[f32::NAN; 4], &[1.0; 4]).is_none());
        assert!(c.offer(&[0.01; 3], &[1.0; 4]).is_none());
        assert_eq!(c.progress(), 0.0);
    }
}
