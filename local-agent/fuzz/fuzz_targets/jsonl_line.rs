//! RuView JSONL lines: never panic; a decoded frame is bounded with a finite timestamp.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::{MAX_SUBCARRIERS, Record, parse_jsonl_line};

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(Record::Frame(p)) = parse_jsonl_line(&line) {
        assert!(!p.frame.csi.is_empty() && p.frame.csi.len() <= MAX_SUBCARRIERS);
        assert!(p.frame.t_s.is_finite());
    }
});
