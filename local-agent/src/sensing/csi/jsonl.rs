//! RuView JSONL recordings (`*.csi.jsonl`): one JSON object per received UDP packet.
//!
//! Only `raw_csi` lines carry CSI (`iq_hex` is the ADR-018 buffer without its 20-byte header).
//! Vitals, feature and payload-less lines are valid records that replay skips, not errors.

use serde::Deserialize;

use super::adr018::{MAGIC_RAW_CSI, RAW_CSI_HEADER_BYTES, parse_iq_buffer};
use super::error::clip;
use super::text::{Record, SkipKind, prepare_line};
use super::{CsiFrame, CsiShape, FrameMeta, MAX_BUFFER_BYTES, ParseError, ParsedFrame, WireFormat};

#[derive(Deserialize)]
#[serde(untagged)]
enum NodeId {
    Num(u64),
    Text(String),
}

#[derive(Deserialize)]
struct Line {
    timestamp: Option<f64>,
    node_id: Option<NodeId>,
    magic: Option<String>,
    size: Option<u64>,
    #[serde(rename = "type")]
    kind: Option<String>,
    iq_hex: Option<String>,
    subcarriers: Option<u64>,
}

/// Decodes one RuView JSONL line.
///
/// Every record needs a finite `timestamp` (Unix seconds, used as `t_s`) and a `node_id`.
/// For `raw_csi`, `iq_hex` must be even-length hex of at most [`MAX_BUFFER_BYTES`] bytes and
/// agree with `subcarriers` and `size` (UDP bytes = 20 + buffer) when those are present.
/// `rssi` is not carried over: the recorder writes `1` in every raw_csi line.
pub fn parse_jsonl_line(line: &str) -> Result<Record, ParseError> {
    let line = prepare_line(line)?;
    let rec: Line = serde_json::from_str(line)
        .map_err(|e| ParseError::Json(clip(&e.to_string(), 120).to_string()))?;
    let t_s = rec.timestamp.ok_or(ParseError::MissingField("timestamp"))?;
    if !t_s.is_finite() {
        return Err(ParseError::NonFiniteTimestamp);
    }
    let node_id = match rec.node_id.ok_or(ParseError::MissingField("node_id"))? {
        NodeId::Num(n) => n.to_string(),
        NodeId::Text(s) if !s.is_empty() && s.len() <= 64 => s,
        NodeId::Text(s) => return Err(ParseError::invalid("node_id", &s)),
    };
    let kind = match rec.kind.as_deref() {
        Some("raw_csi") => None,
        Some("vitals") => Some(SkipKind::Vitals),
        Some("feature") => Some(SkipKind::Feature),
        Some(_) => Some(SkipKind::OtherType),
        None if rec.iq_hex.is_none() => Some(SkipKind::NoPayload),
        None => return Err(ParseError::MissingField("type")),
    };
    if let Some(kind) = kind {
        return Ok(Record::Skipped(kind));
    }

    if let Some(magic) = rec.magic.as_deref() {
        let found = parse_magic(magic)?;
        if found != MAGIC_RAW_CSI {
            return Err(ParseError::WrongMagic {
                expected: MAGIC_RAW_CSI,
                found,
            });
        }
    }
    let hex = rec.iq_hex.ok_or(ParseError::MissingField("iq_hex"))?;
    if hex.len() > 2 * MAX_BUFFER_BYTES {
        return Err(ParseError::BufferTooLarge {
            len: hex.len() / 2,
            max: MAX_BUFFER_BYTES,
        });
    }
    let bytes = decode_hex(&hex)?;
    let csi = parse_iq_buffer(&bytes)?;
    if let Some(n) = rec.subcarriers
        && n != csi.len() as u64
    {
        return Err(ParseError::LengthMismatch {
            expected: usize::try_from(n).unwrap_or(usize::MAX),
            got: csi.len(),
        });
    }
    if let Some(size) = rec.size
        && size != (RAW_CSI_HEADER_BYTES + bytes.len()) as u64
    {
        return Err(ParseError::LengthMismatch {
            expected: usize::try_from(size).unwrap_or(usize::MAX),
            got: RAW_CSI_HEADER_BYTES + bytes.len(),
        });
    }
    Ok(Record::Frame(ParsedFrame {
        frame: CsiFrame {
            node_id,
            t_s,
            rssi_dbm: None,
            channel: None,
            format: WireFormat::Adr018,
            csi,
            shape: CsiShape::default(),
        },
        meta: FrameMeta {
            declared_len: rec.size.and_then(|s| usize::try_from(s).ok()),
            ..FrameMeta::default()
        },
    }))
}

fn parse_magic(s: &str) -> Result<u32, ParseError> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u32::from_str_radix(digits, 16).map_err(|_| ParseError::invalid("magic", s))
}

/// Strict hex decoding: even length, `[0-9a-fA-F]` only.
pub(crate) fn decode_hex(s: &str) -> Result<Vec<u8>, ParseError> {
    if !s.len().is_multiple_of(2) {
        return Err(ParseError::InvalidHex("odd number of hex digits"));
    }
    fn nibble(c: u8) -> Result<u8, ParseError> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(ParseError::InvalidHex("non-hex character")),
        }
    }
    s.as_bytes()
        .chunks_exact(2)
        .map(|p| Ok((nibble(p[0])? << 4) | nibble(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = r#"{"timestamp": 1775182186.5, "node_id": 2, "magic": "0xC5110001", "size": 24, "rssi": 1, "type": "raw_csi", "iq_hex": "0102ff04", "subcarriers": 2}"#;

    #[test]
    fn raw_csi_line_decodes() {
        let Record::Frame(p) = parse_jsonl_line(RAW).unwrap() else {
            panic!("expected a frame");
        };
        assert_eq!(p.frame.node_id, "2");
        assert_eq!(p.frame.t_s, 1775182186.5);
        assert_eq!(p.frame.rssi_dbm, None);
        assert_eq!(p.frame.format, WireFormat::Adr018);
        assert_eq!((p.frame.csi[0].re, p.frame.csi[0].im), (2.0, 1.0));
        assert_eq!((p.frame.csi[1].re, p.frame.csi[1].im), (4.0, -1.0));
    }

    #[test]
    fn non_csi_lines_are_skipped() {
        let vitals = r#"{"timestamp": 1.0, "node_id": 1, "magic": "0xC5110002", "size": 32, "rssi": -19, "type": "vitals", "flags": 4}"#;
        let feature = r#"{"timestamp": 1.0, "node_id": 1, "magic": "0xC5110003", "size": 48, "rssi": -19, "type": "feature", "features": [0.1]}"#;
        let bare =
            r#"{"timestamp": 1.0, "node_id": 1, "magic": "0xC5110005", "size": 104, "rssi": 0}"#;
        for (line, kind) in [
            (vitals, SkipKind::Vitals),
            (feature, SkipKind::Feature),
            (bare, SkipKind::NoPayload),
        ] {
            assert_eq!(
                parse_jsonl_line(line).unwrap(),
                Record::Skipped(kind),
                "{line}"
            );
        }
    }

    #[test]
    fn malformed_lines_give_the_right_reason() {
        let big = format!("\"iq_hex\": \"{}\"", "00".repeat(MAX_BUFFER_BYTES + 2));
        let cases: Vec<(String, &str)> = vec![
            (RAW.replace("0102ff04", "0102ff0"), "invalid_hex"),
            (RAW.replace("0102ff04", "0102ffzz"), "invalid_hex"),
            (
                RAW.replace("\"subcarriers\": 2", "\"subcarriers\": 3"),
                "length_mismatch",
            ),
            (
                RAW.replace("\"size\": 24", "\"size\": 30"),
                "length_mismatch",
            ),
            (RAW.replace("0xC5110001", "0xC5110009"), "wrong_magic"),
            (RAW.replace("1775182186.5", "null"), "missing_field"),
            (RAW.replace("1775182186.5", "1e999"), "json"),
            (RAW[..RAW.len() - 10].to_string(), "json"),
            (RAW.replace("\"0102ff04\"", "\"\""), "empty_buffer"),
            (
                RAW.replace("\"iq_hex\": \"0102ff04\"", &big),
                "buffer_too_large",
            ),
            ("[1,2]".to_string(), "json"),
        ];
        for (line, reason) in cases {
            let err = parse_jsonl_line(&line).unwrap_err();
            assert_eq!(err.reason(), reason, "{line:.100} -> {err}");
        }
    }
}
