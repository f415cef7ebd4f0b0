//! `local-agent eval motion DIR`: motion detection on labelled captures, ours next to the
//! ESPectre baseline ([`super::espectre`]) on the same packets.
//!
//! `DIR` is laid out like ESPectre's `micro-espectre/data`: `baseline/*.npz` (a quiet room),
//! `movement/*.npz` (someone moving) and optionally `test/*.npz` (quiet, then motion from
//! [`EvalOptions::onset_packet`]). The protocol:
//!
//! - **Pairs.** Each baseline capture is paired with the movement capture of the same chip whose
//!   `collected_at` is closest (the capture of the same session). The stream is the baseline
//!   minus its first 300 packets (the radio's gain-lock warm-up, as ESPectre's own tests skip
//!   them) followed by the movement capture, played as one stream of one link. Every packet is
//!   scored: quiet packets read as motion are false motion, movement packets read as motion are
//!   detections. Also scored per 1 s window (a window counts as motion when most of its packets
//!   do; only whole windows of each part).
//! - **Held-out calibration.** Each whole baseline capture from its first packet; the first half
//!   is for calibration, the second half is scored. The baseline calibrates on the first half
//!   after its 300-packet gain-lock skip; ours runs with its normal warm-up and online
//!   calibration, which the report shows finishing inside the first half.
//! - **Onset.** Each test capture from its first packet; false motion before the onset packet and
//!   the delay from it to the first motion.
//!
//! Ours is the whole [`Pipeline`] with its default configuration (what `replay` and the engine
//! run), scored by its `motion` output on the documented scale (moving when ≥ 0.05). It
//! calibrates itself online from the stream, so packets before its calibration completes are
//! scored too. The baseline is calibrated up front (NBVI on the first 750 quiet packets), as in
//! ESPectre's own evaluation.
//!
//! Thresholds of our detector were tuned on one part of the captures and the other part is
//! reported separately ([`EvalOptions::tune_chips`]): the split is by chip family, chosen before
//! tuning, so the held-out part holds chips the tuning never saw.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::espectre::{self, GAIN_LOCK_SKIP, Mvs};
use crate::sensing::csi::{CsiFrame, ParseError, parse_npz};
use crate::sensing::pipeline::{Pipeline, PipelineConfig};

/// Chips whose captures tuned our thresholds: the ESP32-C (RISC-V) family. The Xtensa chips
/// (ESP32, ESP32-S3) are held out.
pub const TUNE_CHIPS: [&str; 3] = ["c3", "c5", "c6"];
/// Packet where motion starts in ESPectre's test capture (its data README).
pub const ONSET_PACKET: usize = 3040;
/// Reported motion at or above this is "moving" (the documented scale of `motion`).
pub const MOVING: f64 = 0.05;

/// Options of one evaluation.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Chips (lower case) of the tuning part; every other chip is held out.
    pub tune_chips: Vec<String>,
    /// Packet index where motion starts in each test capture.
    pub onset_packet: usize,
    /// Our pipeline's configuration.
    pub pipeline: PipelineConfig,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            tune_chips: TUNE_CHIPS.iter().map(|s| (*s).to_string()).collect(),
            onset_packet: ONSET_PACKET,
            pipeline: PipelineConfig::default(),
        }
    }
}

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot decode {path}: {source}")]
    Parse { path: PathBuf, source: ParseError },
    #[error("{path} records no chip or no collected_at, so it cannot be paired")]
    Unpairable { path: PathBuf },
    #[error("{0} holds no baseline/*.npz with a movement/*.npz of the same chip")]
    NoPairs(PathBuf),
}

/// One labelled capture.
#[derive(Debug, Clone)]
pub struct Capture {
    pub name: String,
    pub chip: String,
    /// `collected_at` in seconds since 1970 (local time as recorded; only differences matter).
    pub collected_at: f64,
    pub gain_locked: bool,
    pub rate_hz: f64,
    pub frames: Vec<CsiFrame>,
}

impl Capture {
    fn amplitudes(&self, range: std::ops::Range<usize>) -> Vec<[f64; espectre::SUBCARRIERS]> {
        self.frames[range]
            .iter()
            .map(|f| espectre::amplitudes(&f.csi))
            .collect()
    }
}

/// The captures of a data folder.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub baseline: Vec<Capture>,
    pub movement: Vec<Capture>,
    pub test: Vec<Capture>,
}

/// Loads `dir/{baseline,movement,test}/*.npz` (missing folders are empty), sorted by name.
pub fn load(dir: &Path) -> Result<Dataset, EvalError> {
    Ok(Dataset {
        baseline: load_folder(&dir.join("baseline"))?,
        movement: load_folder(&dir.join("movement"))?,
        test: load_folder(&dir.join("test"))?,
    })
}

fn load_folder(dir: &Path) -> Result<Vec<Capture>, EvalError> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("npz")))
        .collect();
    paths.sort();
    paths.iter().map(|p| load_capture(p)).collect()
}

/// Loads one `.npz` capture.
pub fn load_capture(path: &Path) -> Result<Capture, EvalError> {
    let bytes = std::fs::read(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rec = parse_npz(&bytes, "eval").map_err(|source| EvalError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let unpairable = || EvalError::Unpairable {
        path: path.to_path_buf(),
    };
    let chip = rec.meta.chip.clone().ok_or_else(unpairable)?;
    let collected_at = rec
        .meta
        .collected_at
        .as_deref()
        .and_then(parse_iso_seconds)
        .ok_or_else(unpairable)?;
    Ok(Capture {
        name,
        chip: chip.to_ascii_lowercase(),
        collected_at,
        // ESPectre's rule: files without the field were recorded with the gain locked.
        gain_locked: rec.meta.gain_locked.unwrap_or(true),
        rate_hz: rec.meta.rate_hz,
        frames: rec.frames,
    })
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]` → seconds since 1970-01-01 (no time zone).
pub fn parse_iso_seconds(s: &str) -> Option<f64> {
    let (date, time) = s.trim().split_once(['T', ' '])?;
    let mut d = date.split('-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: i64 = d.next()?.parse().ok()?;
    let day: i64 = d.next()?.parse().ok()?;
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let mut t = time.split(':');
    let hh: f64 = t.next()?.parse().ok()?;
    let mm: f64 = t.next()?.parse().ok()?;
    let ss: f64 = t.next().unwrap_or("0").parse().ok()?;
    if t.next().is_some() || !(0.0..24.0).contains(&hh) || !(0.0..60.0).contains(&mm) {
        return None;
    }
    // Days from the civil date (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days as f64 * 86_400.0 + hh * 3600.0 + mm * 60.0 + ss;
    secs.is_finite().then_some(secs)
}

/// For each baseline, the index of the movement capture of the same chip closest in time.
pub fn pair(ds: &Dataset) -> Vec<(usize, usize)> {
    ds.baseline
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            ds.movement
                .iter()
                .enumerate()
                .filter(|(_, m)| m.chip == b.chip)
                .min_by(|(_, x), (_, y)| {
                    (x.collected_at - b.collected_at)
                        .abs()
                        .total_cmp(&(y.collected_at - b.collected_at).abs())
                })
                .map(|(j, _)| (i, j))
        })
        .collect()
}

/// Packets and 1 s windows of one detector on one stream (or a pooled set of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Score {
    pub quiet: usize,
    pub false_motion: usize,
    pub moving: usize,
    pub detected: usize,
    pub quiet_windows: usize,
    pub quiet_windows_flagged: usize,
    pub moving_windows: usize,
    pub moving_windows_flagged: usize,
}

impl Score {
    pub fn add(&mut self, o: &Score) {
        self.quiet += o.quiet;
        self.false_motion += o.false_motion;
        self.moving += o.moving;
        self.detected += o.detected;
        self.quiet_windows += o.quiet_windows;
        self.quiet_windows_flagged += o.quiet_windows_flagged;
        self.moving_windows += o.moving_windows;
        self.moving_windows_flagged += o.moving_windows_flagged;
    }

    pub fn recall(&self) -> f64 {
        ratio(self.detected, self.moving)
    }

    pub fn false_rate(&self) -> f64 {
        ratio(self.false_motion, self.quiet)
    }

    pub fn f1(&self) -> f64 {
        let p = ratio(self.detected, self.detected + self.false_motion);
        let r = self.recall();
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// One pair, both detectors.
#[derive(Debug, Clone, Serialize)]
pub struct PairResult {
    pub baseline: String,
    pub movement: String,
    pub chip: String,
    pub tuned: bool,
    pub ours: Score,
    pub peer: Score,
    /// Seconds into the quiet stream when our calibration completed.
    pub ours_calibrated_s: Option<f64>,
    pub peer_band: Vec<usize>,
    pub peer_threshold: f64,
}

/// One baseline capture of the held-out calibration variant.
#[derive(Debug, Clone, Serialize)]
pub struct HeldOutResult {
    pub baseline: String,
    pub chip: String,
    pub tuned: bool,
    /// Packets scored (the second half).
    pub scored: usize,
    pub ours_false: usize,
    pub peer_false: usize,
    /// Seconds of the first half.
    pub half_s: f64,
    pub ours_calibrated_s: Option<f64>,
}

/// One whole baseline capture from its first packet (the warm-up included), ours only.
#[derive(Debug, Clone, Serialize)]
pub struct WholeQuietResult {
    pub baseline: String,
    pub chip: String,
    pub tuned: bool,
    pub packets: usize,
    pub false_motion: usize,
    pub calibrated_s: Option<f64>,
}

/// One test capture.
#[derive(Debug, Clone, Serialize)]
pub struct OnsetResult {
    pub capture: String,
    pub chip: String,
    pub onset_packet: usize,
    pub ours_false_before: usize,
    pub peer_false_before: usize,
    /// Seconds from the onset packet to the first packet read as motion.
    pub ours_onset_s: Option<f64>,
    pub peer_onset_s: Option<f64>,
    pub quiet_packets: usize,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct MotionReport {
    pub dir: String,
    pub tune_chips: Vec<String>,
    pub pairs: Vec<PairResult>,
    pub held_out: Vec<HeldOutResult>,
    pub whole_quiet: Vec<WholeQuietResult>,
    pub onsets: Vec<OnsetResult>,
}

/// Which captures a pooled figure covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Tuned,
    HeldOut,
    All,
}

impl Part {
    fn covers(self, tuned: bool) -> bool {
        match self {
            Part::Tuned => tuned,
            Part::HeldOut => !tuned,
            Part::All => true,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Part::Tuned => "tuned part",
            Part::HeldOut => "held-out part",
            Part::All => "all",
        }
    }
}

impl MotionReport {
    /// Pooled (ours, peer) over a part.
    pub fn pooled(&self, part: Part) -> (Score, Score) {
        let (mut a, mut b) = (Score::default(), Score::default());
        for p in self.pairs.iter().filter(|p| part.covers(p.tuned)) {
            a.add(&p.ours);
            b.add(&p.peer);
        }
        (a, b)
    }

    /// Pooled held-out calibration false motion: (ours false, peer false, scored).
    pub fn held_out_pooled(&self, part: Part) -> (usize, usize, usize) {
        self.held_out
            .iter()
            .filter(|h| part.covers(h.tuned))
            .fold((0, 0, 0), |(a, b, n), h| {
                (a + h.ours_false, b + h.peer_false, n + h.scored)
            })
    }

    /// The tables for people.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let tuned: Vec<&str> = self.tune_chips.iter().map(String::as_str).collect();
        let _ = writeln!(
            o,
            "Motion on {}: {} pairs (baseline minus its first {GAIN_LOCK_SKIP} packets, then the movement capture of the same chip closest in collected_at), scored per packet.",
            self.dir,
            self.pairs.len()
        );
        let _ = writeln!(
            o,
            "ours = local-agent's pipeline, default configuration, calibrating online; peer = ESPectre MVS + NBVI (published defaults, implemented here).\nTuned on chips {}; the others are held out.\n",
            tuned.join(", ")
        );
        let _ = writeln!(
            o,
            "{:<64} {:>4}  {:>13} {:>13}  {:>13} {:>13}  {:>6}",
            "pair", "part", "ours false", "peer false", "ours recall", "peer recall", "cal s"
        );
        for p in &self.pairs {
            let _ = writeln!(
                o,
                "{:<64} {:>4}  {:>13} {:>13}  {:>13} {:>13}  {:>6}",
                format!("{} + {}", p.baseline, p.movement),
                if p.tuned { "tune" } else { "held" },
                format!("{}/{}", p.ours.false_motion, p.ours.quiet),
                format!("{}/{}", p.peer.false_motion, p.peer.quiet),
                format!("{}/{}", p.ours.detected, p.ours.moving),
                format!("{}/{}", p.peer.detected, p.peer.moving),
                p.ours_calibrated_s
                    .map_or_else(|| "never".to_string(), |s| format!("{s:.2}")),
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "| per packet | part | quiet | moving | recall | false motion | F1 | 1 s windows moving | 1 s windows quiet |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|");
        for part in [Part::Tuned, Part::HeldOut, Part::All] {
            let (ours, peer) = self.pooled(part);
            for (who, s) in [("ours", ours), ("ESPectre MVS + NBVI", peer)] {
                let _ = writeln!(
                    o,
                    "| {who} | {} | {} | {} | {:.1}% | {:.2}% | {:.1}% | {}/{} | {}/{} |",
                    part.label(),
                    s.quiet,
                    s.moving,
                    100.0 * s.recall(),
                    100.0 * s.false_rate(),
                    100.0 * s.f1(),
                    s.moving_windows_flagged,
                    s.moving_windows,
                    s.quiet_windows_flagged,
                    s.quiet_windows
                );
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Held-out calibration (each whole baseline capture: calibrate on its first half, score the second half):"
        );
        for h in &self.held_out {
            let _ = writeln!(
                o,
                "  {:<44} {:>4}  ours {:>4}/{:<4} (calibrated at {} of a {:.2} s half)  peer {:>4}/{}",
                h.baseline,
                if h.tuned { "tune" } else { "held" },
                h.ours_false,
                h.scored,
                h.ours_calibrated_s
                    .map_or_else(|| "never".to_string(), |s| format!("{s:.2} s")),
                h.half_s,
                h.peer_false,
                h.scored
            );
        }
        for part in [Part::Tuned, Part::HeldOut, Part::All] {
            let (a, b, n) = self.held_out_pooled(part);
            let _ = writeln!(
                o,
                "  {:<14} false motion: ours {:.2}% ({a}/{n}), peer {:.2}% ({b}/{n})",
                part.label(),
                100.0 * ratio(a, n),
                100.0 * ratio(b, n)
            );
        }
        if !self.whole_quiet.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(
                o,
                "Whole baseline captures from their first packet (ours; the radio's warm-up included):"
            );
            let mut line = String::new();
            for w in &self.whole_quiet {
                let _ = write!(
                    line,
                    "  {} {}/{} false, calibrated at {};",
                    w.baseline,
                    w.false_motion,
                    w.packets,
                    w.calibrated_s
                        .map_or_else(|| "never".to_string(), |s| format!("{s:.2} s"))
                );
                let _ = writeln!(o, "{line}");
                line.clear();
            }
        }
        if !self.onsets.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(o, "Onset (test captures from their first packet):");
        }
        for t in &self.onsets {
            let s = |v: Option<f64>| v.map_or_else(|| "never".to_string(), |x| format!("{x:.2} s"));
            let _ = writeln!(
                o,
                "  {} (motion from packet {}): ours {} after the onset, {} false-motion packets of {} before it; peer {}, {} false",
                t.capture,
                t.onset_packet,
                s(t.ours_onset_s),
                t.ours_false_before,
                t.quiet_packets,
                s(t.peer_onset_s),
                t.peer_false_before
            );
        }
        o
    }
}

/// Runs our pipeline over `frames` as one stream of one link; per packet, whether it read as
/// motion, and the stream time calibration completed.
pub fn run_ours(frames: &[CsiFrame], config: &PipelineConfig) -> (Vec<bool>, Option<f64>) {
    let mut p = Pipeline::new(config.clone());
    let t0 = frames.first().map_or(0.0, |f| f.t_s);
    let mut calibrated = None;
    let moving = frames
        .iter()
        .map(|f| {
            p.push(f);
            let e = p.estimates();
            if calibrated.is_none() && !e.calibrating {
                calibrated = Some(f.t_s - t0);
            }
            e.motion >= MOVING
        })
        .collect();
    (moving, calibrated)
}

/// Re-times captures into one stream of one link: each part continues one packet period after
/// the previous one ended.
pub fn chain(parts: &[(&Capture, std::ops::Range<usize>)]) -> Vec<CsiFrame> {
    let mut out = Vec::new();
    let mut t = 0.0;
    for (c, r) in parts {
        let period = 1.0 / c.rate_hz.max(1e-3);
        for f in &c.frames[r.clone()] {
            let mut g = f.clone();
            g.node_id = "eval".to_string();
            g.t_s = t;
            t += period;
            out.push(g);
        }
    }
    out
}

/// Scores per-packet decisions of one part (quiet or moving) of a stream.
fn score_part(decisions: &[bool], rate_hz: f64, quiet: bool, s: &mut Score) {
    let hits = decisions.iter().filter(|d| **d).count();
    let per_window = rate_hz.max(1e-3);
    let n = decisions.len();
    let whole = (n as f64 / per_window).floor() as usize;
    let mut flagged = 0;
    for w in 0..whole {
        let lo = (w as f64 * per_window).ceil() as usize;
        let hi = (((w + 1) as f64 * per_window).ceil() as usize).min(n);
        let inside = &decisions[lo..hi];
        if inside.iter().filter(|d| **d).count() * 2 > inside.len() {
            flagged += 1;
        }
    }
    if quiet {
        s.quiet += n;
        s.false_motion += hits;
        s.quiet_windows += whole;
        s.quiet_windows_flagged += flagged;
    } else {
        s.moving += n;
        s.detected += hits;
        s.moving_windows += whole;
        s.moving_windows_flagged += flagged;
    }
}

fn run_peer(
    calibration: &[[f64; espectre::SUBCARRIERS]],
    stream: &[[f64; espectre::SUBCARRIERS]],
    cv: bool,
) -> (Vec<bool>, Vec<usize>, f64) {
    let mut mvs = match espectre::calibrate(calibration, cv) {
        Some(c) => Mvs::new(c.band, c.threshold, cv),
        None => Mvs::uncalibrated(cv),
    };
    let (band, thr) = (mvs.band().to_vec(), mvs.threshold());
    (stream.iter().map(|a| mvs.push(a)).collect(), band, thr)
}

/// Runs the whole protocol over a loaded dataset.
pub fn evaluate(dir: &str, ds: &Dataset, opts: &EvalOptions) -> Result<MotionReport, EvalError> {
    let pairs = pair(ds);
    if pairs.is_empty() {
        return Err(EvalError::NoPairs(PathBuf::from(dir)));
    }
    let tuned = |chip: &str| opts.tune_chips.iter().any(|c| c.eq_ignore_ascii_case(chip));
    let mut out = MotionReport {
        dir: dir.to_string(),
        tune_chips: opts.tune_chips.clone(),
        pairs: Vec::new(),
        held_out: Vec::new(),
        whole_quiet: Vec::new(),
        onsets: Vec::new(),
    };
    for (bi, mi) in pairs {
        let (b, m) = (&ds.baseline[bi], &ds.movement[mi]);
        let skip = GAIN_LOCK_SKIP.min(b.frames.len());
        let nq = b.frames.len() - skip;
        let nm = m.frames.len();
        let stream = chain(&[(b, skip..b.frames.len()), (m, 0..nm)]);
        let (ours, cal) = run_ours(&stream, &opts.pipeline);
        let cv = !b.gain_locked;
        let quiet_amp = b.amplitudes(skip..b.frames.len());
        let mut amp = quiet_amp.clone();
        amp.extend(m.amplitudes(0..nm));
        let (peer, band, thr) = run_peer(&quiet_amp, &amp, cv);
        let (mut so, mut sp) = (Score::default(), Score::default());
        score_part(&ours[..nq], b.rate_hz, true, &mut so);
        score_part(&ours[nq..], m.rate_hz, false, &mut so);
        score_part(&peer[..nq], b.rate_hz, true, &mut sp);
        score_part(&peer[nq..], m.rate_hz, false, &mut sp);
        out.pairs.push(PairResult {
            baseline: b.name.clone(),
            movement: m.name.clone(),
            chip: b.chip.clone(),
            tuned: tuned(&b.chip),
            ours: so,
            peer: sp,
            ours_calibrated_s: cal,
            peer_band: band,
            peer_threshold: thr,
        });
    }
    for b in &ds.baseline {
        let n = b.frames.len();
        let half = n / 2;
        if half == 0 {
            continue;
        }
        let stream = chain(&[(b, 0..n)]);
        let (ours, cal) = run_ours(&stream, &opts.pipeline);
        let amp = b.amplitudes(0..n);
        let skip = if half > GAIN_LOCK_SKIP {
            GAIN_LOCK_SKIP
        } else {
            0
        };
        let (peer, _, _) = run_peer(&amp[skip..half], &amp, !b.gain_locked);
        out.held_out.push(HeldOutResult {
            baseline: b.name.clone(),
            chip: b.chip.clone(),
            tuned: tuned(&b.chip),
            scored: n - half,
            ours_false: ours[half..].iter().filter(|x| **x).count(),
            peer_false: peer[half..].iter().filter(|x| **x).count(),
            half_s: half as f64 / b.rate_hz,
            ours_calibrated_s: cal,
        });
    }
    for b in &ds.baseline {
        let stream = chain(&[(b, 0..b.frames.len())]);
        let (ours, cal) = run_ours(&stream, &opts.pipeline);
        out.whole_quiet.push(WholeQuietResult {
            baseline: b.name.clone(),
            chip: b.chip.clone(),
            tuned: tuned(&b.chip),
            packets: ours.len(),
            false_motion: ours.iter().filter(|x| **x).count(),
            calibrated_s: cal,
        });
    }
    for t in &ds.test {
        let n = t.frames.len();
        let onset = opts.onset_packet.min(n);
        let stream = chain(&[(t, 0..n)]);
        let (ours, _) = run_ours(&stream, &opts.pipeline);
        let amp = t.amplitudes(0..n);
        let skip = GAIN_LOCK_SKIP.min(onset);
        let (peer, _, _) = run_peer(&amp[skip..onset], &amp, !t.gain_locked);
        let first = |d: &[bool]| {
            d[onset..]
                .iter()
                .position(|x| *x)
                .map(|i| i as f64 / t.rate_hz)
        };
        out.onsets.push(OnsetResult {
            capture: t.name.clone(),
            chip: t.chip.clone(),
            onset_packet: onset,
            ours_false_before: ours[..onset].iter().filter(|x| **x).count(),
            peer_false_before: peer[..onset].iter().filter(|x| **x).count(),
            ours_onset_s: first(&ours),
            peer_onset_s: first(&peer),
            quiet_packets: onset,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_parse_to_comparable_seconds() {
        let a = parse_iso_seconds("2026-03-29T13:03:03.633347").unwrap_or(0.0);
        let b = parse_iso_seconds("2026-03-29T13:03:21.134696").unwrap_or(0.0);
        assert!((b - a - 17.501349).abs() < 1e-4);
        let c = parse_iso_seconds("1970-01-02T00:00:00").unwrap_or(0.0);
        assert_eq!(c, 86_400.0);
        let leap = parse_iso_seconds("2024-03-01T00:00:00").unwrap_or(0.0)
            - parse_iso_seconds("2024-02-28T00:00:00").unwrap_or(0.0);
        assert_eq!(leap, 2.0 * 86_400.0);
        for bad in [
            "",
            "2026-13-01T00:00:00",
            "2026-01-01",
            "x-y-zT1:2:3",
            "2026-01-01T25:00:00",
        ] {
            assert!(parse_iso_seconds(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn windows_count_whole_seconds_and_majorities() {
        let mut s = Score::default();
        let mut d = vec![false; 250];
        d[100..160].iter_mut().for_each(|x| *x = true);
        score_part(&d, 100.0, false, &mut s);
        assert_eq!((s.moving, s.detected), (250, 60));
        assert_eq!((s.moving_windows, s.moving_windows_flagged), (2, 1));
        let mut q = Score::default();
        score_part(&[true; 99], 100.0, true, &mut q);
        assert_eq!((q.quiet_windows, q.false_motion), (0, 99));
        assert!((s.recall() - 0.24).abs() < 1e-12);
        assert_eq!(Score::default().f1(), 0.0);
    }
}
