//! Reading Atheros CSI Tool captures from disk: the CSV export folder as published (three logs
//! read in lock-step, bounded lines) and the binary log (streamed record by record). Parsing
//! itself is in [`crate::sensing::csi::atheros`]; here are only files, framing and counting.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::sensing::csi::atheros::{
    self, EXPORT_COLUMNS, Endian, MAX_RECORD_BYTES, frame_from_export, parse_export_row,
    parse_status_line,
};
use crate::sensing::csi::{MAX_LINE_BYTES, ParseError, ParsedFrame};

use super::lines::{LineRead, read_bounded_line};

/// One record's outcome for replay's counters.
pub(crate) enum Item {
    Frame(ParsedFrame),
    Rejected(ParseError),
    /// A read error ends the stream.
    Io(io::Error),
}

/// Suffixes of the three logs of a CSV export.
const REAL: &str = "_csi_real_log.csv";
const IMAG: &str = "_csi_imag_log.csv";
const STATUS: &str = "_csi_status_log.csv";

/// The files of one CSV export capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFiles {
    pub real: PathBuf,
    pub imag: PathBuf,
    pub status: PathBuf,
    /// `<prefix>.csv`, when present.
    pub settings: Option<PathBuf>,
    /// Used as the frames' `node_id`: the folder's name (`BPM06`), else the prefix.
    pub name: String,
}

/// Finds the capture in `path`: a folder holding exactly one `<prefix>_csi_real_log.csv` with its
/// imaginary and status logs, or one of those three files itself. `None` when `path` is neither.
pub fn find_export(path: &Path) -> io::Result<Option<ExportFiles>> {
    let (dir, prefix) = if path.is_dir() {
        let mut prefixes = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(p) = name.strip_suffix(REAL) {
                prefixes.push(p.to_string());
            }
        }
        prefixes.sort();
        match prefixes.as_slice() {
            [] => return Ok(None),
            [one] => (path.to_path_buf(), one.clone()),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the folder holds {} captures ({}); name one of their _csi_real_log.csv files",
                        prefixes.len(),
                        prefixes.join(", ")
                    ),
                ));
            }
        }
    } else {
        let Some(file) = path.file_name().map(|f| f.to_string_lossy().into_owned()) else {
            return Ok(None);
        };
        let Some(prefix) = [REAL, IMAG, STATUS]
            .iter()
            .find_map(|s| file.strip_suffix(s))
            .map(str::to_string)
        else {
            return Ok(None);
        };
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        (dir, prefix)
    };
    let at = |suffix: &str| dir.join(format!("{prefix}{suffix}"));
    let settings = at(".csv");
    let name = std::fs::canonicalize(&dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| prefix.clone());
    Ok(Some(ExportFiles {
        real: at(REAL),
        imag: at(IMAG),
        status: at(STATUS),
        settings: settings.is_file().then_some(settings),
        name,
    }))
}

/// The three logs of a CSV export read row by row in lock-step.
pub(crate) struct ExportStream {
    name: String,
    real: Box<dyn BufRead + Send>,
    imag: Box<dyn BufRead + Send>,
    status: Box<dyn BufRead + Send>,
    lines: [Vec<u8>; 3],
    re: Vec<i16>,
    im: Vec<i16>,
    done: bool,
    settings: Vec<(String, String)>,
}

impl ExportStream {
    pub(crate) fn open(files: &ExportFiles) -> io::Result<Self> {
        let open = |p: &Path| -> io::Result<Box<dyn BufRead + Send>> {
            Ok(Box::new(BufReader::new(File::open(p)?)))
        };
        let settings = match &files.settings {
            Some(p) => {
                let mut text = String::new();
                File::open(p)?.take(64 * 1024).read_to_string(&mut text)?;
                atheros::parse_settings(&text)
            }
            None => Vec::new(),
        };
        Ok(Self::from_readers(
            &files.name,
            open(&files.real)?,
            open(&files.imag)?,
            open(&files.status)?,
            settings,
        ))
    }

    /// From any three readers (fuzzing and tests).
    pub(crate) fn from_readers(
        name: &str,
        real: Box<dyn BufRead + Send>,
        imag: Box<dyn BufRead + Send>,
        status: Box<dyn BufRead + Send>,
        settings: Vec<(String, String)>,
    ) -> Self {
        Self {
            name: name.to_string(),
            real,
            imag,
            status,
            lines: [Vec::new(), Vec::new(), Vec::new()],
            re: Vec::with_capacity(EXPORT_COLUMNS),
            im: Vec::with_capacity(EXPORT_COLUMNS),
            done: false,
            settings,
        }
    }

    pub(crate) fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// The next packet; `None` once any of the three logs ends (a shorter log ends the capture:
    /// its rows cannot be paired beyond that).
    pub(crate) fn next_item(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        let mut reads = [LineRead::Eof, LineRead::Eof, LineRead::Eof];
        let readers: [&mut Box<dyn BufRead + Send>; 3] =
            [&mut self.status, &mut self.real, &mut self.imag];
        for ((r, line), out) in readers
            .into_iter()
            .zip(self.lines.iter_mut())
            .zip(reads.iter_mut())
        {
            // Blank lines carry no packet in any of the logs; skip them per file.
            loop {
                match read_bounded_line(r.as_mut(), line, MAX_LINE_BYTES) {
                    Ok(LineRead::Line) if line.iter().all(u8::is_ascii_whitespace) => continue,
                    Ok(l) => {
                        *out = l;
                        break;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Item::Io(e));
                    }
                }
            }
        }
        if reads.contains(&LineRead::Eof) {
            self.done = true;
            return None;
        }
        let text = |i: usize, reads: &[LineRead; 3], lines: &[Vec<u8>; 3]| match reads[i] {
            LineRead::TooLong(len) => Err(ParseError::TooLong {
                len,
                max: MAX_LINE_BYTES,
            }),
            _ => std::str::from_utf8(&lines[i])
                .map(str::to_string)
                .map_err(|_| ParseError::InvalidUtf8),
        };
        let outcome = (|| {
            let status = parse_status_line(&text(0, &reads, &self.lines)?)?;
            parse_export_row(&text(1, &reads, &self.lines)?, &mut self.re)?;
            parse_export_row(&text(2, &reads, &self.lines)?, &mut self.im)?;
            frame_from_export(&status, &self.re, &self.im, &self.name)
        })();
        Some(match outcome {
            Ok(p) => Item::Frame(p),
            Err(e) => Item::Rejected(e),
        })
    }
}

/// A binary log streamed record by record.
pub(crate) struct DatStream {
    name: String,
    reader: Box<dyn Read + Send>,
    endian: Endian,
    body: Vec<u8>,
    done: bool,
}

impl DatStream {
    /// `head` is the file's first bytes, already used to detect the byte order; the rest follows
    /// from `reader`.
    pub(crate) fn new(name: &str, reader: Box<dyn Read + Send>, endian: Endian) -> Self {
        Self {
            name: name.to_string(),
            reader,
            endian,
            body: Vec::with_capacity(MAX_RECORD_BYTES),
            done: false,
        }
    }

    pub(crate) fn next_item(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        let mut len = [0u8; 2];
        match read_full(self.reader.as_mut(), &mut len) {
            Ok(2) => {}
            Ok(_) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Item::Io(e));
            }
        }
        let len = usize::from(match self.endian {
            Endian::Little => u16::from_le_bytes(len),
            Endian::Big => u16::from_be_bytes(len),
        });
        self.body.clear();
        self.body.resize(len, 0);
        match read_full(self.reader.as_mut(), &mut self.body) {
            Ok(n) if n == len => {}
            Ok(n) => {
                // A capture cut off mid-record (the recorder was killed): the tail is lost.
                self.done = true;
                return Some(Item::Rejected(ParseError::Truncated {
                    needed: len,
                    got: n,
                }));
            }
            Err(e) => {
                self.done = true;
                return Some(Item::Io(e));
            }
        }
        Some(
            match atheros::parse_record(&self.body, self.endian, &self.name) {
                Ok(p) => Item::Frame(p),
                Err(e) => Item::Rejected(e),
            },
        )
    }
}

/// Reads until `buf` is full or the end; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
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
