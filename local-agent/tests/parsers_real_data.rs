//! Every parser against the real recordings in `../shared/data/csi`, read at test time.
//!
//! The facts checked here are the ones listed in the data README and sensing notes; if one
//! fails, either the parser or those notes are wrong, and both matter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use local_agent::sensing::csi::{
    ChipFamily, PpduKind, WireFormat, ZeroSubcarrierTracker, parse_csi_tool_line, parse_npz,
};
use local_agent::sensing::source::replay::{ReplayFormat, ReplaySource};

/// The shared data directory. CI always has it, so a missing directory is a failure with a
/// message saying where it was expected, not a silent skip.
fn data_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi"
    ));
    assert!(
        dir.is_dir(),
        "CSI test data not found at {}: the repository must sit beside `shared/` \
         (shared/data/csi holds the ESPectre, RuView and ESP32-CSI-Tool recordings)",
        dir.display()
    );
    dir
}

fn zero_set(frames: impl IntoIterator<Item = Vec<num_complex::Complex32>>) -> Vec<usize> {
    let mut t = ZeroSubcarrierTracker::new();
    let mut n = 0;
    for csi in frames {
        n = csi.len();
        t.observe(&csi);
    }
    t.always_zero(n).unwrap_or_default()
}

#[test]
fn espectre_test_file_matches_its_documented_facts() {
    let path = data_dir().join("espectre/test/test_c3_64sc_20260329_130804.npz");
    let bytes = std::fs::read(&path).unwrap();
    let rec = parse_npz(&bytes, "test_c3").unwrap();
    let m = &rec.meta;
    assert_eq!(m.n_packets, 6068);
    assert_eq!(rec.frames.len(), 6068);
    assert_eq!(m.num_subcarriers, 64);
    assert!(
        (m.duration_ms / 1000.0 - 59.99).abs() < 0.01,
        "{}",
        m.duration_ms
    );
    assert!((m.rate_hz - 101.15).abs() < 0.01, "rate {}", m.rate_hz);
    assert_eq!(m.chip.as_deref(), Some("c3"));
    assert_eq!(m.label.as_deref(), Some("test"));
    assert!(!m.first_word_invalid);
    assert_eq!(m.layout.map(|l| l.ppdu), Some(PpduKind::NonHt));
    assert!(
        m.collected_at
            .as_deref()
            .is_some_and(|s| s.starts_with("2026-"))
    );

    let first = &rec.frames[0];
    assert_eq!(first.format, WireFormat::Npz);
    assert_eq!(first.node_id, "test_c3");
    assert_eq!(first.t_s, 0.0);
    assert!(rec.frames.iter().all(|f| f.csi.len() == 64));
    // Evenly spaced on the derived rate, ending one packet short of the duration.
    let last = rec.frames[6067].t_s;
    assert!((last - 6067.0 / m.rate_hz).abs() < 1e-9);
    assert!(rec.frames.windows(2).all(|w| w[1].t_s > w[0].t_s));
    // First row of the file is (0, 0, 35, -21, ...): subcarrier 1 = -21 + 35i.
    assert_eq!((first.csi[1].re, first.csi[1].im), (-21.0, 35.0));

    let zeros = zero_set(rec.frames.iter().map(|f| f.csi.clone()));
    let expected: Vec<usize> = std::iter::once(0).chain(29..=35).collect();
    assert_eq!(zeros, expected);
}

#[test]
fn every_espectre_capture_parses_with_the_chip_zero_set() {
    let dir = data_dir().join("espectre");
    let mut seen = 0;
    for sub in ["baseline", "movement", "test"] {
        let mut entries: Vec<_> = std::fs::read_dir(dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "npz"))
            .collect();
        entries.sort();
        for path in entries {
            let mut src = ReplaySource::open(&path).unwrap();
            assert_eq!(src.format(), ReplayFormat::Npz);
            let meta = src.npz_meta().cloned().unwrap();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let frames: Vec<_> = src.by_ref().collect();
            assert_eq!(frames.len(), meta.n_packets, "{stem}");
            assert!(frames.iter().all(|f| f.node_id == stem));
            assert_eq!(src.stats().frames, meta.n_packets as u64);
            assert_eq!(src.stats().rejected(), 0);
            if sub != "test" {
                assert!(
                    (73.0..=144.0).contains(&meta.rate_hz),
                    "{stem}: {} pps",
                    meta.rate_hz
                );
                assert!((960..=1432).contains(&meta.n_packets), "{stem}");
            }
            let chip = meta.chip.clone().unwrap();
            let expected: Vec<usize> = match chip.as_str() {
                "c3" | "s3" => std::iter::once(0).chain(29..=35).collect(),
                "c5" | "c6" => vec![0, 1, 2, 3, 32, 61, 62, 63],
                // The invalid first word reads as zero subcarriers 0 and 1.
                "esp32" => [0, 1].into_iter().chain(30..=34).collect(),
                other => panic!("unexpected chip {other}"),
            };
            assert_eq!(meta.first_word_invalid, chip == "esp32", "{stem}");
            let family = meta.layout.map(|l| l.family);
            if chip.starts_with('c') && chip != "c3" {
                assert_eq!(family, Some(ChipFamily::C5C6), "{stem}");
            } else {
                assert_eq!(family, Some(ChipFamily::Classic), "{stem}");
            }
            assert_eq!(
                zero_set(frames.into_iter().map(|f| f.csi)),
                expected,
                "{stem}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 21);
}

#[test]
fn ruview_jsonl_replays_with_documented_counts() {
    let path = data_dir().join("ruview/pretrain-1775182186.csi.jsonl");
    let mut src = ReplaySource::open(&path).unwrap();
    assert_eq!(src.format(), ReplayFormat::Text);
    let mut nodes = BTreeSet::new();
    let mut sizes: BTreeMap<usize, u64> = BTreeMap::new();
    let mut trackers = ZeroSubcarrierTracker::new();
    let mut times = Vec::new();
    while let Some(p) = src.next_parsed() {
        let f = p.frame;
        assert_eq!(f.format, WireFormat::Adr018);
        assert_eq!(
            f.rssi_dbm, None,
            "recorded rssi is the constant 1, not a reading"
        );
        assert_eq!(p.meta.declared_len, Some(20 + 2 * f.csi.len()));
        nodes.insert(f.node_id.clone());
        *sizes.entry(f.csi.len()).or_default() += 1;
        trackers.observe(&f.csi);
        times.push(f.t_s);
    }
    let s = src.stats();
    assert_eq!(s.records, 5783);
    assert_eq!(s.frames, 5309);
    assert_eq!(s.skipped, 474);
    assert_eq!(s.skipped_by_kind.get("vitals"), Some(&236));
    assert_eq!(s.skipped_by_kind.get("feature"), Some(&236));
    assert_eq!(s.skipped_by_kind.get("no_payload"), Some(&2));
    assert_eq!(s.rejected(), 0, "{:?}", s.rejected_by_reason);
    assert_eq!(s.io_error, None);
    assert_eq!(nodes, BTreeSet::from(["1".to_string(), "2".to_string()]));
    assert_eq!(sizes, BTreeMap::from([(64, 4127), (128, 1134), (192, 48)]));
    assert!(
        times.windows(2).all(|w| w[1] >= w[0]),
        "file order is time order"
    );
    let span = times[times.len() - 1] - times[0];
    assert!((118.0..=120.1).contains(&span), "span {span}");
    // Unix seconds (2026-04-03).
    assert!((1_775_182_186.0..1_775_182_187.0).contains(&times[0]));
    let expected64: Vec<usize> = std::iter::once(0).chain(27..=37).collect();
    assert_eq!(trackers.always_zero(64), Some(expected64));
}

#[test]
fn esp32_csi_tool_example_rows() {
    let path = data_dir().join("esp32-csi-tool/example_csi.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<_> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_csi_tool_line(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 13);
    let mut declared: BTreeMap<usize, usize> = BTreeMap::new();
    for p in &rows {
        // 128 values each whatever `len` says.
        assert_eq!(p.frame.csi.len(), 64);
        assert_eq!(p.frame.format, WireFormat::Esp32CsiTool);
        assert_eq!(p.frame.node_id, "3c:71:bf:6d:2a:78");
        assert_eq!(p.frame.rssi_dbm.map(|r| r < 0), Some(true));
        assert_eq!(p.frame.channel, Some(1));
        assert_eq!(p.meta.role.as_deref(), Some("AP"));
        assert!(p.meta.first_word_invalid);
        // The invalid word (101 -48 5 0) becomes two zero subcarriers.
        assert_eq!(p.frame.csi[0].norm(), 0.0);
        assert_eq!(p.frame.csi[1].norm(), 0.0);
        *declared.entry(p.meta.declared_len.unwrap()).or_default() += 1;
    }
    assert_eq!(declared, BTreeMap::from([(128, 1), (384, 12)]));
    let span = rows[12].frame.t_s - rows[0].frame.t_s;
    assert!((span - 0.0926).abs() < 0.0001, "span {span}");

    // The same file through replay.
    let mut src = ReplaySource::open(&path).unwrap();
    assert_eq!(src.by_ref().count(), 13);
    assert_eq!(src.stats().records, 13);
    assert_eq!(src.stats().rejected(), 0);
}
