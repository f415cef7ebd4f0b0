//! Helpers shared by the text formats, and what one text record holds ([`Record`]).

use std::str::FromStr;

use super::{MAX_BUFFER_BYTES, MAX_LINE_BYTES, ParseError, ParsedFrame, check_buffer_len};

/// Trims the line terminator and enforces the length bound before any field is looked at.
pub(crate) fn prepare_line(line: &str) -> Result<&str, ParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ParseError::TooLong {
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(line)
}

/// Parses one numeric field; surrounding spaces are tolerated because some serial consoles pad.
pub(crate) fn num<T: FromStr>(s: &str, field: &'static str) -> Result<T, ParseError> {
    s.trim()
        .parse::<T>()
        .map_err(|_| ParseError::invalid(field, s))
}

/// Parses a `0`/`1` flag.
pub(crate) fn flag(s: &str, field: &'static str) -> Result<bool, ParseError> {
    match s.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(ParseError::invalid(field, s)),
    }
}

/// Validates a MAC address and normalises it to lowercase, so the same node maps to one
/// `node_id` whichever tool printed it.
pub(crate) fn mac(s: &str) -> Result<String, ParseError> {
    let s = s.trim();
    let parts: Vec<&str> = s.split(':').collect();
    let ok = parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(ParseError::invalid("mac", s))
    }
}

/// Reads the values of a CSI buffer as int8, bounded by `MAX_BUFFER_BYTES`; the formats differ
/// only in how they separate the values.
pub(crate) fn int8_values<'a>(
    values: impl Iterator<Item = &'a str> + Clone,
    field: &'static str,
) -> Result<Vec<i8>, ParseError> {
    let mut buf = Vec::new();
    for v in values.clone() {
        if buf.len() >= MAX_BUFFER_BYTES {
            return Err(ParseError::BufferTooLarge {
                len: values.count(),
                max: MAX_BUFFER_BYTES,
            });
        }
        buf.push(num::<i8>(v, field)?);
    }
    check_buffer_len(buf.len())?;
    Ok(buf)
}

/// A microsecond counter as seconds.
pub(crate) fn micros_to_s(us: u64) -> f64 {
    // u64 → f64 loses precision only beyond 2^53 µs (285 years).
    us as f64 / 1e6
}

/// The outcome of one text record: a frame, or a record that is valid but carries no CSI.
///
/// Not boxed: nearly every record is a frame, so boxing would add an allocation per frame to
/// save space only on the rare skipped ones.
#[allow(
    clippy::large_enum_variant,
    reason = "frames are the common case; see the doc comment"
)]
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Frame(ParsedFrame),
    Skipped(SkipKind),
}

/// A valid record that carries no CSI frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipKind {
    /// Firmware vitals (0xC5110002).
    Vitals,
    /// Firmware feature vector (0xC5110003).
    Feature,
    /// A line with only the common fields (the recording has two 0xC5110005 lines).
    NoPayload,
    /// A `type` this crate does not know; newer recorders may add some.
    OtherType,
    /// A text line that is not a CSI record (serial boot log, CSV header).
    NotCsi,
}

impl SkipKind {
    /// Stable snake_case key for statistics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vitals => "vitals",
            Self::Feature => "feature",
            Self::NoPayload => "no_payload",
            Self::OtherType => "other_type",
            Self::NotCsi => "not_csi",
        }
    }
}
