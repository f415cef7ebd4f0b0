//! Atheros CSI Tool readers on real and hostile input: the BreathSense CSV export as published,
//! the same packets written as the tool's binary log (both byte orders), and broken folders and
//! logs, which must be counted, never crash, and never lose the good records around them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use local_agent::sensing::csi::atheros::{AtherosStatus, Endian, record_bytes};
use local_agent::sensing::csi::{CsiFrame, WireFormat};
use local_agent::sensing::source::replay::{ReplayFormat, ReplaySource};

fn breathsense(name: &str) -> PathBuf {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/csi/breathsense"
    ))
    .join(name);
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "la-atheros-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn the_published_export_reads_as_600_frames_of_3x2x56() {
    let mut src = ReplaySource::open(breathsense("BPM12")).expect("opens");
    assert_eq!(src.format(), ReplayFormat::AtherosExport);
    assert_eq!(src.name(), "BPM12");
    let bpm = src
        .settings()
        .iter()
        .find(|(k, _)| k == "bpm")
        .map(|(_, v)| v.clone());
    assert_eq!(bpm.as_deref(), Some("12"));
    let frames: Vec<CsiFrame> = src.by_ref().collect();
    assert_eq!(frames.len(), 600);
    assert_eq!(src.stats().rejected(), 0);
    let f = &frames[0];
    assert_eq!(f.format, WireFormat::AtherosCsiTool);
    assert_eq!(
        (f.shape.rx, f.shape.tx, f.shape.bandwidth_mhz),
        (3, 2, Some(20))
    );
    assert_eq!(f.csi.len(), 336);
    assert_eq!(f.channel, Some(40));
    assert!(
        f.csi.iter().all(|c| c.norm() > 0.0),
        "no filled entry is 0+0j"
    );
    // Host time, strictly increasing, ~9.5 packets/s.
    assert!(frames.windows(2).all(|w| w[1].t_s > w[0].t_s));
    let span = frames[599].t_s - frames[0].t_s;
    assert!((62.0..64.0).contains(&span), "{span}");
    // Rx chain 0 is ~6.5 dB weaker than chains 1 and 2 in every capture.
    let power = |r: usize| -> f32 {
        frames
            .iter()
            .flat_map(|f| f.csi[r * 112..(r + 1) * 112].iter())
            .map(|c| c.norm_sqr())
            .sum()
    };
    let db = 10.0 * (power(1) / power(0)).log10();
    assert!((4.0..9.0).contains(&db), "chain 1 over chain 0: {db:.1} dB");
    // Opening one of the logs opens the capture.
    let log = breathsense("BPM12").join("config0001_csi_status_log.csv");
    assert_eq!(ReplaySource::open(log).expect("opens").count(), 600);
}

/// The binary reader, checked against the real packets: BPM09 written as the tool's binary log
/// (what `recvCSI` writes) in both byte orders reads back to the same frames.
#[test]
fn the_binary_log_reads_back_the_real_packets_in_both_byte_orders() {
    let frames: Vec<CsiFrame> = ReplaySource::open(breathsense("BPM09"))
        .expect("opens")
        .collect();
    let dir = temp_dir("dat");
    for endian in [Endian::Little, Endian::Big] {
        let path = dir.join(format!("capture-{endian:?}.dat"));
        let mut out = std::fs::File::create(&path).expect("create");
        let t0 = frames[0].t_s;
        for f in &frames {
            let status = AtherosStatus {
                time_s: f.t_s - t0,
                channel_mhz: 5200,
                chan_bw: 0,
                rate: 135,
                nr: 3,
                nc: 2,
                num_tones: 56,
                noise: 0,
                phyerr: 0,
                rssi: 36,
                rssi_chains: [26, 33, 32],
                payload_len: 1040,
                csi_len: 840,
            };
            out.write_all(&record_bytes(&status, &f.csi, endian))
                .expect("write");
        }
        drop(out);
        let mut src = ReplaySource::open(&path).expect("opens");
        assert_eq!(src.format(), ReplayFormat::AtherosDat, "{endian:?}");
        let back: Vec<CsiFrame> = src.by_ref().collect();
        assert_eq!(back.len(), frames.len(), "{endian:?}");
        assert_eq!(src.stats().rejected(), 0);
        for (a, b) in frames.iter().zip(&back) {
            assert_eq!(a.csi, b.csi);
            assert!(((a.t_s - frames[0].t_s) - b.t_s).abs() < 2e-6);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_exports_are_counted_and_the_good_rows_kept() {
    let src_dir = breathsense("BPM15");
    let read = |f: &str| std::fs::read_to_string(src_dir.join(f)).expect("read");
    let status: Vec<String> = read("config0001_csi_status_log.csv")
        .lines()
        .take(20)
        .map(String::from)
        .collect();
    let mut real: Vec<String> = read("config0001_csi_real_log.csv")
        .lines()
        .take(20)
        .map(String::from)
        .collect();
    let imag: Vec<String> = read("config0001_csi_imag_log.csv")
        .lines()
        .take(18)
        .map(String::from)
        .collect();
    // Row 3: a value out of the 10-bit range; row 5: a missing column; row 7: not a number;
    // row 9: a line far too long (a recorder that lost its newlines); the imaginary log ends
    // two rows early (truncated capture).
    real[3] = real[3].replacen("0,", "4000,", 1);
    real[5] = real[5].split(',').skip(1).collect::<Vec<_>>().join(",");
    real[7] = real[7].replacen('0', "x", 1);
    real[9] = "1,".repeat(40_000);
    let dir = temp_dir("broken");
    let write = |f: &str, rows: &[String]| {
        std::fs::write(dir.join(f), rows.join("\n") + "\n").expect("write");
    };
    write("run_csi_status_log.csv", &status);
    write("run_csi_real_log.csv", &real);
    write("run_csi_imag_log.csv", &imag);
    let mut src = ReplaySource::open(&dir).expect("opens");
    let n = src.by_ref().count();
    let s = src.stats();
    assert_eq!(n, 14, "{s:?}");
    assert_eq!(s.records, 18);
    assert_eq!(s.rejected_by_reason.get("invalid_field"), Some(&2));
    assert_eq!(s.rejected_by_reason.get("field_count"), Some(&1));
    assert_eq!(s.rejected_by_reason.get("too_long"), Some(&1));
    // A folder with two captures is refused with a clear message, not guessed.
    write("other_csi_real_log.csv", &real);
    let err = ReplaySource::open(&dir).expect_err("ambiguous");
    assert!(err.to_string().contains("2 captures"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_truncated_or_corrupt_binary_log_is_counted() {
    let status = AtherosStatus {
        time_s: 1.0,
        channel_mhz: 2437,
        chan_bw: 1,
        rate: 0x8f,
        nr: 2,
        nc: 1,
        num_tones: 114,
        noise: 0,
        phyerr: 0,
        rssi: 30,
        rssi_chains: [30, 29, 0],
        payload_len: 4,
        csi_len: 570,
    };
    let csi: Vec<num_complex::Complex32> = (0..228)
        .map(|i| num_complex::Complex32::new((i % 50) as f32 - 25.0, 3.0))
        .collect();
    let one = record_bytes(&status, &csi, Endian::Little);
    let mut bytes = one.clone();
    // A record whose dimensions are impossible, then a good one, then a cut-off one.
    let mut bad = one.clone();
    bad[2 + 17] = 9;
    bytes.extend_from_slice(&bad);
    bytes.extend_from_slice(&one);
    bytes.extend_from_slice(&one[..100]);
    let mut src = ReplaySource::from_atheros_bytes(bytes, "t").expect("an Atheros log");
    let frames: Vec<CsiFrame> = src.by_ref().collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].shape.bandwidth_mhz, Some(40));
    assert_eq!(frames[0].csi, csi);
    let s = src.stats();
    assert_eq!(s.rejected_by_reason.get("invalid_field"), Some(&1));
    assert_eq!(s.rejected_by_reason.get("truncated"), Some(&1));
    assert!(ReplaySource::from_atheros_bytes(b"CSI_DATA,1,2,3".to_vec(), "t").is_none());
}
