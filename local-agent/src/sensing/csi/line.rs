//! The per-line dispatcher replay and the hub use: one line of any text recording to its
//! format's parser.

use super::ParseError;
use super::text::{Record, SkipKind, prepare_line};

/// Decodes one line of any text recording: RuView JSONL (`{...}`), ESP32-CSI-Tool CSV
/// (`CSI_DATA,AP|STA|PASSIVE,...`) or esp-csi (`CSI_DATA,<number>,...`).
///
/// Serial captures interleave boot logs and header rows with data; lines that are not CSI
/// records are reported as [`SkipKind::NotCsi`] rather than as errors, so replay can tell
/// noise from corruption.
pub fn parse_text_line(line: &str) -> Result<Record, ParseError> {
    let trimmed = prepare_line(line)?.trim_start();
    if trimmed.starts_with('{') {
        return super::jsonl::parse_jsonl_line(trimmed);
    }
    let Some(rest) = trimmed.strip_prefix("CSI_DATA,") else {
        return Ok(Record::Skipped(SkipKind::NotCsi));
    };
    let second = rest.split(',').next().unwrap_or("").trim();
    let parsed = if matches!(second, "AP" | "STA" | "PASSIVE") {
        super::csi_tool::parse_csi_tool_line(trimmed)?
    } else {
        super::esp_csi::parse_esp_csi_line(trimmed)?
    };
    Ok(Record::Frame(parsed))
}
