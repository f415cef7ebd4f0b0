//! ESP32-CSI-Tool serial CSV lines (sensing notes §3.2).
//!
//! 26 comma-separated fields; the last is `[v0 v1 ... ]` with spaces, so a plain comma split is
//! safe. The tool only runs on the classic ESP32, whose first buffer word is always invalid.

use super::esp_csi::RxCtrl;

use super::text::{flag, int8_values, micros_to_s, num, prepare_line};
use super::{
    CsiFrame, FrameMeta, ParseError, ParsedFrame, WireFormat, csi_from_buffer, plausible_rssi,
};

const FIELDS: usize = 26;

/// Decodes one ESP32-CSI-Tool `CSI_DATA,AP|STA|PASSIVE,...` row.
///
/// The buffer is sized by counting values: LLTF-only builds print 128 values while `len` keeps
/// the full PPDU size (384 for HT40). The first two subcarriers (the invalid word) are zeroed.
/// `node_id` is the MAC, `t_s` the node's `local_timestamp` (µs) in seconds; `real_timestamp`
/// goes to `meta.real_timestamp_s`.
pub fn parse_csi_tool_line(line: &str) -> Result<ParsedFrame, ParseError> {
    let line = prepare_line(line)?.trim();
    if !line.starts_with("CSI_DATA,") {
        return Err(ParseError::NotCsi);
    }
    let f: Vec<&str> = line.splitn(FIELDS + 1, ',').collect();
    if f.len() != FIELDS {
        return Err(ParseError::FieldCount {
            expected: "26",
            found: line.split(',').count(),
        });
    }
    let role = f[1].trim();
    if !matches!(role, "AP" | "STA" | "PASSIVE") {
        return Err(ParseError::invalid("role", role));
    }
    let ctrl = RxCtrl::parse(&f)?;
    flag(f[22], "real_time_set")?;
    let real_timestamp: f64 = num(f[23], "real_timestamp")?;
    if !real_timestamp.is_finite() {
        return Err(ParseError::NonFiniteTimestamp);
    }
    let declared_len: usize = num(f[24], "len")?;
    let buf = parse_space_buffer(f[25])?;

    let meta = FrameMeta {
        declared_len: Some(declared_len),
        // Without `real_time_set` (field 22) the node has no wall clock and this is uptime.
        real_timestamp_s: Some(real_timestamp),
        role: Some(role.to_string()),
        ..ctrl.meta(buf.len(), true)
    };
    Ok(ParsedFrame {
        frame: CsiFrame {
            node_id: ctrl.mac,
            t_s: micros_to_s(ctrl.local_us),
            rssi_dbm: plausible_rssi(ctrl.rssi),
            channel: Some(ctrl.channel),
            format: WireFormat::Esp32CsiTool,
            csi: csi_from_buffer(&buf, true),
            shape: super::shape_for_layout(meta.layout),
        },
        meta,
    })
}

/// Parses `[v0 v1 ... ]` (space-separated, trailing space) into int8 values.
fn parse_space_buffer(data: &str) -> Result<Vec<i8>, ParseError> {
    let inner = data
        .trim()
        .strip_prefix('[')
        .ok_or(ParseError::MalformedBuffer("missing '['"))?
        .strip_suffix(']')
        .ok_or(ParseError::MalformedBuffer("missing ']' (truncated line?)"))?;
    int8_values(inner.split_ascii_whitespace(), "CSI_DATA")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensing::csi::layout::SecondaryChannel;

    fn row(data: &str) -> String {
        format!(
            "CSI_DATA,STA,3C:71:BF:6D:2A:78,-73,11,1,0,1,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,384,[{data} ]"
        )
    }

    #[test]
    fn row_decodes_and_zeroes_the_invalid_word() {
        let p = parse_csi_tool_line(&row("101 -48 5 0 7 8 1 2")).unwrap();
        assert_eq!(p.frame.node_id, "3c:71:bf:6d:2a:78");
        assert_eq!(p.frame.format, WireFormat::Esp32CsiTool);
        assert_eq!(p.frame.csi.len(), 4);
        assert_eq!(p.frame.csi[0].norm(), 0.0);
        assert_eq!(p.frame.csi[1].norm(), 0.0);
        assert_eq!((p.frame.csi[2].re, p.frame.csi[2].im), (8.0, 7.0));
        assert!((p.frame.t_s - 80.272146).abs() < 1e-9);
        assert_eq!(p.meta.declared_len, Some(384));
        assert_eq!(p.meta.real_timestamp_s, Some(80.363225));
        assert_eq!(p.meta.role.as_deref(), Some("STA"));
        assert_eq!(p.meta.secondary_channel, Some(SecondaryChannel::Above));
    }

    #[test]
    fn malformed_rows_give_the_right_reason() {
        let cases: Vec<(String, &str)> = vec![
            (row("1 2 3"), "odd_buffer"),
            (row("1 2 x 4"), "invalid_field"),
            (row("1 2 3 4").replace(",384,", ",384,7,"), "field_count"),
            (row("1 2 3 4").replace("STA", "BOSS"), "invalid_field"),
            (
                row("1 2 3 4").replace("80.363225", "NaN"),
                "non_finite_timestamp",
            ),
            (
                row("1 2 3 4").replace("80.363225", "inf"),
                "non_finite_timestamp",
            ),
            (
                row("1 2 3 4").trim_end_matches(']').to_string(),
                "malformed_buffer",
            ),
            (row(""), "empty_buffer"),
            (row(&vec!["1"; 2050].join(" ")), "buffer_too_large"),
        ];
        for (line, reason) in cases {
            let err = parse_csi_tool_line(&line).unwrap_err();
            assert_eq!(err.reason(), reason, "{line:.80} -> {err}");
        }
    }
}
