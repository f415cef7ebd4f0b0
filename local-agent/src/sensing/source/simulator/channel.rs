//! The radio channel: subcarrier layout, the seeded static multipath and the body paths.

use num_complex::Complex64;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::f64::consts::TAU;

/// Speed of light, m/s.
pub(super) const C_M_S: f64 = 299_792_458.0;
/// OFDM subcarrier spacing of 802.11 at 20 MHz.
pub const SUBCARRIER_SPACING_HZ: f64 = 312_500.0;

/// Centre frequency of a 2.4 GHz Wi-Fi channel (1–13, and Japan's 14).
pub fn channel_centre_hz(channel: u16) -> f64 {
    if channel == 14 {
        2.484e9
    } else {
        (2407.0 + 5.0 * f64::from(channel.clamp(1, 13))) * 1e6
    }
}

/// Which frequency each buffer slot measures, and which slots the radio leaves at zero.
///
/// Counts that are multiples of 64 follow the classic ESP32 HT20 buffer: 64-slot blocks in FFT
/// order (0..31, −32..−1), the first the legacy LTF with 52 data/pilot subcarriers (±1..±26),
/// the following ones HT-LTF (and STBC HT-LTF) with 56 (±1..±28). Other counts are taken as one
/// centred block with the same guard fraction. DC and guards are exactly zero, as on the wire.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// Signed subcarrier index of each distinct frequency, ascending.
    pub indices: Vec<i32>,
    /// Per buffer slot: position in `indices`, or `None` for a null/guard/DC slot.
    pub slots: Vec<Option<usize>>,
}

impl Layout {
    pub(super) fn new(subcarriers: usize) -> Self {
        let slot_index: Vec<Option<i32>> = if subcarriers > 0 && subcarriers.is_multiple_of(64) {
            (0..subcarriers)
                .map(|slot| {
                    let block = slot / 64;
                    let i = (slot % 64) as i32;
                    let k = if i < 32 { i } else { i - 64 };
                    let edge = if block == 0 { 26 } else { 28 };
                    (k != 0 && k.abs() <= edge).then_some(k)
                })
                .collect()
        } else {
            let half = (subcarriers / 2) as i32;
            let edge = (f64::from(half) * 26.0 / 32.0).floor() as i32;
            (0..subcarriers)
                .map(|slot| {
                    let k = slot as i32 - half;
                    (k != 0 && k.abs() <= edge).then_some(k)
                })
                .collect()
        };
        let mut indices: Vec<i32> = slot_index.iter().flatten().copied().collect();
        indices.sort_unstable();
        indices.dedup();
        let slots = slot_index
            .iter()
            .map(|k| k.and_then(|k| indices.binary_search(&k).ok()))
            .collect();
        Self { indices, slots }
    }
}

/// One fixed propagation path: amplitude relative to the direct path, delay, reflection phase.
#[derive(Debug, Clone, Copy)]
struct Path {
    amplitude: f64,
    delay_s: f64,
    phase: f64,
}

/// The channel without anyone in it, precomputed per distinct frequency.
#[derive(Debug, Clone)]
pub(super) struct StaticChannel {
    /// Everything static: the direct path plus the reflections.
    pub total: Vec<Complex64>,
    /// The direct path alone, so a body can shadow it.
    pub direct: Vec<Complex64>,
    /// A weak reflection off something that creeps (curtain, door, thermal drift), scaled per
    /// frame by a slow random process so an empty room is quiet but never frozen.
    pub creeping: Vec<Complex64>,
    /// RMS magnitude of `total` over the valid subcarriers.
    pub rms: f64,
}

impl StaticChannel {
    /// Draws the room's reflections from `rng`: 6–10 paths with exponentially distributed
    /// excess delays (mean 40 ns, a furnished room's delay spread) whose amplitude decays with
    /// delay. The diffuse power is about that of the direct path (Rician K ≈ 0 dB, typical
    /// indoors), so the band shows the 6–12 dB fades seen on real ESP32 links, and a body's
    /// effect differs from subcarrier to subcarrier instead of being a common gain change that
    /// per-packet normalisation would erase.
    pub(super) fn new(
        layout: &Layout,
        centre_hz: f64,
        direct_m: f64,
        rng: &mut ChaCha8Rng,
    ) -> Self {
        let freqs_hz: Vec<f64> = layout
            .indices
            .iter()
            .map(|&k| centre_hz + f64::from(k) * SUBCARRIER_SPACING_HZ)
            .collect();
        let direct_delay = direct_m / C_M_S;
        let direct_path = Path {
            amplitude: 1.0,
            delay_s: direct_delay,
            phase: 0.0,
        };
        let count = rng.random_range(6..=10);
        let reflections: Vec<Path> = (0..count)
            .map(|_| {
                let excess = 3e-9 - 40e-9 * (1.0 - rng.random::<f64>()).ln();
                let excess = excess.min(150e-9);
                Path {
                    amplitude: rng.random_range(0.4..1.0) * (-excess / 80e-9).exp(),
                    delay_s: direct_delay + excess,
                    phase: rng.random_range(0.0..TAU),
                }
            })
            .collect();
        let creeping_path = Path {
            amplitude: 0.03,
            delay_s: direct_delay + rng.random_range(10e-9..60e-9),
            phase: rng.random_range(0.0..TAU),
        };
        let response = |paths: &[Path]| -> Vec<Complex64> {
            freqs_hz
                .iter()
                .map(|&f| {
                    paths
                        .iter()
                        .map(|p| Complex64::from_polar(p.amplitude, p.phase - TAU * f * p.delay_s))
                        .sum()
                })
                .collect()
        };
        let direct = response(&[direct_path]);
        let mut all = reflections;
        all.push(direct_path);
        let total = response(&all);
        let creeping = response(&[creeping_path]);
        let rms = if total.is_empty() {
            1.0
        } else {
            (total.iter().map(|h| h.norm_sqr()).sum::<f64>() / total.len() as f64).sqrt()
        };
        Self {
            total,
            direct,
            creeping,
            rms,
        }
    }
}

/// Adds `amplitude · exp(−j2π f τ)` for every distinct frequency to `out`, with τ the delay of a
/// path `path_m` long. One `sincos` per call; the rest is a complex rotation per subcarrier,
/// which is what keeps a frame in the low microseconds.
pub(super) fn add_path(
    out: &mut [Complex64],
    indices: &[i32],
    centre_hz: f64,
    amplitude: f64,
    path_m: f64,
    phase: f64,
) {
    let Some(&first) = indices.first() else {
        return;
    };
    if amplitude == 0.0 {
        return;
    }
    let delay = path_m / C_M_S;
    let step = Complex64::from_polar(1.0, -TAU * SUBCARRIER_SPACING_HZ * delay);
    let start_hz = centre_hz + f64::from(first) * SUBCARRIER_SPACING_HZ;
    // Reduce the carrier phase in cycles first: f·τ is ~30 cycles and f64 keeps it exact enough.
    let cycles = (start_hz * delay).fract();
    let mut rotor = Complex64::from_polar(amplitude, phase - TAU * cycles);
    let mut k = first;
    for (value, &index) in out.iter_mut().zip(indices) {
        while k < index {
            rotor *= step;
            k += 1;
        }
        *value += rotor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ht20_layout_matches_the_esp32_buffer() {
        let layout = Layout::new(64);
        let zero: Vec<usize> = (0..64).filter(|&s| layout.slots[s].is_none()).collect();
        assert_eq!(zero, vec![0, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37]);
        assert_eq!(layout.indices.len(), 52);
    }

    #[test]
    fn ht_ltf_blocks_reuse_the_legacy_frequencies_plus_two_edges() {
        let layout = Layout::new(192);
        assert_eq!(layout.indices.len(), 56);
        assert_eq!(
            layout.slots.iter().filter(|s| s.is_some()).count(),
            52 + 56 + 56
        );
    }

    #[test]
    fn add_path_matches_direct_evaluation() {
        let layout = Layout::new(64);
        let centre = channel_centre_hz(6);
        let mut out = vec![Complex64::new(0.0, 0.0); layout.indices.len()];
        add_path(&mut out, &layout.indices, centre, 0.7, 5.3, 0.4);
        for (value, &k) in out.iter().zip(&layout.indices) {
            let f = centre + f64::from(k) * SUBCARRIER_SPACING_HZ;
            let expected = Complex64::from_polar(0.7, 0.4 - TAU * f * 5.3 / C_M_S);
            assert!((value - expected).norm() < 1e-9);
        }
    }

    #[test]
    fn static_channels_are_frequency_selective() {
        let layout = Layout::new(64);
        let mut ratios = Vec::new();
        for seed in 1..=10 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ch = StaticChannel::new(&layout, channel_centre_hz(6), 4.43, &mut rng);
            let mags: Vec<f64> = ch.total.iter().map(|h| h.norm()).collect();
            let max = mags.iter().copied().fold(0.0, f64::max);
            let min = mags.iter().copied().fold(f64::INFINITY, f64::min);
            ratios.push(max / min);
        }
        ratios.sort_by(f64::total_cmp);
        // Typical indoor links fade by 6–12 dB across the band; some are nearly flat.
        assert!(ratios[5] > 2.0 && ratios[9] > 3.0, "{ratios:?}");
    }
}
