//! `local-agent replay FILE --report`: a recording processed offline, as fast as possible, into
//! per-window estimates and a summary, for accuracy work.
//!
//! It drives the same [`Pipeline`] as the engine, synchronously, so the numbers are the ones the
//! engine would serve for that recording, minus the wall-clock pacing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::sensing::csi::CsiFrame;
use crate::sensing::pipeline::{Estimates, Pipeline, PipelineConfig};
use crate::sensing::source::replay::{ReplayFormat, ReplaySource};

/// Estimates sampled at the end of one window of source time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowRow {
    /// End of the window, seconds since the recording's first frame.
    pub t_s: f64,
    pub frames: u64,
    pub present: bool,
    pub motion: f64,
    pub breathing_bpm: Option<f64>,
    pub breathing_strength: Option<f64>,
    pub heart_bpm: Option<f64>,
    pub heart_strength: Option<f64>,
    pub range_peak_m: Option<f64>,
    pub rate_hz: Option<f64>,
}

/// Where one of several recordings played as one stream starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSpan {
    pub name: String,
    /// Seconds since the first frame of the whole stream at which this file's first frame plays.
    pub start_s: f64,
    pub frames: u64,
}

/// Totals over the whole recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Records read from the file (lines, or packets of an `.npz`).
    pub records: u64,
    pub frames: u64,
    /// Valid records without CSI (vitals or feature lines, serial log lines).
    pub skipped: u64,
    pub skipped_by_kind: BTreeMap<String, u64>,
    /// Malformed records.
    pub rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// A read error that ended the file early.
    pub io_error: Option<String>,
    /// Source seconds from the first to the last frame.
    pub duration_s: f64,
    /// Share of frames after which the pipeline reported someone present.
    pub fraction_present: Option<f64>,
    pub windows: usize,
    pub windows_with_breathing: usize,
    pub windows_with_heart: usize,
    pub windows_with_range: usize,
    /// The recordings in play order (one entry for a single file).
    pub files: Vec<FileSpan>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub window_s: f64,
    pub windows: Vec<WindowRow>,
    pub summary: Summary,
}

/// Plays a whole recording through a fresh pipeline; the summary carries the reader's counts of
/// skipped and rejected records.
pub fn evaluate_replay(source: &mut ReplaySource, window_s: f64, config: PipelineConfig) -> Report {
    evaluate_replay_chain(std::slice::from_mut(source), window_s, config)
}

/// Plays several recordings back to back as one stream through one pipeline: each file's frames
/// are shifted to continue one frame period after the previous file's last frame, and `.npz`
/// captures (which record no node identity) all play as the first `.npz` file's node, so
/// consecutive captures of one device form one link (a quiet capture, then a movement capture).
pub fn evaluate_replay_chain(
    sources: &mut [ReplaySource],
    window_s: f64,
    config: PipelineConfig,
) -> Report {
    let npz_node = sources
        .iter()
        .find(|s| s.format() == ReplayFormat::Npz)
        .map(|s| s.name().to_string());
    let mut chain = Chain {
        sources,
        idx: 0,
        npz_node,
        offset: None,
        prev_raw: None,
        last_out: None,
        step: 0.01,
        origin: None,
        spans: Vec::new(),
    };
    let mut report = evaluate(&mut chain, window_s, config);
    let spans = std::mem::take(&mut chain.spans);
    let s = &mut report.summary;
    s.files = spans;
    s.records = 0;
    s.skipped = 0;
    s.rejected = 0;
    for src in chain.sources.iter() {
        let stats = src.stats();
        s.records += stats.records;
        s.skipped += stats.skipped;
        for (k, v) in &stats.skipped_by_kind {
            *s.skipped_by_kind.entry((*k).to_string()).or_default() += *v;
        }
        s.rejected += stats.rejected();
        for (k, v) in &stats.rejected_by_reason {
            *s.rejected_by_reason.entry((*k).to_string()).or_default() += *v;
        }
        if s.io_error.is_none() {
            s.io_error = stats.io_error.clone();
        }
    }
    report
}

/// Frames of several recordings as one re-timed stream (see [`evaluate_replay_chain`]).
struct Chain<'a> {
    sources: &'a mut [ReplaySource],
    idx: usize,
    npz_node: Option<String>,
    /// Shift applied to the current file's times.
    offset: Option<f64>,
    prev_raw: Option<f64>,
    last_out: Option<f64>,
    /// Latest positive frame step, used to space files.
    step: f64,
    origin: Option<f64>,
    spans: Vec<FileSpan>,
}

impl Iterator for Chain<'_> {
    type Item = CsiFrame;

    fn next(&mut self) -> Option<CsiFrame> {
        loop {
            let src = self.sources.get_mut(self.idx)?;
            let Some(mut f) = src.next_frame() else {
                self.idx += 1;
                self.offset = None;
                self.prev_raw = None;
                continue;
            };
            if src.format() == ReplayFormat::Npz
                && let Some(node) = &self.npz_node
            {
                f.node_id.clone_from(node);
            }
            if f.t_s.is_finite() {
                if let Some(p) = self.prev_raw {
                    let d = f.t_s - p;
                    if d > 0.0 && d < 1.0 {
                        self.step = d;
                    }
                }
                self.prev_raw = Some(f.t_s);
                let start = match self.last_out {
                    Some(last) => last + self.step - f.t_s,
                    None => 0.0,
                };
                let offset = *self.offset.get_or_insert(start);
                f.t_s += offset;
                self.last_out = Some(self.last_out.map_or(f.t_s, |l| l.max(f.t_s)));
            }
            let origin = *self.origin.get_or_insert(f.t_s);
            let name = src.name().to_string();
            let current = self.spans.len() == self.idx + 1;
            match self.spans.last_mut() {
                Some(span) if current => span.frames += 1,
                _ => {
                    while self.spans.len() < self.idx {
                        // A file that yielded no frame.
                        let n = self.sources[self.spans.len()].name().to_string();
                        self.spans.push(FileSpan {
                            name: n,
                            start_s: f.t_s - origin,
                            frames: 0,
                        });
                    }
                    self.spans.push(FileSpan {
                        name,
                        start_s: f.t_s - origin,
                        frames: 1,
                    });
                }
            }
            return Some(f);
        }
    }
}

/// Runs `frames` through a fresh pipeline, sampling the estimates every `window_s` seconds of
/// source time. A non-positive or non-finite window falls back to 10 s.
pub fn evaluate(
    frames: impl IntoIterator<Item = CsiFrame>,
    window_s: f64,
    config: PipelineConfig,
) -> Report {
    // Frames are never closer than a microsecond; a finer window would only make edges
    // unrepresentable on long streams.
    let window_s = if window_s.is_finite() && window_s > 0.0 {
        window_s.max(1e-6)
    } else {
        10.0
    };
    let mut pipeline = Pipeline::new(config);
    let mut windows = Vec::new();
    let (mut count, mut present_frames, mut window_frames) = (0_u64, 0_u64, 0_u64);
    let mut first_t: Option<f64> = None;
    let mut last_t = 0.0_f64;
    let mut next_edge = window_s;

    for frame in frames {
        let t0 = *first_t.get_or_insert(frame.t_s);
        let t = frame.t_s - t0;
        // Rows are emitted before the frame that crosses an edge, so each row covers its window
        // (with a window shorter than the frame spacing, one row per frame).
        if t.is_finite() && t >= next_edge {
            if window_frames > 0 {
                windows.push(row(next_edge, window_frames, &pipeline.estimates()));
            }
            window_frames = 0;
            next_edge = ((t / window_s).floor() + 1.0) * window_s;
            while next_edge <= t {
                next_edge += window_s;
            }
        }
        pipeline.push(&frame);
        count += 1;
        window_frames += 1;
        if t.is_finite() {
            last_t = last_t.max(t);
        }
        if pipeline.estimates().present {
            present_frames += 1;
        }
    }
    if window_frames > 0 {
        windows.push(row(last_t, window_frames, &pipeline.estimates()));
    }

    let summary = Summary {
        records: count,
        frames: count,
        skipped: 0,
        skipped_by_kind: BTreeMap::new(),
        rejected: 0,
        rejected_by_reason: BTreeMap::new(),
        io_error: None,
        duration_s: last_t,
        fraction_present: (count > 0).then(|| present_frames as f64 / count as f64),
        windows: windows.len(),
        windows_with_breathing: windows.iter().filter(|w| w.breathing_bpm.is_some()).count(),
        windows_with_heart: windows.iter().filter(|w| w.heart_bpm.is_some()).count(),
        windows_with_range: windows.iter().filter(|w| w.range_peak_m.is_some()).count(),
        files: Vec::new(),
    };
    Report {
        window_s,
        windows,
        summary,
    }
}

fn row(t_s: f64, frames: u64, e: &Estimates) -> WindowRow {
    WindowRow {
        t_s,
        frames,
        present: e.present,
        motion: e.motion,
        breathing_bpm: e.breathing_bpm,
        breathing_strength: e.breathing_strength,
        heart_bpm: e.heart_bpm,
        heart_strength: e.heart_strength,
        range_peak_m: e.range_peak_m,
        rate_hz: e.rate_hz,
    }
}

fn opt(v: Option<f64>, precision: usize) -> String {
    match v {
        Some(x) => format!("{x:.precision$}"),
        None => "-".to_string(),
    }
}

impl Report {
    /// A fixed-width table plus the summary, for people.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>8} {:>6} {:>7} {:>6} {:>9} {:>9} {:>7} {:>7}",
            "t_s", "frames", "present", "motion", "breath", "heart", "range_m", "rate_hz"
        );
        for w in &self.windows {
            let _ = writeln!(
                out,
                "{:>8.1} {:>6} {:>7} {:>6.3} {:>9} {:>9} {:>7} {:>7}",
                w.t_s,
                w.frames,
                if w.present { "yes" } else { "no" },
                w.motion,
                opt(w.breathing_bpm, 1),
                opt(w.heart_bpm, 1),
                opt(w.range_peak_m, 2),
                opt(w.rate_hz, 1),
            );
        }
        let s = &self.summary;
        let _ = writeln!(out);
        let _ = writeln!(out, "records:           {}", s.records);
        let _ = writeln!(out, "frames:            {}", s.frames);
        let _ = writeln!(out, "duration:          {:.1} s", s.duration_s);
        let _ = writeln!(out, "skipped records:   {}", s.skipped);
        for (kind, n) in &s.skipped_by_kind {
            let _ = writeln!(out, "  {n:>8}  {kind}");
        }
        let _ = writeln!(out, "rejected records:  {}", s.rejected);
        for (reason, n) in &s.rejected_by_reason {
            let _ = writeln!(out, "  {n:>8}  {reason}");
        }
        if let Some(e) = &s.io_error {
            let _ = writeln!(out, "read error:        {e}");
        }
        let _ = writeln!(out, "fraction present:  {}", opt(s.fraction_present, 3));
        let _ = writeln!(
            out,
            "vitals emitted:    breathing in {}/{} windows, heart in {}/{}, range in {}/{}",
            s.windows_with_breathing,
            s.windows,
            s.windows_with_heart,
            s.windows,
            s.windows_with_range,
            s.windows
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensing::csi::WireFormat;

    fn frame(t_s: f64) -> CsiFrame {
        CsiFrame {
            node_id: "n".to_string(),
            t_s,
            rssi_dbm: None,
            channel: None,
            format: WireFormat::Simulator,
            csi: Vec::new(),
            shape: Default::default(),
        }
    }

    #[test]
    fn frames_are_split_into_windows_of_source_time() {
        let frames: Vec<CsiFrame> = (0..250).map(|i| frame(100.0 + i as f64 * 0.1)).collect();
        let report = evaluate(frames, 10.0, PipelineConfig::default());
        assert_eq!(report.summary.frames, 250);
        assert_eq!(report.windows.len(), 3);
        assert_eq!(report.windows.iter().map(|w| w.frames).sum::<u64>(), 250);
        assert!(report.render_text().contains("frames:            250"));
    }

    #[test]
    fn rejected_records_are_counted_by_reason() {
        let text = "not a csi line\nCSI_DATA,broken\n\nanother bad line\n";
        let mut source = ReplaySource::from_text_reader(std::io::Cursor::new(text), "t");
        let report = evaluate_replay(&mut source, 5.0, PipelineConfig::default());
        assert_eq!(report.summary.frames, 0);
        let dropped = report.summary.skipped + report.summary.rejected;
        assert_eq!(dropped, report.summary.records);
        assert!(report.summary.records >= 3);
    }

    #[test]
    fn empty_input_has_no_fraction() {
        let report = evaluate(Vec::new(), 0.0, PipelineConfig::default());
        assert_eq!(report.window_s, 10.0);
        assert_eq!(report.summary.fraction_present, None);
        assert!(report.windows.is_empty());
    }
}
