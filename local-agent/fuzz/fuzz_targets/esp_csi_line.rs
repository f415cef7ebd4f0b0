//! esp-csi `CSI_DATA` lines (classic and C5/C6): never panic, and a decoded frame is bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::{MAX_SUBCARRIERS, parse_esp_csi_line};

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(p) = parse_esp_csi_line(&line) {
        assert!(!p.frame.csi.is_empty() && p.frame.csi.len() <= MAX_SUBCARRIERS);
        assert!(p.frame.t_s.is_finite() && p.frame.t_s >= 0.0);
    }
});
