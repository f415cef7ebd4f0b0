//! Atheros CSI Tool binary logs: never panic; every record is accounted for and every decoded
//! frame is consistent with its shape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::atheros::{Endian, parse_record, split_records};
use local_agent::sensing::source::replay::ReplaySource;

fuzz_target!(|data: &[u8]| {
    for endian in [Endian::Little, Endian::Big] {
        for body in split_records(data, endian) {
            if let Ok(p) = parse_record(body, endian, "fuzz") {
                let s = p.frame.shape;
                let blocks = usize::from(s.rx) * usize::from(s.tx);
                assert!(blocks >= 1 && p.frame.csi.len().is_multiple_of(blocks));
                assert!(p.frame.t_s.is_finite());
                assert!(p.frame.csi.iter().all(|c| c.re.abs() <= 512.0 && c.im.abs() <= 512.0));
            }
        }
    }
    if let Some(mut src) = ReplaySource::from_atheros_bytes(data.to_vec(), "fuzz") {
        let n = src.by_ref().count() as u64;
        let s = src.stats();
        assert_eq!(s.frames, n);
        assert_eq!(s.records, s.frames + s.rejected());
    }
});
