//! ESP32-CSI-Tool CSV rows: never panic; a decoded frame is bounded and its invalid word zero.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::{MAX_SUBCARRIERS, parse_csi_tool_line};

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(p) = parse_csi_tool_line(&line) {
        assert!(!p.frame.csi.is_empty() && p.frame.csi.len() <= MAX_SUBCARRIERS);
        assert!(p.frame.t_s.is_finite());
        assert!(p.meta.real_timestamp_s.is_some_and(f64::is_finite));
        assert_eq!(p.frame.csi[0].norm(), 0.0);
    }
});
