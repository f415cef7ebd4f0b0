//! Malformed records give the right reason, and replay skips and counts them without stopping.

use std::io::Cursor;

use local_agent::sensing::csi::{
    MAX_LINE_BYTES, Record, SkipKind, parse_csi_tool_line, parse_esp_csi_line, parse_jsonl_line,
    parse_text_line,
};
use local_agent::sensing::source::replay::ReplaySource;

const ESP: &str = "CSI_DATA,1,aa:bb:cc:dd:ee:ff,-50,11,1,0,0,0,0,0,0,0,0,-90,0,6,0,1000,0,0,0,8,1,\"[1,2,3,4,5,6,7,8]\"";
const C5: &str =
    "CSI_DATA,1,aa:bb:cc:dd:ee:ff,-50,11,-90,0,40,6,1000,60,0,8,0,\"[1,2,3,4,5,6,7,8]\"";
const TOOL: &str = "CSI_DATA,PASSIVE,aa:bb:cc:dd:ee:ff,-50,11,1,0,0,0,0,0,0,0,0,-90,0,6,0,1000,0,0,0,0,1.5,8,[1 2 3 4 5 6 7 8 ]";
const JSONL: &str = r#"{"timestamp": 10.0, "node_id": 1, "magic": "0xC5110001", "size": 28, "rssi": 1, "type": "raw_csi", "iq_hex": "0102030405060708", "subcarriers": 4}"#;

fn reason_of<T: std::fmt::Debug>(
    r: Result<T, local_agent::sensing::csi::ParseError>,
) -> &'static str {
    r.unwrap_err().reason()
}

#[test]
fn good_records_parse() {
    for line in [ESP, C5, TOOL, JSONL] {
        let Record::Frame(p) = parse_text_line(line).unwrap() else {
            panic!("{line}");
        };
        assert_eq!(p.frame.csi.len(), 4, "{line}");
    }
    // Classic esp-csi with first_word=1 zeroes subcarriers 0 and 1; the C5 line has it 0.
    let esp = parse_esp_csi_line(ESP).unwrap();
    assert_eq!(esp.frame.csi[1].norm(), 0.0);
    assert_eq!(esp.frame.csi[2].re, 6.0);
    let c5 = parse_esp_csi_line(C5).unwrap();
    assert_eq!(c5.frame.csi[0].re, 2.0);
}

#[test]
fn truncated_records() {
    for cut in [10, 30, 60, ESP.len() - 3] {
        let r = reason_of(parse_esp_csi_line(&ESP[..cut]));
        assert!(
            matches!(r, "field_count" | "malformed_buffer" | "invalid_field"),
            "esp cut {cut}: {r}"
        );
    }
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP[..ESP.len() - 2])),
        "malformed_buffer"
    );
    assert_eq!(reason_of(parse_csi_tool_line(&TOOL[..50])), "field_count");
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL[..TOOL.len() - 1])),
        "malformed_buffer"
    );
    assert_eq!(reason_of(parse_jsonl_line(&JSONL[..40])), "json");
}

#[test]
fn non_numeric_fields() {
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace(",1000,", ",1e3,"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace("[1,2", "[one,2"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace(",6,0,", ",six,0,"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace("aa:bb", "zz:bb"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL.replace("[1 2", "[1.5 2"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL.replace(",1.5,", ",abc,"))),
        "invalid_field"
    );
    assert_eq!(
        reason_of(parse_jsonl_line(
            &JSONL.replace("\"node_id\": 1", "\"node_id\": [1]")
        )),
        "json"
    );
    assert_eq!(
        reason_of(parse_jsonl_line(&JSONL.replace("10.0", "\"ten\""))),
        "json"
    );
}

#[test]
fn wrong_field_counts() {
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace(",-90,", ",-90,0,"))),
        "field_count"
    );
    assert_eq!(
        reason_of(parse_esp_csi_line(&C5.replace(",40,", ","))),
        "field_count"
    );
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL.replace(",1.5,", ","))),
        "field_count"
    );
}

#[test]
fn odd_and_empty_buffers() {
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace(",8]", "]"))),
        "odd_buffer"
    );
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL.replace(" 8 ]", " ]"))),
        "odd_buffer"
    );
    assert_eq!(
        reason_of(parse_jsonl_line(
            &JSONL.replace("0102030405060708", "01020304050607")
        )),
        "odd_buffer"
    );
    assert_eq!(
        reason_of(parse_jsonl_line(
            &JSONL.replace("0102030405060708", "010203040506070")
        )),
        "invalid_hex"
    );
}

#[test]
fn oversized_records() {
    let long = format!("{ESP}{}", " ".repeat(MAX_LINE_BYTES));
    assert_eq!(reason_of(parse_esp_csi_line(&long)), "too_long");
    assert_eq!(reason_of(parse_csi_tool_line(&long)), "too_long");
    assert_eq!(reason_of(parse_jsonl_line(&long)), "too_long");
    assert_eq!(reason_of(parse_text_line(&long)), "too_long");
    let many = ESP.replace(
        "[1,2,3,4,5,6,7,8]",
        &format!("[{}]", vec!["1"; 2050].join(",")),
    );
    assert_eq!(reason_of(parse_esp_csi_line(&many)), "buffer_too_large");
}

#[test]
fn non_finite_timestamps() {
    assert_eq!(
        reason_of(parse_csi_tool_line(&TOOL.replace(",1.5,", ",nan,"))),
        "non_finite_timestamp"
    );
    // JSON has no NaN literal; an overflowing number is a JSON error, not a silent inf.
    assert_eq!(
        reason_of(parse_jsonl_line(&JSONL.replace("10.0", "NaN"))),
        "json"
    );
    assert_eq!(
        reason_of(parse_jsonl_line(&JSONL.replace("10.0", "1e400"))),
        "json"
    );
    // A negative µs counter is not a number the node can print.
    assert_eq!(
        reason_of(parse_esp_csi_line(&ESP.replace(",1000,", ",-1,"))),
        "invalid_field"
    );
}

#[test]
fn non_csi_text_is_skipped_not_rejected() {
    for line in [
        "I (312) wifi: mode : sta (aa:bb:cc:dd:ee:ff)",
        "type,id,mac,rssi,rate,sig_mode",
        "ets Jun  8 2016 00:22:57",
    ] {
        assert_eq!(
            parse_text_line(line).unwrap(),
            Record::Skipped(SkipKind::NotCsi),
            "{line}"
        );
    }
}

#[test]
fn replay_skips_and_counts_bad_records_without_stopping() {
    let mut text = String::new();
    text.push_str("boot: hello\n"); // skipped: not_csi
    text.push_str(ESP); // frame 1
    text.push('\n');
    text.push_str(&ESP[..40]); // rejected: field_count
    text.push_str("\n\n   \n"); // blank lines are not records
    text.push_str(&TOOL.replace("[1 2", "[x 2")); // rejected: invalid_field
    text.push_str("\r\n");
    text.push_str(&"9".repeat(MAX_LINE_BYTES + 10)); // rejected: too_long
    text.push('\n');
    text.push_str(JSONL); // frame 2
    text.push('\n');
    text.push_str(r#"{"timestamp": 11.0, "node_id": 1, "magic": "0xC5110002", "type": "vitals"}"#);
    text.push('\n'); // skipped: vitals
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(b"CSI_DATA,\xff\xfe\n"); // rejected: invalid_utf8
    bytes.extend_from_slice(TOOL.as_bytes()); // frame 3, no trailing newline

    let mut src = ReplaySource::from_text_reader(Cursor::new(bytes), "mixed");
    assert_eq!(src.peek_t_s(), Some(0.001));
    let frames: Vec<_> = src.by_ref().collect();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[1].t_s, 10.0);
    let s = src.stats();
    assert_eq!(s.frames, 3);
    assert_eq!(s.skipped, 2);
    assert_eq!(s.records, 9);
    assert_eq!(s.records, s.frames + s.skipped + s.rejected());
    let reasons: Vec<_> = s.rejected_by_reason.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(
        reasons,
        vec![
            ("field_count", 1),
            ("invalid_field", 1),
            ("invalid_utf8", 1),
            ("too_long", 1)
        ]
    );
    assert_eq!(s.skipped_by_kind.get("not_csi"), Some(&1));
    assert_eq!(s.skipped_by_kind.get("vitals"), Some(&1));
    assert_eq!(src.next_frame(), None);
}

#[test]
fn replay_of_a_missing_or_corrupt_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("parsers-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.jsonl");
    assert!(ReplaySource::open(&missing).is_err());
    let corrupt = dir.join("corrupt.npz");
    std::fs::write(&corrupt, b"PK\x03\x04 not really a zip").unwrap();
    let err = ReplaySource::open(&corrupt).unwrap_err();
    assert!(err.to_string().contains("corrupt.npz"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression (fuzz `jsonl_line`): error messages quoting multibyte input were cut with
/// `String::truncate` mid-character, which panics.
#[test]
fn json_errors_quoting_multibyte_text_do_not_panic() {
    for n in 30..50 {
        let line = format!(
            "{{\"timestamp\":\"{}\", \"node_id\": 1}}",
            "\u{FFFD}".repeat(n)
        );
        assert_eq!(reason_of(parse_jsonl_line(&line)), "json");
        assert_eq!(reason_of(parse_text_line(&line)), "json");
    }
}
