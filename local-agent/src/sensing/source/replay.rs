//! Replay of recorded CSI files: ESPectre `.npz`, RuView `.csi.jsonl`, esp-csi and
//! ESP32-CSI-Tool serial captures, and Atheros CSI Tool captures (the binary log, or the CSV
//! export folder as published).
//!
//! Recordings are messy (serial captures lose bytes, interleave boot logs, recorders have
//! bugs), so replay never stops on a bad record: it skips it and counts why, and the counts
//! are exposed so a run can report how much of a file was actually used. Text files are
//! streamed line by line with a bounded line buffer, so a multi-gigabyte capture, or one that
//! lost its newlines, costs constant memory.
//!
//! Frames come out in file order with `t_s` on the source clock. Pacing (sleeping between
//! frames) is the caller's job; [`ReplaySource::peek_t_s`] gives the next frame's time without
//! consuming it.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::sensing::csi::atheros::{Endian, detect_endian};
use crate::sensing::csi::{
    CsiFrame, FrameMeta, MAX_LINE_BYTES, NpzMeta, ParseError, ParsedFrame, Record, WireFormat,
    parse_npz, parse_text_line,
};

use super::atheros::{DatStream, ExportStream, Item, find_export};
pub(crate) use super::lines::{LineRead, read_bounded_line};

/// Largest `.npz` replay loads; it is decoded in memory. The largest bundled file is 506 KB.
pub const MAX_NPZ_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// esp-csi and ESP32-CSI-Tool `local_timestamp` is a u32 microsecond counter: it wraps every
/// 4294.97 s, which replay undoes so long captures keep a monotonic clock.
const U32_MICROS_WRAP_S: f64 = 4_294_967_296.0 / 1e6;

/// What replay did with a file so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReplayStats {
    /// Records read: non-blank lines for text files, packets for `.npz`.
    pub records: u64,
    /// Frames yielded.
    pub frames: u64,
    /// Valid records without CSI (vitals, feature lines, serial log lines).
    pub skipped: u64,
    /// `skipped`, by [`crate::sensing::csi::SkipKind::as_str`].
    pub skipped_by_kind: BTreeMap<&'static str, u64>,
    /// Malformed records, by [`ParseError::reason`].
    pub rejected_by_reason: BTreeMap<&'static str, u64>,
    /// A read error that ended the replay early, if any.
    pub io_error: Option<String>,
}

impl ReplayStats {
    /// Malformed records in total.
    pub fn rejected(&self) -> u64 {
        self.rejected_by_reason.values().sum()
    }
}

/// How a file was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayFormat {
    /// ESPectre zip of NPY arrays.
    Npz,
    /// Line-based: RuView JSONL, esp-csi or ESP32-CSI-Tool, detected per line.
    Text,
    /// Atheros CSI Tool CSV export (a folder of three logs).
    AtherosExport,
    /// Atheros CSI Tool binary log.
    AtherosDat,
}

/// Why a file could not be replayed at all. Bad records inside a file are not errors; they
/// are counted in [`ReplayStats`].
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is {len} bytes, above the {max}-byte limit for .npz replay")]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    #[error("cannot decode {path}: {source}")]
    Parse { path: PathBuf, source: ParseError },
}

enum Input {
    Npz {
        frames: std::vec::IntoIter<CsiFrame>,
        meta: Box<NpzMeta>,
    },
    Text {
        reader: Box<dyn BufRead + Send>,
        line: Vec<u8>,
        line_no: u64,
        done: bool,
    },
    AtherosExport(Box<ExportStream>),
    AtherosDat(Box<DatStream>),
}

/// A recorded file played back as frames; see the module docs.
pub struct ReplaySource {
    name: String,
    input: Input,
    stats: ReplayStats,
    peeked: Option<ParsedFrame>,
    /// Per node: last raw µs-counter time and the wrap offset added so far.
    clock: HashMap<String, (f64, f64)>,
}

impl std::fmt::Debug for ReplaySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySource")
            .field("name", &self.name)
            .field("format", &self.format())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl ReplaySource {
    /// Opens a recording. A folder (or one of its logs) holding an Atheros CSI Tool CSV export
    /// is read as that capture; zip content (or a `.npz` extension) is decoded as ESPectre
    /// `.npz`; a file whose first record reads as an Atheros CSI Tool binary record is streamed
    /// as one; anything else is streamed as text.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let io_err = |source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(files) = find_export(path).map_err(io_err)? {
            let stream = ExportStream::open(&files).map_err(io_err)?;
            return Ok(Self::new(
                &files.name,
                Input::AtherosExport(Box::new(stream)),
            ));
        }
        let mut file = File::open(path).map_err(io_err)?;
        let mut head = [0u8; 64];
        let got = read_up_to(&mut file, &mut head).map_err(io_err)?;
        let magic = &head[..got.min(4)];
        let is_zip = got >= 4 && magic == b"PK\x03\x04";
        let npz_ext = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npz"));
        // Reopen rather than seek so the text path also works on non-seekable files (FIFOs).
        let file = File::open(path).map_err(io_err)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        if !is_zip
            && !npz_ext
            && let Some(endian) = detect_endian(&head[..got])
        {
            return Ok(Self::from_atheros_reader(Box::new(file), endian, &name));
        }
        if is_zip || npz_ext {
            let len = file.metadata().map_err(io_err)?.len();
            if len > MAX_NPZ_FILE_BYTES {
                return Err(ReplayError::TooLarge {
                    path: path.to_path_buf(),
                    len,
                    max: MAX_NPZ_FILE_BYTES,
                });
            }
            let mut bytes = Vec::new();
            file.take(MAX_NPZ_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(io_err)?;
            Self::from_npz_bytes(&bytes, &name).map_err(|source| ReplayError::Parse {
                path: path.to_path_buf(),
                source,
            })
        } else {
            Ok(Self::from_text_reader(BufReader::new(file), &name))
        }
    }

    /// Replays an `.npz` already in memory; `name` becomes every frame's `node_id`.
    pub fn from_npz_bytes(bytes: &[u8], name: &str) -> Result<Self, ParseError> {
        let rec = parse_npz(bytes, name)?;
        Ok(Self::new(
            name,
            Input::Npz {
                frames: rec.frames.into_iter(),
                meta: Box::new(rec.meta),
            },
        ))
    }

    /// Replays line-based records from any reader (a file, stdin, a decompressor).
    pub fn from_text_reader(reader: impl BufRead + Send + 'static, name: &str) -> Self {
        Self::new(
            name,
            Input::Text {
                reader: Box::new(reader),
                line: Vec::new(),
                line_no: 0,
                done: false,
            },
        )
    }

    /// Replays an Atheros CSI Tool binary log from any reader, in the given byte order.
    pub fn from_atheros_reader(reader: Box<dyn Read + Send>, endian: Endian, name: &str) -> Self {
        Self::new(
            name,
            Input::AtherosDat(Box::new(DatStream::new(name, reader, endian))),
        )
    }

    /// Replays an Atheros CSI Tool binary log held in memory, detecting its byte order; `None`
    /// when its first record is not an Atheros record.
    pub fn from_atheros_bytes(bytes: Vec<u8>, name: &str) -> Option<Self> {
        let endian = detect_endian(&bytes)?;
        Some(Self::from_atheros_reader(
            Box::new(io::Cursor::new(bytes)),
            endian,
            name,
        ))
    }

    /// Replays an Atheros CSI Tool CSV export from its three logs (status, real, imaginary).
    pub fn from_atheros_export(
        status: impl BufRead + Send + 'static,
        real: impl BufRead + Send + 'static,
        imag: impl BufRead + Send + 'static,
        name: &str,
    ) -> Self {
        let stream = ExportStream::from_readers(
            name,
            Box::new(real),
            Box::new(imag),
            Box::new(status),
            Vec::new(),
        );
        Self::new(name, Input::AtherosExport(Box::new(stream)))
    }

    /// The `key,value` settings of an Atheros CSV export (`config0001.csv`: `bpm`, `msgFreq`,
    /// ...); empty for other formats.
    pub fn settings(&self) -> &[(String, String)] {
        match &self.input {
            Input::AtherosExport(s) => s.settings(),
            _ => &[],
        }
    }

    fn new(name: &str, input: Input) -> Self {
        Self {
            name: name.to_string(),
            input,
            stats: ReplayStats::default(),
            peeked: None,
            clock: HashMap::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn format(&self) -> ReplayFormat {
        match self.input {
            Input::Npz { .. } => ReplayFormat::Npz,
            Input::Text { .. } => ReplayFormat::Text,
            Input::AtherosExport(_) => ReplayFormat::AtherosExport,
            Input::AtherosDat(_) => ReplayFormat::AtherosDat,
        }
    }

    /// Capture metadata for `.npz` replays (chip, label, duration, derived rate).
    pub fn npz_meta(&self) -> Option<&NpzMeta> {
        match &self.input {
            Input::Npz { meta, .. } => Some(meta),
            _ => None,
        }
    }

    /// Counts so far; final once the source is exhausted.
    pub fn stats(&self) -> &ReplayStats {
        &self.stats
    }

    /// The next frame and its format-specific metadata, or `None` at the end of the file.
    pub fn next_parsed(&mut self) -> Option<ParsedFrame> {
        if let Some(p) = self.peeked.take() {
            return Some(p);
        }
        self.read_next()
    }

    /// The next frame, or `None` at the end of the file.
    pub fn next_frame(&mut self) -> Option<CsiFrame> {
        self.next_parsed().map(|p| p.frame)
    }

    /// The next frame's `t_s` without consuming it, for pacing.
    pub fn peek_t_s(&mut self) -> Option<f64> {
        if self.peeked.is_none() {
            self.peeked = self.read_next();
        }
        self.peeked.as_ref().map(|p| p.frame.t_s)
    }

    fn read_next(&mut self) -> Option<ParsedFrame> {
        let parsed = match &mut self.input {
            Input::AtherosExport(_) | Input::AtherosDat(_) => loop {
                let item = match &mut self.input {
                    Input::AtherosExport(s) => s.next_item(),
                    Input::AtherosDat(s) => s.next_item(),
                    _ => None,
                }?;
                match item {
                    Item::Frame(p) => {
                        self.stats.records += 1;
                        break p;
                    }
                    Item::Rejected(e) => {
                        self.stats.records += 1;
                        tracing::debug!(file = %self.name, error = %e, "replay skipped a malformed record");
                        *self.stats.rejected_by_reason.entry(e.reason()).or_default() += 1;
                    }
                    Item::Io(e) => {
                        tracing::warn!(file = %self.name, error = %e, "replay stopped on a read error");
                        self.stats.io_error = Some(e.to_string());
                        return None;
                    }
                }
            },
            Input::Npz { frames, meta } => {
                let frame = frames.next()?;
                self.stats.records += 1;
                ParsedFrame {
                    frame,
                    meta: FrameMeta {
                        first_word_invalid: meta.first_word_invalid,
                        layout: meta.layout,
                        declared_len: Some(2 * meta.num_subcarriers),
                        ..FrameMeta::default()
                    },
                }
            }
            Input::Text {
                reader,
                line,
                line_no,
                done,
            } => loop {
                if *done {
                    return None;
                }
                let read = match read_bounded_line(reader.as_mut(), line, MAX_LINE_BYTES) {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(file = %self.name, line = *line_no + 1, error = %e, "replay stopped on a read error");
                        self.stats.io_error = Some(e.to_string());
                        *done = true;
                        return None;
                    }
                };
                *line_no += 1;
                let outcome = match read {
                    LineRead::Eof => {
                        *done = true;
                        return None;
                    }
                    LineRead::TooLong(len) => Err(ParseError::TooLong {
                        len,
                        max: MAX_LINE_BYTES,
                    }),
                    LineRead::Line => match std::str::from_utf8(line) {
                        Ok(s) if s.trim().is_empty() => continue,
                        Ok(s) => parse_text_line(s),
                        Err(_) => Err(ParseError::InvalidUtf8),
                    },
                };
                self.stats.records += 1;
                match outcome {
                    Ok(Record::Frame(p)) => break p,
                    Ok(Record::Skipped(kind)) => {
                        self.stats.skipped += 1;
                        *self.stats.skipped_by_kind.entry(kind.as_str()).or_default() += 1;
                    }
                    Err(e) => {
                        tracing::debug!(file = %self.name, line = *line_no, error = %e, "replay skipped a malformed record");
                        *self.stats.rejected_by_reason.entry(e.reason()).or_default() += 1;
                    }
                }
            },
        };
        self.stats.frames += 1;
        Some(self.unwrap_clock(parsed))
    }

    /// Undoes the u32 µs counter wrap of serial formats, per node.
    fn unwrap_clock(&mut self, mut p: ParsedFrame) -> ParsedFrame {
        if !matches!(
            p.frame.format,
            WireFormat::EspCsi | WireFormat::Esp32CsiTool
        ) {
            return p;
        }
        let raw = p.frame.t_s;
        let entry = self
            .clock
            .entry(p.frame.node_id.clone())
            .or_insert((raw, 0.0));
        let (last_raw, offset) = *entry;
        let offset = if last_raw - raw > U32_MICROS_WRAP_S / 2.0 {
            offset + U32_MICROS_WRAP_S
        } else {
            offset
        };
        *entry = (raw, offset);
        p.frame.t_s = raw + offset;
        p
    }
}

impl Iterator for ReplaySource {
    type Item = CsiFrame;

    fn next(&mut self) -> Option<CsiFrame> {
        self.next_frame()
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<LineRead> {
        let mut r = input;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let l = read_bounded_line(&mut r, &mut buf, max).unwrap();
            if l == LineRead::Eof {
                return out;
            }
            if l == LineRead::Line {
                assert!(buf.len() <= max);
            }
            out.push(l);
        }
    }

    #[test]
    fn bounded_reader_splits_and_drops_long_lines() {
        assert_eq!(
            lines(b"ab\r\ncdef\n\nxyz", 3),
            vec![
                LineRead::Line,
                LineRead::TooLong(4),
                LineRead::Line,
                LineRead::Line
            ]
        );
        assert_eq!(lines(b"", 3), vec![]);
        assert_eq!(lines(b"abc\r\n", 3), vec![LineRead::Line]);
    }

    #[test]
    fn bounded_reader_works_across_small_buffers() {
        let data = b"0123456789\nab\n".to_vec();
        let mut r = BufReader::with_capacity(3, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).unwrap(),
            LineRead::TooLong(10)
        );
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).unwrap(),
            LineRead::Line
        );
        assert_eq!(buf, b"ab");
    }

    #[test]
    fn replay_can_move_to_a_worker_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<ReplaySource>();
    }

    #[test]
    fn serial_clock_wrap_is_undone_per_node() {
        let line = |mac: &str, us: u64| {
            format!(
                "CSI_DATA,1,{mac},-50,11,0,0,0,0,0,0,0,0,0,-90,0,6,0,{us},0,0,0,4,0,\"[1,2,3,4]\"\n"
            )
        };
        let text = [
            line("aa:aa:aa:aa:aa:aa", 4_294_000_000),
            line("bb:bb:bb:bb:bb:bb", 1_000),
            line("aa:aa:aa:aa:aa:aa", 500_000),
            line("bb:bb:bb:bb:bb:bb", 2_000),
        ]
        .concat();
        let ts: Vec<f64> = ReplaySource::from_text_reader(io::Cursor::new(text), "t")
            .map(|f| f.t_s)
            .collect();
        assert!((ts[0] - 4294.0).abs() < 1e-9);
        assert!((ts[1] - 0.001).abs() < 1e-9);
        assert!((ts[2] - (0.5 + U32_MICROS_WRAP_S)).abs() < 1e-9);
        assert!((ts[3] - 0.002).abs() < 1e-9);
    }
}
