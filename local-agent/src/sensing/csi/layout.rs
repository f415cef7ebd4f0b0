//! Which subcarrier each buffer slot holds, and which subcarriers are null.
//!
//! The radio does not label its buffer: the layout follows from the buffer length, the chip
//! family and the secondary channel (sensing notes §3.3). Null, guard and DC subcarriers read as
//! zero; they are detected from the data rather than hard-coded, because the bundled captures
//! show different zero sets per chip.

use std::collections::BTreeMap;

use num_complex::Complex32;

/// Position of the 40 MHz secondary channel (ESP-IDF `wifi_second_chan_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecondaryChannel {
    None,
    Above,
    Below,
}

impl SecondaryChannel {
    /// From the ESP-IDF code: 0 none, 1 above, 2 below.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::None),
            1 => Some(Self::Above),
            2 => Some(Self::Below),
            _ => None,
        }
    }
}

/// Chip families differ in buffer order: the classic MAC (ESP32, S2, S3, C3) reports LTFs in
/// FFT order, the C5/C6 report one centred run with DC in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChipFamily {
    Classic,
    C5C6,
}

/// The PPDU kind a buffer length implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PpduKind {
    NonHt,
    Ht20,
    Ht20Stbc,
    Ht40,
    Ht40Stbc,
    /// C5/C6 HE20 (490 bytes).
    He20,
    /// C5/C6 64-subcarrier capture as recorded by ESPectre (128 bytes, centred).
    Centred64,
}

/// Which training field a subcarrier was estimated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LtfField {
    Lltf,
    HtLtf,
    StbcHtLtf,
    HeLtf,
}

/// A buffer layout: enough to map a subcarrier slot to (training field, subcarrier index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubcarrierLayout {
    pub family: ChipFamily,
    pub ppdu: PpduKind,
    pub secondary: SecondaryChannel,
    /// Buffer length in bytes this layout describes.
    pub buffer_bytes: usize,
}

/// Inclusive index runs, in buffer order.
type Runs = &'static [(i16, i16)];

const LLTF_FFT: Runs = &[(0, 31), (-32, -1)];
const LOW_64: Runs = &[(0, 63)];
const HIGH_64: Runs = &[(-64, -1)];
const LOW_63: Runs = &[(0, 62)];
const HIGH_62: Runs = &[(-62, -1)];
const HT40: Runs = &[(0, 63), (-64, -1)];
const HT40_STBC: Runs = &[(0, 60), (-60, -1)];
const C5_LLTF: Runs = &[(-26, 26)];
const C5_HT20: Runs = &[(-28, 28)];
const C5_HT40: Runs = &[(-58, 58)];
const C5_HE20: Runs = &[(-122, 122)];
const C5_64: Runs = &[(-32, 31)];

impl SubcarrierLayout {
    fn segments(&self) -> &'static [(LtfField, Runs)] {
        use LtfField::*;
        use PpduKind::*;
        use SecondaryChannel as S;
        match (self.family, self.ppdu, self.secondary) {
            (ChipFamily::Classic, NonHt, S::None) => &[(Lltf, LLTF_FFT)],
            (ChipFamily::Classic, NonHt, S::Below) => &[(Lltf, LOW_64)],
            (ChipFamily::Classic, NonHt, S::Above) => &[(Lltf, HIGH_64)],
            (ChipFamily::Classic, Ht20, S::None) => &[(Lltf, LLTF_FFT), (HtLtf, LLTF_FFT)],
            (ChipFamily::Classic, Ht20, S::Below) => &[(Lltf, LOW_64), (HtLtf, LOW_64)],
            (ChipFamily::Classic, Ht20, S::Above) => &[(Lltf, HIGH_64), (HtLtf, HIGH_64)],
            (ChipFamily::Classic, Ht20Stbc, S::None) => {
                &[(Lltf, LLTF_FFT), (HtLtf, LLTF_FFT), (StbcHtLtf, LLTF_FFT)]
            }
            (ChipFamily::Classic, Ht20Stbc, S::Below) => {
                &[(Lltf, LOW_64), (HtLtf, LOW_63), (StbcHtLtf, LOW_63)]
            }
            (ChipFamily::Classic, Ht20Stbc, S::Above) => {
                &[(Lltf, HIGH_64), (HtLtf, HIGH_62), (StbcHtLtf, HIGH_62)]
            }
            (ChipFamily::Classic, Ht40, S::Below) => &[(Lltf, LOW_64), (HtLtf, HT40)],
            (ChipFamily::Classic, Ht40, S::Above) => &[(Lltf, HIGH_64), (HtLtf, HT40)],
            (ChipFamily::Classic, Ht40Stbc, S::Below) => {
                &[(Lltf, LOW_64), (HtLtf, HT40_STBC), (StbcHtLtf, HT40_STBC)]
            }
            (ChipFamily::Classic, Ht40Stbc, S::Above) => {
                &[(Lltf, HIGH_64), (HtLtf, HT40_STBC), (StbcHtLtf, HT40_STBC)]
            }
            (ChipFamily::C5C6, NonHt, _) => &[(Lltf, C5_LLTF)],
            (ChipFamily::C5C6, Ht20, _) => &[(HtLtf, C5_HT20)],
            (ChipFamily::C5C6, Ht20Stbc, _) => &[(HtLtf, C5_HT20), (StbcHtLtf, C5_HT20)],
            (ChipFamily::C5C6, Ht40, _) => &[(HtLtf, C5_HT40)],
            (ChipFamily::C5C6, Ht40Stbc, _) => &[(HtLtf, C5_HT40), (StbcHtLtf, C5_HT40)],
            (ChipFamily::C5C6, He20, _) => &[(HeLtf, C5_HE20)],
            (ChipFamily::C5C6, Centred64, _) => &[(Lltf, C5_64)],
            // `layout_for` never builds the remaining combinations.
            _ => &[],
        }
    }

    /// Number of subcarrier slots (buffer bytes / 2).
    pub fn n_subcarriers(&self) -> usize {
        self.buffer_bytes / 2
    }

    /// (training field, subcarrier index relative to the channel centre) for every slot, in
    /// buffer order.
    pub fn subcarrier_indices(&self) -> Vec<(LtfField, i16)> {
        self.segments()
            .iter()
            .flat_map(|&(field, runs)| {
                runs.iter()
                    .flat_map(move |&(lo, hi)| (lo..=hi).map(move |i| (field, i)))
            })
            .collect()
    }

    /// Slot range holding the legacy LTF, the part every PPDU kind shares. RuView mixes frame
    /// sizes per node; this is the series that stays comparable across them.
    pub fn lltf_slots(&self) -> std::ops::Range<usize> {
        let mut start = 0usize;
        for &(field, runs) in self.segments() {
            let len: usize = runs
                .iter()
                .map(|&(lo, hi)| usize::from((hi - lo).unsigned_abs()) + 1)
                .sum();
            if field == LtfField::Lltf {
                return start..start + len;
            }
            start += len;
        }
        0..0
    }
}

/// The layout for a buffer of `buffer_bytes` bytes, or `None` when the combination is not in
/// the known table (the buffer is still usable; only slot → index mapping is unknown).
///
/// Classic sizes follow the esp-csi table (128/256/384/380/376/612 bytes). A 384-byte buffer
/// is HT20 STBC without a secondary channel and HT40 with one. C5/C6 sizes are 106 (L-LTF),
/// 114 (HT20), 228 (HT20 STBC), 234 (HT40), 468 (HT40 STBC), 490 (HE20) and the 128-byte
/// centred capture ESPectre records; these are centred runs, secondary channel ignored.
pub fn layout_for(
    buffer_bytes: usize,
    secondary: SecondaryChannel,
    family: ChipFamily,
) -> Option<SubcarrierLayout> {
    use PpduKind::*;
    use SecondaryChannel as S;
    let ppdu = match family {
        ChipFamily::Classic => match (buffer_bytes, secondary) {
            (128, _) => NonHt,
            (256, _) => Ht20,
            (384, S::None) => Ht20Stbc,
            (380, S::Below) | (376, S::Above) => Ht20Stbc,
            (384, S::Below | S::Above) => Ht40,
            (612, S::Below | S::Above) => Ht40Stbc,
            _ => return None,
        },
        ChipFamily::C5C6 => match buffer_bytes {
            106 => NonHt,
            114 => Ht20,
            228 => Ht20Stbc,
            234 => Ht40,
            468 => Ht40Stbc,
            490 => He20,
            128 => Centred64,
            _ => return None,
        },
    };
    Some(SubcarrierLayout {
        family,
        ppdu,
        secondary,
        buffer_bytes,
    })
}

/// Slots that are exactly zero in this one frame.
pub fn zero_subcarriers(csi: &[Complex32]) -> Vec<usize> {
    csi.iter()
        .enumerate()
        .filter(|(_, c)| c.re == 0.0 && c.im == 0.0)
        .map(|(k, _)| k)
        .collect()
}

/// Learns which slots are always zero, separately per buffer length because one node can mix
/// layouts (RuView sends 64, 128 and 192 subcarriers).
///
/// A single frame can have a real subcarrier that happens to read 0+0i; only slots that stay
/// zero across every observed frame are reported as null.
#[derive(Debug, Clone, Default)]
pub struct ZeroSubcarrierTracker {
    /// Per buffer length: frames seen, and whether each slot was ever non-zero.
    by_len: BTreeMap<usize, (u64, Vec<bool>)>,
}

impl ZeroSubcarrierTracker {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observe(&mut self, csi: &[Complex32]) {
        let (frames, seen_nonzero) = self
            .by_len
            .entry(csi.len())
            .or_insert_with(|| (0, vec![false; csi.len()]));
        *frames += 1;
        for (seen, c) in seen_nonzero.iter_mut().zip(csi) {
            *seen |= c.re != 0.0 || c.im != 0.0;
        }
    }

    /// Frames observed with `n_subcarriers` slots.
    pub fn frames(&self, n_subcarriers: usize) -> u64 {
        self.by_len.get(&n_subcarriers).map_or(0, |(n, _)| *n)
    }

    /// Slots that were zero in every frame of this length; `None` if none was observed.
    pub fn always_zero(&self, n_subcarriers: usize) -> Option<Vec<usize>> {
        self.by_len.get(&n_subcarriers).map(|(_, seen)| {
            seen.iter()
                .enumerate()
                .filter(|(_, s)| !**s)
                .map(|(k, _)| k)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_classic_layout_covers_its_buffer() {
        use SecondaryChannel as S;
        for (bytes, sec) in [
            (128, S::None),
            (128, S::Below),
            (128, S::Above),
            (256, S::None),
            (256, S::Below),
            (256, S::Above),
            (384, S::None),
            (380, S::Below),
            (376, S::Above),
            (384, S::Below),
            (384, S::Above),
            (612, S::Below),
            (612, S::Above),
        ] {
            let layout = layout_for(bytes, sec, ChipFamily::Classic)
                .unwrap_or_else(|| panic!("no layout for {bytes} {sec:?}"));
            assert_eq!(
                layout.subcarrier_indices().len(),
                bytes / 2,
                "{bytes} {sec:?}"
            );
            assert_eq!(layout.lltf_slots(), 0..64);
        }
    }

    #[test]
    fn every_c5_layout_covers_its_buffer() {
        for bytes in [106, 114, 228, 234, 468, 490, 128] {
            let layout = layout_for(bytes, SecondaryChannel::None, ChipFamily::C5C6)
                .unwrap_or_else(|| panic!("no layout for {bytes}"));
            assert_eq!(layout.subcarrier_indices().len(), bytes / 2, "{bytes}");
        }
    }

    #[test]
    fn secondary_channel_disambiguates_384_bytes() {
        let stbc = layout_for(384, SecondaryChannel::None, ChipFamily::Classic);
        let ht40 = layout_for(384, SecondaryChannel::Above, ChipFamily::Classic);
        assert_eq!(stbc.map(|l| l.ppdu), Some(PpduKind::Ht20Stbc));
        assert_eq!(ht40.map(|l| l.ppdu), Some(PpduKind::Ht40));
        assert_eq!(
            layout_for(612, SecondaryChannel::None, ChipFamily::Classic),
            None
        );
        assert_eq!(
            layout_for(100, SecondaryChannel::None, ChipFamily::Classic),
            None
        );
    }

    #[test]
    fn lltf_order_is_fft_order_without_secondary() {
        let layout = layout_for(128, SecondaryChannel::None, ChipFamily::Classic).unwrap();
        let idx: Vec<i16> = layout
            .subcarrier_indices()
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(idx[0], 0);
        assert_eq!(idx[31], 31);
        assert_eq!(idx[32], -32);
        assert_eq!(idx[63], -1);
        let c5 = layout_for(128, SecondaryChannel::None, ChipFamily::C5C6).unwrap();
        assert_eq!(c5.subcarrier_indices()[32], (LtfField::Lltf, 0));
    }

    #[test]
    fn tracker_reports_only_slots_zero_in_every_frame() {
        let z = Complex32::new(0.0, 0.0);
        let o = Complex32::new(1.0, -1.0);
        let mut t = ZeroSubcarrierTracker::new();
        t.observe(&[z, z, o, z]);
        t.observe(&[z, o, o, z]);
        t.observe(&[z, o]);
        assert_eq!(t.always_zero(4), Some(vec![0, 3]));
        assert_eq!(t.always_zero(2), Some(vec![0]));
        assert_eq!(t.always_zero(3), None);
        assert_eq!(t.frames(4), 2);
        assert_eq!(zero_subcarriers(&[z, o, z]), vec![0, 2]);
    }
}
