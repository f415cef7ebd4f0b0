//! esp-csi `CSI_DATA` serial lines (sensing notes §3.1).
//!
//! Two layouts exist: the classic 25-field line (ESP32, S2, S3, C3) and the 15-field C5/C6
//! line. The last field is `"[b0,b1,...]"`, which contains commas itself, so the header is split
//! only up to the opening bracket and the field count decides the variant.

use super::layout::{ChipFamily, SecondaryChannel, layout_for};
use super::text::{flag, int8_values, mac, micros_to_s, num, prepare_line};
use super::{
    CsiFrame, FrameMeta, ParseError, ParsedFrame, WireFormat, csi_from_buffer, plausible_rssi,
    shape_for_layout,
};

/// Header fields before `data` in the classic line.
const CLASSIC_HEAD: usize = 24;
/// Header fields before `data` in the C5/C6 line.
const C5_HEAD: usize = 14;

/// Decodes one esp-csi `CSI_DATA` line (classic or C5/C6, told apart by field count).
///
/// `node_id` is the transmitter MAC (the line's `id`/`seq` is a packet counter, kept as
/// `meta.sequence`); `t_s` is `local_timestamp` (µs on the node's clock) in seconds. The buffer
/// is sized by counting its values; `len` is kept as `meta.declared_len`.
pub fn parse_esp_csi_line(line: &str) -> Result<ParsedFrame, ParseError> {
    let line = prepare_line(line)?.trim();
    if !line.starts_with("CSI_DATA,") {
        return Err(ParseError::NotCsi);
    }
    let Some(bracket) = line.find('[') else {
        return Err(ParseError::FieldCount {
            expected: "25 or 15",
            found: line.split(',').count(),
        });
    };
    // The header ends with `,` or `,"` before the bracket.
    let head = line[..bracket].trim_end();
    let head = head.strip_suffix('"').unwrap_or(head).trim_end();
    let Some(head) = head.strip_suffix(',') else {
        return Err(ParseError::MalformedBuffer(
            "data field does not follow a comma",
        ));
    };
    let fields: Vec<&str> = head.split(',').collect();
    let data = &line[bracket..];
    let data = data.strip_suffix('"').unwrap_or(data).trim_end();
    match fields.len() {
        CLASSIC_HEAD => parse_classic(&fields, data),
        C5_HEAD => parse_c5(&fields, data),
        n => Err(ParseError::FieldCount {
            expected: "25 or 15",
            found: n + 1,
        }),
    }
}

/// The classic ESP32 radio metadata (`wifi_pkt_rx_ctrl_t`): fields 2..=21 of both the esp-csi
/// classic line and the ESP32-CSI-Tool row, which print the same structure in the same order.
pub(crate) struct RxCtrl {
    pub mac: String,
    pub rssi: i16,
    rate: u16,
    sig_mode: u8,
    mcs: u8,
    bandwidth: bool,
    stbc: u8,
    noise_floor: i16,
    pub channel: u16,
    pub secondary: SecondaryChannel,
    pub local_us: u64,
}

impl RxCtrl {
    /// Parses fields 2..=21; `f` must hold at least 22 fields (callers check the count first).
    pub(crate) fn parse(f: &[&str]) -> Result<Self, ParseError> {
        if f.len() < 22 {
            return Err(ParseError::FieldCount {
                expected: "at least 22",
                found: f.len(),
            });
        }
        let ctrl = Self {
            mac: mac(f[2])?,
            rssi: rssi(f[3])?,
            rate: num(f[4], "rate")?,
            sig_mode: num(f[5], "sig_mode")?,
            mcs: num(f[6], "mcs")?,
            bandwidth: flag(f[7], "bandwidth")?,
            stbc: num(f[11], "stbc")?,
            noise_floor: num(f[14], "noise_floor")?,
            channel: channel(f[16])?,
            secondary: num::<u8>(f[17], "secondary_channel")
                .ok()
                .and_then(SecondaryChannel::from_code)
                .ok_or_else(|| ParseError::invalid("secondary_channel", f[17]))?,
            local_us: num(f[18], "local_timestamp")?,
        };
        // Validated for well-formedness only; nothing downstream uses them.
        for (i, name) in [
            (8, "smoothing"),
            (9, "not_sounding"),
            (10, "aggregation"),
            (12, "fec_coding"),
            (13, "sgi"),
            (19, "ant"),
        ] {
            num::<u8>(f[i], name)?;
        }
        num::<u32>(f[15], "ampdu_cnt")?;
        num::<u32>(f[20], "sig_len")?;
        num::<u32>(f[21], "rx_state")?;
        Ok(ctrl)
    }

    /// The metadata every classic-ESP32 format shares, for a buffer of `buffer_bytes`.
    pub(crate) fn meta(&self, buffer_bytes: usize, first_word_invalid: bool) -> FrameMeta {
        FrameMeta {
            mac: Some(self.mac.clone()),
            noise_floor_dbm: Some(self.noise_floor),
            rate: Some(self.rate),
            sig_mode: Some(self.sig_mode),
            mcs: Some(self.mcs),
            bandwidth_mhz: Some(if self.bandwidth { 40 } else { 20 }),
            secondary_channel: Some(self.secondary),
            stbc: Some(self.stbc != 0),
            first_word_invalid,
            layout: layout_for(buffer_bytes, self.secondary, ChipFamily::Classic),
            ..FrameMeta::default()
        }
    }
}

fn parse_classic(f: &[&str], data: &str) -> Result<ParsedFrame, ParseError> {
    let sequence: u32 = num(f[1], "id")?;
    let ctrl = RxCtrl::parse(f)?;
    let declared_len: usize = num(f[22], "len")?;
    let first_word_invalid = flag(f[23], "first_word")?;
    let buf = parse_comma_buffer(data)?;

    let meta = FrameMeta {
        sequence: Some(sequence),
        declared_len: Some(declared_len),
        ..ctrl.meta(buf.len(), first_word_invalid)
    };
    Ok(ParsedFrame {
        frame: CsiFrame {
            node_id: ctrl.mac,
            t_s: micros_to_s(ctrl.local_us),
            rssi_dbm: plausible_rssi(ctrl.rssi),
            channel: Some(ctrl.channel),
            format: WireFormat::EspCsi,
            csi: csi_from_buffer(&buf, first_word_invalid),
            shape: shape_for_layout(meta.layout),
        },
        meta,
    })
}

fn parse_c5(f: &[&str], data: &str) -> Result<ParsedFrame, ParseError> {
    let sequence: u32 = num(f[1], "seq")?;
    let mac = mac(f[2])?;
    let rssi: i16 = rssi(f[3])?;
    let rate: u16 = num(f[4], "rate")?;
    let noise_floor: i16 = num(f[5], "noise_floor")?;
    let fft_gain: i32 = num(f[6], "fft_gain")?;
    let agc_gain: i32 = num(f[7], "agc_gain")?;
    let channel: u16 = channel(f[8])?;
    let local_us: u64 = num(f[9], "local_timestamp")?;
    num::<u32>(f[10], "sig_len")?;
    num::<u32>(f[11], "rx_state")?;
    let declared_len: usize = num(f[12], "len")?;
    let first_word_invalid = flag(f[13], "first_word")?;
    let buf = parse_comma_buffer(data)?;

    let meta = FrameMeta {
        mac: Some(mac.clone()),
        sequence: Some(sequence),
        noise_floor_dbm: Some(noise_floor),
        rate: Some(rate),
        first_word_invalid,
        declared_len: Some(declared_len),
        layout: layout_for(buf.len(), SecondaryChannel::None, ChipFamily::C5C6),
        gain: Some((agc_gain, fft_gain)),
        ..FrameMeta::default()
    };
    Ok(ParsedFrame {
        frame: CsiFrame {
            node_id: mac,
            t_s: micros_to_s(local_us),
            rssi_dbm: plausible_rssi(rssi),
            channel: Some(channel),
            format: WireFormat::EspCsi,
            csi: csi_from_buffer(&buf, first_word_invalid),
            shape: shape_for_layout(meta.layout),
        },
        meta,
    })
}

fn rssi(s: &str) -> Result<i16, ParseError> {
    let v: i16 = num(s, "rssi")?;
    if (-128..=127).contains(&v) {
        Ok(v)
    } else {
        Err(ParseError::invalid("rssi", s))
    }
}

/// Channels run 1–14 (2.4 GHz) and up to 177 (5 GHz); 0 or larger values mean a corrupt line.
pub(crate) fn channel(s: &str) -> Result<u16, ParseError> {
    let v: u16 = num(s, "channel")?;
    if (1..=196).contains(&v) {
        Ok(v)
    } else {
        Err(ParseError::invalid("channel", s))
    }
}

/// Parses `[b0,b1,...]` into int8 values, counting them rather than trusting `len`.
fn parse_comma_buffer(data: &str) -> Result<Vec<i8>, ParseError> {
    let inner = data
        .strip_prefix('[')
        .ok_or(ParseError::MalformedBuffer("missing '['"))?
        .strip_suffix(']')
        .ok_or(ParseError::MalformedBuffer("missing ']' (truncated line?)"))?;
    if inner.trim().is_empty() {
        return Err(ParseError::EmptyBuffer);
    }
    int8_values(inner.split(','), "data")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensing::csi::layout::PpduKind;

    fn classic(first_word: u8, data: &str) -> String {
        format!(
            "CSI_DATA,7,AA:BB:cc:dd:ee:01,-61,11,1,4,0,0,0,1,0,0,0,-94,0,6,0,1500000,0,60,0,{},{first_word},\"[{data}]\"",
            data.split(',').count()
        )
    }

    #[test]
    fn classic_line_decodes_fields_and_imag_real_order() {
        let line = classic(0, "1,2,3,4");
        let p = parse_esp_csi_line(&line).unwrap();
        assert_eq!(p.frame.node_id, "aa:bb:cc:dd:ee:01");
        assert_eq!(p.frame.t_s, 1.5);
        assert_eq!(p.frame.rssi_dbm, Some(-61));
        assert_eq!(p.frame.channel, Some(6));
        assert_eq!(p.frame.format, WireFormat::EspCsi);
        // k = real buf[2k+1] + i buf[2k]
        assert_eq!(p.frame.csi.len(), 2);
        assert_eq!((p.frame.csi[0].re, p.frame.csi[0].im), (2.0, 1.0));
        assert_eq!((p.frame.csi[1].re, p.frame.csi[1].im), (4.0, 3.0));
        assert_eq!(p.meta.sequence, Some(7));
        assert_eq!(p.meta.noise_floor_dbm, Some(-94));
        assert_eq!(p.meta.bandwidth_mhz, Some(20));
        assert_eq!(p.meta.sig_mode, Some(1));
        assert_eq!(p.meta.mcs, Some(4));
        assert!(!p.meta.first_word_invalid);
    }

    #[test]
    fn classic_first_word_invalid_zeroes_two_subcarriers() {
        let data = vec!["9"; 128].join(",");
        let p = parse_esp_csi_line(&classic(1, &data)).unwrap();
        assert_eq!(p.frame.csi.len(), 64);
        assert_eq!(p.frame.csi[0].norm(), 0.0);
        assert_eq!(p.frame.csi[1].norm(), 0.0);
        assert!(p.frame.csi[2].norm() > 0.0);
        assert_eq!(p.meta.layout.map(|l| l.ppdu), Some(PpduKind::NonHt));
    }

    #[test]
    fn unquoted_data_and_crlf_are_accepted() {
        let line = classic(0, "1,2").replace('"', "") + "\r\n";
        assert_eq!(parse_esp_csi_line(&line).unwrap().frame.csi.len(), 1);
    }

    #[test]
    fn c5_line_decodes() {
        let data = vec!["-3"; 106].join(",");
        let line = format!(
            "CSI_DATA,12,10:20:30:40:50:60,-70,11,-96,0,40,36,2000000,60,0,106,0,\"[{data}]\""
        );
        let p = parse_esp_csi_line(&line).unwrap();
        assert_eq!(p.frame.csi.len(), 53);
        assert_eq!(p.frame.channel, Some(36));
        assert_eq!(p.frame.t_s, 2.0);
        assert_eq!(p.meta.sequence, Some(12));
        assert_eq!(p.meta.layout.map(|l| l.family), Some(ChipFamily::C5C6));
    }

    #[test]
    fn malformed_lines_give_the_right_reason() {
        let good = classic(0, "1,2,3,4");
        let cases: Vec<(String, &str)> = vec![
            (good[..good.len() - 4].to_string(), "malformed_buffer"),
            (good[..40].to_string(), "field_count"),
            (good.replace("-61", "x61"), "invalid_field"),
            (
                good.replace(",6,0,1500000", ",6,0,1500000,9"),
                "field_count",
            ),
            (classic(0, "1,2,3"), "odd_buffer"),
            (classic(0, "1,2,300,4"), "invalid_field"),
            (classic(0, ""), "empty_buffer"),
            ("hello world".to_string(), "not_csi"),
            ("".to_string(), "empty"),
            (classic(0, &vec!["1"; 2050].join(",")), "buffer_too_large"),
            (format!("CSI_DATA,{}", "1,".repeat(20_000)), "too_long"),
        ];
        for (line, reason) in cases {
            let err = parse_esp_csi_line(&line).unwrap_err();
            assert_eq!(err.reason(), reason, "{line:.80} -> {err}");
        }
    }
}
