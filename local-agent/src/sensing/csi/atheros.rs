//! Atheros CSI Tool (ath9k, AR93xx/AR94xx) records: the binary log its `recvCSI` writes, and the
//! CSV export some published datasets ship instead (the BreathSense study among them).
//!
//! **Binary log.** A sequence of records, each a `u16` length `L` followed by `L` bytes: a
//! 25-byte status block, `csi_len` bytes of packed CSI, then `payload_len` bytes of the frame's
//! payload. The recorder writes the length and every multi-byte status field in the byte order
//! of the machine it ran on (big-endian on the MIPS routers the tool targets, little-endian on a
//! PC), so the order is detected from the first record. Status, in order: `tstamp` u64 (the
//! card's TSF, µs), `csi_len` u16, `channel` u16 (MHz), then one byte each for `phyerr`,
//! `noise`, `rate`, `chanBW` (0 = 20 MHz, 1 = 40 MHz), `num_tones`, `nr`, `nc`, `rssi`,
//! `rssi_0..2`, then `payload_len` u16. The CSI is a little-endian bit stream of 10-bit two's
//! complement values, tone-major, then transmit stream, then receive chain, imaginary part
//! before real: `nr · nc · num_tones · 20` bits.
//!
//! **CSV export** (one folder per capture, `<prefix>_csi_real_log.csv`, `_csi_imag_log.csv`,
//! `_csi_status_log.csv`, and a `<prefix>.csv` of `key,value` settings): row `i` of each log is
//! packet `i`. The real and imaginary logs hold the tool's fixed 3 × 3 × 114 matrix in C order
//! (column `(3·rx + tx)·114 + k`), zero where the packet had no chain, stream or tone. The status
//! log holds 16 numbers printed as floats: the host's Unix time in seconds (not the card's TSF),
//! then the 15 status fields after `tstamp` in the tool's `csi_struct` order (`channel`,
//! `chanBW`, `rate`, `nr`, `nc`, `num_tones`, `noise`, `phyerr`, `rssi`, `rssi_0..2`,
//! `payload_len`, `csi_len`, `buf_len`).
//!
//! Frames come out with the shape `nr × nc` and tones in order, receive-chain major
//! ([`super::CsiShape`]). The ath9k `rssi` is dB above the noise floor, not dBm, so
//! `rssi_dbm` stays `None`.

use num_complex::Complex32;

use super::text::prepare_line;
use super::{
    CsiFrame, CsiShape, FrameMeta, ParseError, ParsedFrame, WireFormat, channel_from_freq,
};

/// Receive chains, transmit streams and tones of the tool's fixed matrix.
pub const MAX_RX: usize = 3;
pub const MAX_TX: usize = 3;
pub const MAX_TONES: usize = 114;
/// Values per row of the CSV export's real and imaginary logs.
pub const EXPORT_COLUMNS: usize = MAX_RX * MAX_TX * MAX_TONES;
/// Fields per row of the CSV export's status log.
pub const STATUS_FIELDS: usize = 16;
/// Bytes of the binary log's status block.
pub const STATUS_BYTES: usize = 25;
/// Largest binary record accepted: the recorder reads the driver into a 4096-byte buffer.
pub const MAX_RECORD_BYTES: usize = 4096;
/// The CSI values are 10-bit two's complement.
const VALUE_BITS: u32 = 10;
const VALUE_LIMIT: i32 = 1 << (VALUE_BITS - 1);

/// The per-packet status the tool reports beside the CSI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtherosStatus {
    /// Binary log: the card's TSF in seconds. CSV export: the host's Unix time in seconds.
    pub time_s: f64,
    pub channel_mhz: u16,
    /// 0 = 20 MHz, 1 = 40 MHz.
    pub chan_bw: u8,
    /// `0x80 | MCS` for HT rates.
    pub rate: u8,
    pub nr: u8,
    pub nc: u8,
    pub num_tones: u8,
    pub noise: u8,
    pub phyerr: u8,
    /// dB above the noise floor, combined and per receive chain.
    pub rssi: u8,
    pub rssi_chains: [u8; 3],
    pub payload_len: u16,
    pub csi_len: u16,
}

impl AtherosStatus {
    /// Checks the dimensions before any CSI is read with them.
    fn validate(&self) -> Result<(), ParseError> {
        if !self.time_s.is_finite() {
            return Err(ParseError::NonFiniteTimestamp);
        }
        if !(1..=MAX_RX as u8).contains(&self.nr) {
            return Err(ParseError::invalid("nr", &self.nr.to_string()));
        }
        if !(1..=MAX_TX as u8).contains(&self.nc) {
            return Err(ParseError::invalid("nc", &self.nc.to_string()));
        }
        if !(1..=MAX_TONES as u8).contains(&self.num_tones) {
            return Err(ParseError::invalid(
                "num_tones",
                &self.num_tones.to_string(),
            ));
        }
        if self.chan_bw > 1 {
            return Err(ParseError::invalid("chanBW", &self.chan_bw.to_string()));
        }
        Ok(())
    }

    /// Complex values the packet carries.
    pub fn values(&self) -> usize {
        usize::from(self.nr) * usize::from(self.nc) * usize::from(self.num_tones)
    }

    pub fn shape(&self) -> CsiShape {
        CsiShape {
            rx: self.nr,
            tx: self.nc,
            bandwidth_mhz: Some(if self.chan_bw == 1 { 40 } else { 20 }),
        }
    }

    fn parsed(&self, node_id: &str, csi: Vec<Complex32>, t_s: f64) -> ParsedFrame {
        ParsedFrame {
            frame: CsiFrame {
                node_id: node_id.to_string(),
                t_s,
                rssi_dbm: None,
                channel: channel_from_freq(u32::from(self.channel_mhz)),
                format: WireFormat::AtherosCsiTool,
                csi,
                shape: self.shape(),
            },
            meta: FrameMeta {
                rate: Some(u16::from(self.rate)),
                mcs: (self.rate & 0x80 != 0).then_some(self.rate & 0x7f),
                sig_mode: Some(u8::from(self.rate & 0x80 != 0)),
                bandwidth_mhz: Some(if self.chan_bw == 1 { 40 } else { 20 }),
                declared_len: Some(usize::from(self.csi_len)),
                freq_mhz: Some(u32::from(self.channel_mhz)),
                n_antennas: Some(self.nr),
                ..FrameMeta::default()
            },
        }
    }
}

/// A status field printed as a float that must hold an integer of type `T`.
fn int_field<T: TryFrom<i64>>(s: &str, field: &'static str) -> Result<T, ParseError> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| ParseError::invalid(field, s))?;
    if !v.is_finite() || v.fract() != 0.0 || v.abs() > 1e15 {
        return Err(ParseError::invalid(field, s));
    }
    T::try_from(v as i64).map_err(|_| ParseError::invalid(field, s))
}

/// One row of the CSV export's status log.
pub fn parse_status_line(line: &str) -> Result<AtherosStatus, ParseError> {
    let line = prepare_line(line)?.trim();
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != STATUS_FIELDS {
        return Err(ParseError::FieldCount {
            expected: "16",
            found: f.len(),
        });
    }
    let time_s: f64 = f[0]
        .trim()
        .parse()
        .map_err(|_| ParseError::invalid("time", f[0]))?;
    if !time_s.is_finite() {
        return Err(ParseError::NonFiniteTimestamp);
    }
    let status = AtherosStatus {
        time_s,
        channel_mhz: int_field(f[1], "channel")?,
        chan_bw: int_field(f[2], "chanBW")?,
        rate: int_field(f[3], "rate")?,
        nr: int_field(f[4], "nr")?,
        nc: int_field(f[5], "nc")?,
        num_tones: int_field(f[6], "num_tones")?,
        noise: int_field(f[7], "noise")?,
        phyerr: int_field(f[8], "phyerr")?,
        rssi: int_field(f[9], "rssi")?,
        rssi_chains: [
            int_field(f[10], "rssi_0")?,
            int_field(f[11], "rssi_1")?,
            int_field(f[12], "rssi_2")?,
        ],
        payload_len: int_field(f[13], "payload_len")?,
        csi_len: int_field(f[14], "csi_len")?,
    };
    int_field::<u16>(f[15], "buf_len")?;
    status.validate()?;
    Ok(status)
}

/// One row of the CSV export's real or imaginary log into `out` (cleared first): exactly
/// [`EXPORT_COLUMNS`] integers within the 10-bit range.
pub fn parse_export_row(line: &str, out: &mut Vec<i16>) -> Result<(), ParseError> {
    out.clear();
    let line = prepare_line(line)?.trim();
    for (i, v) in line.split(',').enumerate() {
        if i >= EXPORT_COLUMNS {
            return Err(ParseError::FieldCount {
                expected: "1026",
                found: line.split(',').count(),
            });
        }
        let x: i32 = v
            .trim()
            .parse()
            .map_err(|_| ParseError::invalid("csi", v))?;
        if !(-VALUE_LIMIT..VALUE_LIMIT).contains(&x) {
            return Err(ParseError::invalid("csi", v));
        }
        out.push(x as i16);
    }
    if out.len() != EXPORT_COLUMNS {
        return Err(ParseError::FieldCount {
            expected: "1026",
            found: out.len(),
        });
    }
    Ok(())
}

/// Builds a frame from one packet of the CSV export: its status row and its real and imaginary
/// rows (already parsed). `t_s` is the status log's host time.
pub fn frame_from_export(
    status: &AtherosStatus,
    real: &[i16],
    imag: &[i16],
    node_id: &str,
) -> Result<ParsedFrame, ParseError> {
    status.validate()?;
    if real.len() != EXPORT_COLUMNS || imag.len() != EXPORT_COLUMNS {
        return Err(ParseError::LengthMismatch {
            expected: EXPORT_COLUMNS,
            got: real.len().min(imag.len()),
        });
    }
    let (nr, nc, tones) = (
        usize::from(status.nr),
        usize::from(status.nc),
        usize::from(status.num_tones),
    );
    let mut csi = Vec::with_capacity(status.values());
    for rx in 0..nr {
        for tx in 0..nc {
            let base = (MAX_TX * rx + tx) * MAX_TONES;
            for k in 0..tones {
                csi.push(Complex32::new(
                    f32::from(real[base + k]),
                    f32::from(imag[base + k]),
                ));
            }
        }
    }
    if csi.iter().all(|c| c.re == 0.0 && c.im == 0.0) {
        return Err(ParseError::EmptyBuffer);
    }
    Ok(status.parsed(node_id, csi, status.time_s))
}

/// Byte order of a binary log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Self::Little => u16::from_le_bytes(b),
            Self::Big => u16::from_be_bytes(b),
        }
    }

    fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Self::Little => u64::from_le_bytes(b),
            Self::Big => u64::from_be_bytes(b),
        }
    }
}

fn array<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], ParseError> {
    b.get(at..at + N)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or(ParseError::Truncated {
            needed: at + N,
            got: b.len(),
        })
}

/// Reads the status block at the start of a binary record body.
pub fn parse_status_bytes(body: &[u8], endian: Endian) -> Result<AtherosStatus, ParseError> {
    if body.len() < STATUS_BYTES {
        return Err(ParseError::Truncated {
            needed: STATUS_BYTES,
            got: body.len(),
        });
    }
    let tsf_us = endian.u64(array(body, 0)?);
    let status = AtherosStatus {
        time_s: tsf_us as f64 / 1e6,
        csi_len: endian.u16(array(body, 8)?),
        channel_mhz: endian.u16(array(body, 10)?),
        phyerr: body[12],
        noise: body[13],
        rate: body[14],
        chan_bw: body[15],
        num_tones: body[16],
        nr: body[17],
        nc: body[18],
        rssi: body[19],
        rssi_chains: [body[20], body[21], body[22]],
        payload_len: endian.u16(array(body, 23)?),
    };
    status.validate()?;
    Ok(status)
}

/// Packed CSI bytes needed for `values` complex values.
pub fn packed_len(values: usize) -> usize {
    (values * 2 * VALUE_BITS as usize).div_ceil(8)
}

/// Unpacks the 10-bit CSI stream into frames' order (receive chain, stream, tone).
pub fn unpack_csi(
    packed: &[u8],
    nr: usize,
    nc: usize,
    tones: usize,
) -> Result<Vec<Complex32>, ParseError> {
    let n = nr * nc * tones;
    let needed = packed_len(n);
    if packed.len() < needed {
        return Err(ParseError::Truncated {
            needed,
            got: packed.len(),
        });
    }
    // Value j sits at bits 10j..10j+10 of the little-endian bit stream.
    let value = |j: usize| -> f32 {
        let bit = j * VALUE_BITS as usize;
        let byte = bit / 8;
        let mut word = 0u32;
        for (i, b) in packed.iter().skip(byte).take(3).enumerate() {
            word |= u32::from(*b) << (8 * i);
        }
        let raw = ((word >> (bit % 8)) & ((1 << VALUE_BITS) - 1)) as i32;
        let signed = if raw >= VALUE_LIMIT {
            raw - 2 * VALUE_LIMIT
        } else {
            raw
        };
        signed as f32
    };
    let mut csi = vec![Complex32::new(0.0, 0.0); n];
    let mut j = 0;
    for k in 0..tones {
        for tx in 0..nc {
            for rx in 0..nr {
                let im = value(j);
                let re = value(j + 1);
                j += 2;
                csi[(rx * nc + tx) * tones + k] = Complex32::new(re, im);
            }
        }
    }
    Ok(csi)
}

/// Packs CSI (frame order) into the tool's 10-bit stream; values are rounded and clamped to
/// the 10-bit range. The inverse of [`unpack_csi`], for tests and tools that write logs.
pub fn pack_csi(csi: &[Complex32], nr: usize, nc: usize, tones: usize) -> Vec<u8> {
    let n = nr * nc * tones;
    let mut out = vec![0u8; packed_len(n)];
    let mut put = |j: usize, v: f32| {
        let q = (v.round() as i32).clamp(-VALUE_LIMIT, VALUE_LIMIT - 1);
        let raw = (q & ((1 << VALUE_BITS) - 1)) as u32;
        let bit = j * VALUE_BITS as usize;
        for i in 0..VALUE_BITS as usize {
            if raw & (1 << i) != 0 {
                out[(bit + i) / 8] |= 1 << ((bit + i) % 8);
            }
        }
    };
    let mut j = 0;
    for k in 0..tones {
        for tx in 0..nc {
            for rx in 0..nr {
                let c = csi
                    .get((rx * nc + tx) * tones + k)
                    .copied()
                    .unwrap_or_default();
                put(j, c.im);
                put(j + 1, c.re);
                j += 2;
            }
        }
    }
    out
}

/// Decodes one binary record body (the bytes after its `u16` length).
pub fn parse_record(body: &[u8], endian: Endian, node_id: &str) -> Result<ParsedFrame, ParseError> {
    if body.len() > MAX_RECORD_BYTES {
        return Err(ParseError::TooLong {
            len: body.len(),
            max: MAX_RECORD_BYTES,
        });
    }
    let status = parse_status_bytes(body, endian)?;
    let csi_len = usize::from(status.csi_len);
    let expected = STATUS_BYTES + csi_len + usize::from(status.payload_len);
    if expected != body.len() {
        return Err(ParseError::LengthMismatch {
            expected,
            got: body.len(),
        });
    }
    if csi_len == 0 {
        return Err(ParseError::EmptyBuffer);
    }
    let packed = &body[STATUS_BYTES..STATUS_BYTES + csi_len];
    let csi = unpack_csi(
        packed,
        usize::from(status.nr),
        usize::from(status.nc),
        usize::from(status.num_tones),
    )?;
    Ok(status.parsed(node_id, csi, status.time_s))
}

/// Serialises a record (length prefix included), for tests and converters.
pub fn record_bytes(status: &AtherosStatus, csi: &[Complex32], endian: Endian) -> Vec<u8> {
    let packed = pack_csi(
        csi,
        usize::from(status.nr),
        usize::from(status.nc),
        usize::from(status.num_tones),
    );
    let payload = vec![0u8; usize::from(status.payload_len)];
    let body_len = STATUS_BYTES + packed.len() + payload.len();
    let mut out = Vec::with_capacity(2 + body_len);
    let u16b = |v: u16| match endian {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    };
    let tsf = (status.time_s * 1e6).round().max(0.0) as u64;
    out.extend_from_slice(&u16b(u16::try_from(body_len).unwrap_or(u16::MAX)));
    out.extend_from_slice(&match endian {
        Endian::Little => tsf.to_le_bytes(),
        Endian::Big => tsf.to_be_bytes(),
    });
    out.extend_from_slice(&u16b(u16::try_from(packed.len()).unwrap_or(u16::MAX)));
    out.extend_from_slice(&u16b(status.channel_mhz));
    out.extend_from_slice(&[
        status.phyerr,
        status.noise,
        status.rate,
        status.chan_bw,
        status.num_tones,
        status.nr,
        status.nc,
        status.rssi,
        status.rssi_chains[0],
        status.rssi_chains[1],
        status.rssi_chains[2],
    ]);
    out.extend_from_slice(&u16b(status.payload_len));
    out.extend_from_slice(&packed);
    out.extend_from_slice(&payload);
    out
}

/// The byte order under which `head` (the start of a file) reads as a valid first record, or
/// `None` when it is not an Atheros CSI Tool log. Little-endian is tried first.
pub fn detect_endian(head: &[u8]) -> Option<Endian> {
    [Endian::Little, Endian::Big].into_iter().find(|&e| {
        let Ok(len) = array::<2>(head, 0).map(|b| usize::from(e.u16(b))) else {
            return false;
        };
        let Some(body) = head.get(2..) else {
            return false;
        };
        let Ok(status) = parse_status_bytes(body, e) else {
            return false;
        };
        len <= MAX_RECORD_BYTES
            && len == STATUS_BYTES + usize::from(status.csi_len) + usize::from(status.payload_len)
            && usize::from(status.csi_len) >= packed_len(status.values())
            && usize::from(status.csi_len) <= packed_len(status.values()) + 2
    })
}

/// Splits a whole binary log held in memory into record bodies (used by the fuzz target and
/// tests; replay streams the file instead). Stops at a truncated tail.
pub fn split_records(bytes: &[u8], endian: Endian) -> impl Iterator<Item = &[u8]> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let len = usize::from(endian.u16(array(bytes, at).ok()?));
        let body = bytes.get(at + 2..at + 2 + len)?;
        at += 2 + len;
        Some(body)
    })
}

/// The `key,value` settings file of a CSV export (`config0001.csv`), header line skipped.
/// Malformed lines are ignored: nothing here is needed to read the CSI.
pub fn parse_settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(1)
        .take(1000)
        .filter_map(|l| {
            let (k, v) = l.split_once(',')?;
            let k = k.trim();
            (!k.is_empty() && k.len() <= 64).then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> AtherosStatus {
        AtherosStatus {
            time_s: 12.5,
            channel_mhz: 5200,
            chan_bw: 0,
            rate: 135,
            nr: 3,
            nc: 2,
            num_tones: 56,
            noise: 0,
            phyerr: 7,
            rssi: 36,
            rssi_chains: [25, 33, 32],
            payload_len: 10,
            csi_len: 840,
        }
    }

    fn csi(n: usize) -> Vec<Complex32> {
        (0..n)
            .map(|i| {
                let i = i as i32;
                Complex32::new(
                    ((i * 37) % 1000 - 500) as f32,
                    ((i * 91) % 1023 - 512) as f32,
                )
            })
            .collect()
    }

    #[test]
    fn binary_records_round_trip_in_both_byte_orders() {
        let s = status();
        let values = csi(s.values());
        for endian in [Endian::Little, Endian::Big] {
            let bytes = record_bytes(&s, &values, endian);
            assert_eq!(detect_endian(&bytes), Some(endian));
            let bodies: Vec<&[u8]> = split_records(&bytes, endian).collect();
            assert_eq!(bodies.len(), 1);
            let p = parse_record(bodies[0], endian, "dev").unwrap();
            assert_eq!(p.frame.csi, values);
            assert_eq!(p.frame.shape.rx, 3);
            assert_eq!(p.frame.shape.tx, 2);
            assert_eq!(p.frame.shape.bandwidth_mhz, Some(20));
            assert_eq!(p.frame.channel, Some(40));
            assert_eq!(p.meta.mcs, Some(7));
            assert!((p.frame.t_s - 12.5).abs() < 1e-9);
        }
    }

    #[test]
    fn unpacking_follows_the_tools_bit_order() {
        // imag then real, 10 bits each, LSB first: -1 (0x3FF) then 5.
        let raw: u32 = 0x3FF | (5 << 10);
        let packed = [raw as u8, (raw >> 8) as u8, (raw >> 16) as u8];
        let v = unpack_csi(&packed, 1, 1, 1).unwrap();
        assert_eq!(v, vec![Complex32::new(5.0, -1.0)]);
    }

    #[test]
    fn malformed_binary_records_give_the_right_reason() {
        let s = status();
        let good = record_bytes(&s, &csi(s.values()), Endian::Little);
        let body = &good[2..];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (body[..10].to_vec(), "truncated"),
            (body[..body.len() - 1].to_vec(), "length_mismatch"),
            (
                {
                    let mut b = body.to_vec();
                    b[17] = 4;
                    b
                },
                "invalid_field",
            ),
            (
                {
                    let mut b = body.to_vec();
                    b[16] = 0;
                    b
                },
                "invalid_field",
            ),
            (
                {
                    let mut b = body.to_vec();
                    b[8] = 0;
                    b[9] = 0;
                    b.truncate(STATUS_BYTES);
                    b.extend_from_slice(&[0; 10]);
                    b
                },
                "empty_buffer",
            ),
            (vec![0u8; MAX_RECORD_BYTES + 1], "too_long"),
        ];
        for (b, reason) in cases {
            let err = parse_record(&b, Endian::Little, "d").unwrap_err();
            assert_eq!(err.reason(), reason, "{err}");
        }
        assert_eq!(detect_endian(b"CSI_DATA,1,2,3,4,5,6,7,8,9,0,1,2,3,4"), None);
        assert_eq!(detect_endian(&[]), None);
    }

    fn export_row(values: &[(usize, i16)]) -> String {
        let mut row = vec![0i16; EXPORT_COLUMNS];
        for (i, v) in values {
            row[*i] = *v;
        }
        row.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn export_rows_map_columns_to_chains_streams_and_tones() {
        let st = parse_status_line(
            "1544131749.912208,5200.0,0.0,135.0,3.0,2.0,56.0,0.0,7.0,36.0,25.0,33.0,32.0,1040.0,840.0,1905.0",
        )
        .unwrap();
        assert_eq!((st.nr, st.nc, st.num_tones), (3, 2, 56));
        let mut re = Vec::new();
        let mut im = Vec::new();
        // rx 2, tx 1, tone 55 is column (3·2 + 1)·114 + 55.
        parse_export_row(&export_row(&[(0, 7), (7 * 114 + 55, -3)]), &mut re).unwrap();
        parse_export_row(&export_row(&[(0, 1), (114 + 2, 9)]), &mut im).unwrap();
        let p = frame_from_export(&st, &re, &im, "BPM06").unwrap();
        assert_eq!(p.frame.csi.len(), 336);
        assert_eq!(p.frame.csi[0], Complex32::new(7.0, 1.0));
        // rx 0, tx 1, tone 2 → block 1.
        assert_eq!(p.frame.csi[56 + 2], Complex32::new(0.0, 9.0));
        // rx 2, tx 1, tone 55 → block 5, last tone.
        assert_eq!(p.frame.csi[5 * 56 + 55], Complex32::new(-3.0, 0.0));
        assert!((p.frame.t_s - 1_544_131_749.912_208).abs() < 1e-6);
        assert_eq!(p.frame.format, WireFormat::AtherosCsiTool);
    }

    #[test]
    fn malformed_export_rows_give_the_right_reason() {
        let good =
            "1.5,5200.0,0.0,135.0,3.0,2.0,56.0,0.0,7.0,36.0,25.0,33.0,32.0,1040.0,840.0,1905.0";
        let cases: Vec<(String, &str)> = vec![
            (good.replacen("1.5,", "", 1), "field_count"),
            (good.replacen("1.5", "NaN", 1), "non_finite_timestamp"),
            (good.replacen("1.5", "x", 1), "invalid_field"),
            (good.replace(",3.0,2.0,", ",3.5,2.0,"), "invalid_field"),
            (good.replace(",3.0,2.0,", ",9.0,2.0,"), "invalid_field"),
            (good.replace(",56.0,", ",300.0,"), "invalid_field"),
            (good.replace("5200.0", "-1"), "invalid_field"),
            (String::new(), "empty"),
        ];
        for (line, reason) in cases {
            let err = parse_status_line(&line).unwrap_err();
            assert_eq!(err.reason(), reason, "{line}: {err}");
        }
        let mut out = Vec::new();
        let row = export_row(&[]);
        let cases: Vec<(String, &str)> = vec![
            (format!("{row},1"), "field_count"),
            (row.replacen("0,", "", 1), "field_count"),
            (row.replacen('0', "512", 1), "invalid_field"),
            (row.replacen('0', "1.5", 1), "invalid_field"),
            (row.replacen('0', "", 1), "invalid_field"),
        ];
        for (line, reason) in cases {
            let err = parse_export_row(&line, &mut out).unwrap_err();
            assert_eq!(err.reason(), reason, "{err}");
        }
        let st = parse_status_line(good).unwrap();
        let zeros = vec![0i16; EXPORT_COLUMNS];
        let err = frame_from_export(&st, &zeros, &zeros, "n").unwrap_err();
        assert_eq!(err.reason(), "empty_buffer");
        let err = frame_from_export(&st, &zeros[1..], &zeros, "n").unwrap_err();
        assert_eq!(err.reason(), "length_mismatch");
    }

    #[test]
    fn settings_are_key_value_pairs() {
        let s = parse_settings("Var1,Value\nmm,1\nbpm,6\nPattern,\n\nbroken\n");
        assert_eq!(
            s,
            vec![
                ("mm".into(), "1".into()),
                ("bpm".into(), "6".into()),
                ("Pattern".into(), String::new())
            ]
        );
    }
}
