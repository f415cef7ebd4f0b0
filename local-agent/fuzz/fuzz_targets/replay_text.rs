//! A whole text recording through replay: never panic, and every record is accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::source::replay::ReplaySource;

fuzz_target!(|data: &[u8]| {
    let mut src = ReplaySource::from_text_reader(std::io::Cursor::new(data.to_vec()), "fuzz");
    let n = src.by_ref().count() as u64;
    let s = src.stats();
    assert_eq!(s.frames, n);
    assert_eq!(s.records, s.frames + s.skipped + s.rejected());
});
