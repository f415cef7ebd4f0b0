//! Atheros CSI Tool CSV exports (status, real and imaginary logs read in lock-step): never
//! panic, every packet row is accounted for, and a decoded frame has its declared shape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::source::replay::ReplaySource;

fuzz_target!(|data: &[u8]| {
    // The input is split into the three logs at its first two 0xFF bytes.
    let mut parts = data.splitn(3, |b| *b == 0xFF);
    let status = parts.next().unwrap_or_default().to_vec();
    let real = parts.next().unwrap_or_default().to_vec();
    let imag = parts.next().unwrap_or_default().to_vec();
    let mut src = ReplaySource::from_atheros_export(
        std::io::Cursor::new(status),
        std::io::Cursor::new(real),
        std::io::Cursor::new(imag),
        "fuzz",
    );
    let mut n = 0u64;
    while let Some(f) = src.next_frame() {
        n += 1;
        let blocks = usize::from(f.shape.rx) * usize::from(f.shape.tx);
        assert!(blocks >= 1 && f.csi.len().is_multiple_of(blocks));
        assert!(f.t_s.is_finite());
    }
    let s = src.stats();
    assert_eq!(s.frames, n);
    assert_eq!(s.records, s.frames + s.rejected());
});
