//! Hand-built ADR-018 datagrams through the hub's entry point, `decode_datagram`.

use local_agent::sensing::csi::adr018::{MAGIC_FEATURE_STATE, MAGIC_RAW_CSI, MAGIC_VITALS};
use local_agent::sensing::csi::{
    Datagram, FeatureState, ParseError, QualityFlags, RawCsiPacket, WireFormat, decode_datagram,
    parse_feature_state, parse_raw_csi,
};

fn raw_packet(n_sc: u16) -> RawCsiPacket {
    RawCsiPacket {
        node_id: 7,
        n_antennas: 1,
        n_subcarriers: n_sc,
        freq_mhz: 2462,
        sequence: 123_456,
        rssi: -48,
        noise_floor: -92,
        reserved: [0, 0],
        buffer: (0..2 * n_sc).map(|i| (i % 100) as i8 - 50).collect(),
    }
}

fn feature_state() -> FeatureState {
    FeatureState {
        node_id: 2,
        mode: 1,
        seq: 513,
        ts_us: 0x0102_0304_0506_0708,
        motion_score: 0.25,
        presence_score: 0.5,
        respiration_bpm: 14.5,
        respiration_conf: 0.8,
        heartbeat_bpm: 61.0,
        heartbeat_conf: 0.3,
        anomaly_score: 0.01,
        env_shift_score: 0.02,
        node_coherence: 0.9,
        quality_flags: QualityFlags(QualityFlags::PRESENCE_VALID | QualityFlags::RESP_VALID),
    }
}

#[test]
fn raw_csi_round_trips_through_the_dispatcher() {
    let pkt = raw_packet(64);
    let bytes = pkt.to_bytes();
    assert_eq!(bytes.len(), 20 + 128);
    // Offsets straight from the table: seq u32 at 12, rssi at 16 (not 14), freq u32 at 8.
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2462);
    assert_eq!(
        u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        123_456
    );
    assert_eq!(bytes[16] as i8, -48);
    let Datagram::RawCsi(decoded) = decode_datagram(&bytes).unwrap() else {
        panic!("expected raw CSI");
    };
    assert_eq!(decoded, pkt);
    let parsed = decoded.to_parsed(12.5).unwrap();
    assert_eq!(parsed.frame.node_id, "7");
    assert_eq!(parsed.frame.t_s, 12.5);
    assert_eq!(parsed.frame.channel, Some(11));
    assert_eq!(parsed.frame.rssi_dbm, Some(-48));
    assert_eq!(parsed.frame.format, WireFormat::Adr018);
    assert_eq!(parsed.frame.csi.len(), 64);
    // k = real buf[2k+1] + i buf[2k]
    assert_eq!(parsed.frame.csi[0].re, f32::from(pkt.buffer[1]));
    assert_eq!(parsed.frame.csi[0].im, f32::from(pkt.buffer[0]));
    assert_eq!(parsed.meta.sequence, Some(123_456));
    assert_eq!(parsed.meta.noise_floor_dbm, Some(-92));
    assert_eq!(
        decoded.to_parsed(f64::NAN).unwrap_err(),
        ParseError::NonFiniteTimestamp
    );
}

#[test]
fn raw_csi_length_checks() {
    let bytes = raw_packet(64).to_bytes();
    for cut in [0, 3, 4, 19, 20, 21, 100, 147] {
        let err = decode_datagram(&bytes[..cut]).unwrap_err();
        assert_eq!(err.reason(), "truncated", "cut at {cut}: {err}");
    }
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(
        decode_datagram(&long).unwrap_err(),
        ParseError::LengthMismatch {
            expected: 148,
            got: 149
        }
    );
    let mut zero_ant = bytes.clone();
    zero_ant[5] = 0;
    assert_eq!(
        decode_datagram(&zero_ant).unwrap_err().reason(),
        "invalid_field"
    );
    let mut zero_sc = bytes[..20].to_vec();
    zero_sc[6..8].copy_from_slice(&0u16.to_le_bytes());
    assert_eq!(
        decode_datagram(&zero_sc).unwrap_err().reason(),
        "empty_buffer"
    );
    let mut huge = bytes.clone();
    huge[6..8].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(
        decode_datagram(&huge).unwrap_err().reason(),
        "buffer_too_large"
    );
    // Multi-antenna: the buffer must hold n_antennas × n_subcarriers pairs.
    let mut two = raw_packet(32);
    two.n_antennas = 2;
    two.n_subcarriers = 16;
    let decoded = parse_raw_csi(&two.to_bytes()).unwrap();
    assert_eq!(decoded.csi().len(), 32);
}

#[test]
fn sentinel_rssi_is_not_a_reading() {
    let mut pkt = raw_packet(4);
    pkt.rssi = 1;
    assert_eq!(pkt.rssi_dbm(), None);
    pkt.rssi = -1;
    assert_eq!(pkt.rssi_dbm(), None);
}

#[test]
fn feature_state_round_trips_and_checks_its_crc() {
    let fs = feature_state();
    let bytes = fs.to_bytes();
    assert_eq!(bytes.len(), 60);
    assert_eq!(&bytes[..4], &MAGIC_FEATURE_STATE.to_le_bytes());
    let Datagram::FeatureState(decoded) = decode_datagram(&bytes).unwrap() else {
        panic!("expected feature state");
    };
    assert_eq!(decoded, fs);
    assert!(decoded.quality_flags.contains(QualityFlags::RESP_VALID));
    assert!(!decoded.quality_flags.contains(QualityFlags::HB_VALID));

    // The CRC is the standard IEEE CRC-32 of bytes 0..56 (check value of "123456789").
    assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);

    let mut corrupt = bytes;
    corrupt[20] ^= 0x01;
    assert!(matches!(
        parse_feature_state(&corrupt),
        Err(ParseError::BadCrc { .. })
    ));
    let mut bad_crc = bytes;
    bad_crc[59] ^= 0x80;
    assert_eq!(decode_datagram(&bad_crc).unwrap_err().reason(), "bad_crc");
    assert_eq!(
        decode_datagram(&bytes[..59]).unwrap_err().reason(),
        "truncated"
    );
    let mut long = bytes.to_vec();
    long.push(0);
    assert_eq!(
        decode_datagram(&long).unwrap_err().reason(),
        "length_mismatch"
    );
}

#[test]
fn feature_state_with_nan_score_is_rejected() {
    let mut fs = feature_state();
    fs.heartbeat_bpm = f32::NAN;
    let err = decode_datagram(&fs.to_bytes()).unwrap_err();
    assert_eq!(err.reason(), "invalid_field", "{err}");
}

#[test]
fn vitals_packet_decodes() {
    let mut b = [0u8; 32];
    b[..4].copy_from_slice(&MAGIC_VITALS.to_le_bytes());
    b[4] = 1;
    b[5] = 0b101;
    b[6..8].copy_from_slice(&1550u16.to_le_bytes());
    b[8..12].copy_from_slice(&725_000u32.to_le_bytes());
    b[12] = (-60i8) as u8;
    b[13] = 1;
    b[16..20].copy_from_slice(&0.75f32.to_le_bytes());
    b[20..24].copy_from_slice(&0.5f32.to_le_bytes());
    b[24..28].copy_from_slice(&99_000u32.to_le_bytes());
    let Datagram::Vitals(v) = decode_datagram(&b).unwrap() else {
        panic!("expected vitals");
    };
    assert_eq!(v.node_id, 1);
    assert!((v.breathing_bpm - 15.5).abs() < 1e-4);
    assert!((v.heart_bpm - 72.5).abs() < 1e-4);
    assert_eq!(v.rssi_dbm, Some(-60));
    assert_eq!(v.motion_energy, 0.75);
    assert_eq!(v.timestamp_ms, 99_000);
    assert_eq!(decode_datagram(&b[..31]).unwrap_err().reason(), "truncated");
}

#[test]
fn unknown_and_undecoded_magics_are_ignored_not_errors() {
    let mut unknown = vec![0u8; 40];
    unknown[..4].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    assert_eq!(
        decode_datagram(&unknown).unwrap(),
        Datagram::UnknownMagic {
            magic: 0xDEAD_BEEF,
            len: 40
        }
    );
    // Big-endian magic is not the protocol's magic.
    assert!(matches!(
        decode_datagram(&MAGIC_RAW_CSI.to_be_bytes()).unwrap(),
        Datagram::UnknownMagic { .. }
    ));
    for magic in [0xC511_0003u32, 0xC511_0004, 0xC511_0005, 0xC511_0007] {
        let mut b = magic.to_le_bytes().to_vec();
        b.extend_from_slice(&[0; 10]);
        assert_eq!(
            decode_datagram(&b).unwrap(),
            Datagram::NotDecoded { magic, len: 14 }
        );
    }
    assert_eq!(decode_datagram(&[]).unwrap_err().reason(), "truncated");
    assert_eq!(
        decode_datagram(&[0x01, 0x00, 0x11]).unwrap_err().reason(),
        "truncated"
    );
}
