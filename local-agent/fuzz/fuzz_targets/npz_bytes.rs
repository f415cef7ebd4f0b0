//! ESPectre `.npz` bytes (zip container and NPY reader): never panic; a decoded capture is
//! consistent with its metadata.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::{MAX_SUBCARRIERS, parse_npz};

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = parse_npz(data, "fuzz") {
        assert_eq!(rec.frames.len(), rec.meta.n_packets);
        assert!(rec.meta.rate_hz.is_finite() && rec.meta.rate_hz > 0.0);
        for f in &rec.frames {
            assert_eq!(f.csi.len(), rec.meta.num_subcarriers);
            assert!(f.csi.len() <= MAX_SUBCARRIERS);
            assert!(f.t_s.is_finite());
        }
    }
});
