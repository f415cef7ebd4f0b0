//! Seeded random bytes and random mutations of valid records through every parser: no input
//! may panic. The fuzz targets in `fuzz/` search deeper; this runs on every `cargo test`.

use std::io::{Cursor, Write};

use local_agent::sensing::csi::adr018::MAGIC_VITALS;
use local_agent::sensing::csi::{
    FeatureState, QualityFlags, RawCsiPacket, decode_datagram, parse_csi_tool_line,
    parse_esp_csi_line, parse_jsonl_line, parse_npz, parse_text_line,
};
use local_agent::sensing::source::replay::ReplaySource;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ESP: &str = "CSI_DATA,1,aa:bb:cc:dd:ee:ff,-50,11,1,0,0,0,0,0,0,0,0,-90,0,6,0,1000,0,0,0,8,1,\"[1,2,3,4,5,6,7,8]\"";
const C5: &str =
    "CSI_DATA,1,aa:bb:cc:dd:ee:ff,-50,11,-90,0,40,6,1000,60,0,8,0,\"[1,2,3,4,5,6,7,8]\"";
const TOOL: &str = "CSI_DATA,STA,aa:bb:cc:dd:ee:ff,-50,11,1,0,0,0,0,0,0,0,0,-90,0,6,0,1000,0,0,0,0,1.5,8,[1 2 3 4 5 6 7 8 ]";
const JSONL: &str = r#"{"timestamp": 10.0, "node_id": 1, "magic": "0xC5110001", "size": 28, "rssi": 1, "type": "raw_csi", "iq_hex": "0102030405060708", "subcarriers": 4}"#;

/// Applies 1–4 random edits: byte flips, inserts (often of syntax characters), deletions,
/// truncation and chunk duplication.
fn mutate(rng: &mut ChaCha8Rng, input: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b",[]\"{}: -0123456789abcdefx\n\r\x00\xff";
    let mut v = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let len = v.len();
        match rng.random_range(0..6) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = rng.random_range(0..=len);
                let b = INTERESTING[rng.random_range(0..INTERESTING.len())];
                v.insert(i, b);
            }
            2 if len > 0 => {
                v.remove(rng.random_range(0..len));
            }
            3 => v.truncate(rng.random_range(0..=len)),
            4 if len > 1 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..len);
                let chunk = v[a..=b].to_vec();
                let at = rng.random_range(0..=v.len());
                v.splice(at..at, chunk);
            }
            _ if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] = rng.random();
            }
            _ => {}
        }
    }
    v
}

fn all_text_parsers(bytes: &[u8]) {
    let s = String::from_utf8_lossy(bytes);
    let _ = parse_esp_csi_line(&s);
    let _ = parse_csi_tool_line(&s);
    let _ = parse_jsonl_line(&s);
    let _ = parse_text_line(&s);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0001);
    for _ in 0..20_000 {
        let len = rng.random_range(0..400);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        all_text_parsers(&bytes);
        let _ = decode_datagram(&bytes);
        let _ = parse_npz(&bytes, "fuzz");
        // Random bytes behind a valid magic reach the per-packet decoders.
        for magic in [0xC511_0001u32, MAGIC_VITALS, 0xC511_0006] {
            let mut b = magic.to_le_bytes().to_vec();
            b.extend_from_slice(&bytes);
            let _ = decode_datagram(&b);
        }
    }
}

#[test]
fn mutated_text_records_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0002);
    let seeds = [ESP, C5, TOOL, JSONL];
    let mut parsed = 0;
    for _ in 0..20_000 {
        let seed = seeds[rng.random_range(0..seeds.len())];
        let m = mutate(&mut rng, seed.as_bytes());
        all_text_parsers(&m);
        parsed += usize::from(parse_text_line(&String::from_utf8_lossy(&m)).is_ok());
    }
    // Some mutations (e.g. one digit changed) stay valid: the test exercised both paths.
    assert!(parsed > 100, "only {parsed} mutants parsed");
}

#[test]
fn mutated_datagrams_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0003);
    let raw = RawCsiPacket {
        node_id: 1,
        n_antennas: 1,
        n_subcarriers: 64,
        freq_mhz: 2412,
        sequence: 9,
        rssi: -40,
        noise_floor: -90,
        reserved: [0, 0],
        buffer: vec![3; 128],
    }
    .to_bytes();
    let fs = FeatureState {
        node_id: 1,
        mode: 0,
        seq: 1,
        ts_us: 1,
        motion_score: 0.1,
        presence_score: 0.2,
        respiration_bpm: 12.0,
        respiration_conf: 0.5,
        heartbeat_bpm: 70.0,
        heartbeat_conf: 0.5,
        anomaly_score: 0.0,
        env_shift_score: 0.0,
        node_coherence: 1.0,
        quality_flags: QualityFlags(0),
    }
    .to_bytes()
    .to_vec();
    for _ in 0..20_000 {
        let seed = if rng.random() { &raw } else { &fs };
        let _ = decode_datagram(&mutate(&mut rng, seed));
    }
}

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn utf32(s: &str) -> Vec<u8> {
    s.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect()
}

/// The arrays of a small ESPectre-style capture: 3 packets of 4 subcarriers from an ESP32.
fn synthetic_arrays() -> Vec<(&'static str, Vec<u8>)> {
    let csi: Vec<u8> = (0..24u8).map(|i| i + 1).collect();
    vec![
        ("csi_data.npy", npy("|i1", "(3, 8)", &csi)),
        ("num_subcarriers.npy", npy("<i8", "()", &4i64.to_le_bytes())),
        ("duration_ms.npy", npy("<f8", "()", &30.0f64.to_le_bytes())),
        ("chip.npy", npy("<U5", "()", &utf32("esp32"))),
        ("label.npy", npy("<U4", "()", &utf32("test"))),
        ("gain_locked.npy", npy("|b1", "()", &[0])),
    ]
}

fn stored_zip(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn synthetic_npz_decodes() {
    let rec = parse_npz(&stored_zip(&synthetic_arrays()), "node").unwrap();
    assert_eq!(rec.frames.len(), 3);
    assert_eq!(rec.meta.rate_hz, 100.0);
    assert_eq!(rec.meta.chip.as_deref(), Some("esp32"));
    assert_eq!(rec.meta.gain_locked, Some(false));
    assert!(rec.meta.first_word_invalid);
    assert_eq!(rec.frames[1].t_s, 0.01);
    // Row 0 is bytes 1..=8; the ESP32 invalid word zeroes subcarriers 0 and 1.
    assert_eq!(rec.frames[0].csi[1].norm(), 0.0);
    assert_eq!(
        (rec.frames[0].csi[2].re, rec.frames[0].csi[2].im),
        (6.0, 5.0)
    );
    let mut src = ReplaySource::from_npz_bytes(&stored_zip(&synthetic_arrays()), "n").unwrap();
    assert_eq!(src.by_ref().count(), 3);
    assert_eq!(src.stats().records, 3);
}

#[test]
fn npz_with_bad_arrays_is_rejected_with_a_reason() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("csi_data.npy", npy("|i1", "(3, 8)", &[0; 23]), "npy"),
        ("csi_data.npy", npy("<i8", "(3, 8)", &[0; 192]), "npy"),
        (
            "csi_data.npy",
            npy("|i1", "(3, 7)", &[0; 21]),
            "malformed_buffer",
        ),
        ("csi_data.npy", npy("|i1", "(0, 8)", &[]), "empty_buffer"),
        (
            "csi_data.npy",
            npy("|i1", "(1, 4096)", &[0; 4096]),
            "malformed_buffer",
        ),
        (
            "num_subcarriers.npy",
            npy("<i8", "()", &5i64.to_le_bytes()),
            "length_mismatch",
        ),
        (
            "duration_ms.npy",
            npy("<f8", "()", &f64::NAN.to_le_bytes()),
            "non_finite_timestamp",
        ),
        (
            "duration_ms.npy",
            npy("<f8", "()", &0f64.to_le_bytes()),
            "non_finite_timestamp",
        ),
        (
            "duration_ms.npy",
            npy("<f8", "(1,)", &1f64.to_le_bytes()),
            "npy",
        ),
        ("chip.npy", npy("<U1", "()", &[0xff; 4]), "npy"),
        ("gain_locked.npy", npy("|b1", "()", &[2]), "npy"),
    ];
    for (name, bytes, reason) in cases {
        let mut arrays = synthetic_arrays();
        for (n, b) in arrays.iter_mut() {
            if *n == name {
                *b = bytes.clone();
            }
        }
        let err = parse_npz(&stored_zip(&arrays), "n").unwrap_err();
        assert_eq!(err.reason(), reason, "{name}: {err}");
    }
    let without_csi: Vec<_> = synthetic_arrays()
        .into_iter()
        .filter(|(n, _)| *n != "csi_data.npy")
        .collect();
    assert_eq!(
        parse_npz(&stored_zip(&without_csi), "n")
            .unwrap_err()
            .reason(),
        "zip"
    );
}

#[test]
fn mutated_npz_never_panics() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0004);
    let arrays = synthetic_arrays();
    // Mutating the arrays before zipping exercises the NPY reader (stored entries have valid
    // CRCs); mutating the finished zip exercises the container.
    for _ in 0..3_000 {
        let mut a = arrays.clone();
        let i = rng.random_range(0..a.len());
        a[i].1 = mutate(&mut rng, &a[i].1);
        let _ = parse_npz(&stored_zip(&a), "n");
    }
    let zipped = stored_zip(&arrays);
    for _ in 0..3_000 {
        let _ = parse_npz(&mutate(&mut rng, &zipped), "n");
    }
}

#[test]
fn replay_of_random_text_never_panics_and_accounts_for_every_record() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0005);
    let seeds = [ESP, C5, TOOL, JSONL];
    for _ in 0..50 {
        let mut file = Vec::new();
        for _ in 0..rng.random_range(0..200) {
            let seed = seeds[rng.random_range(0..seeds.len())].as_bytes();
            if rng.random_bool(0.5) {
                file.extend_from_slice(seed);
            } else {
                file.extend_from_slice(&mutate(&mut rng, seed));
            }
            file.push(b'\n');
        }
        let mut src = ReplaySource::from_text_reader(Cursor::new(file), "r");
        let n = src.by_ref().count() as u64;
        let s = src.stats();
        assert_eq!(s.frames, n);
        assert_eq!(s.records, s.frames + s.skipped + s.rejected());
    }
}
