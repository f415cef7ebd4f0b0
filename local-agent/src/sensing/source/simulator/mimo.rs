//! A multi-antenna receiver: N receive × M transmit chains on a 5 GHz HT20 link, producing
//! frames shaped like the Atheros CSI Tool's (`rx · tx` blocks of 56 tones, receive-chain
//! major), so the pipeline takes the same chain-pair path on them as on the real captures.
//!
//! What it models, and what it assumes:
//! - **Geometry per chain pair.** Each antenna sits `spacing_m` from its neighbour, along the
//!   horizontal perpendicular to the link. Every chain pair gets its own static multipath (the
//!   reflections are drawn independently per pair: at half a wavelength apart the antennas see
//!   the same walls with decorrelated phases, which independent draws approximate) and its own
//!   direct-path length. The body's paths are shifted per pair by the chest's path difference to
//!   that pair's antennas (limbs and echoes take the chest's shift: an approximation that only
//!   matters while walking).
//! - **Offsets.** Every packet carries one random common phase and one timing slope (CFO/SFO,
//!   packet detection) shared by every chain, since the chains share the receiver's oscillator;
//!   each receive chain adds a fixed phase of its own (PLL start-up) and each transmit stream a
//!   fixed cyclic-shift slope. So one chain's phase is useless and `rx · conj(rx')` cancels the
//!   per-packet part, as on the real card.
//! - **Levels and noise.** Each receive chain has its own fixed level and its own AGC (the
//!   BreathSense captures' chains sit at about 95, 200 and 177 rms and jump independently by
//!   ~20 % from packet to packet); thermal noise has a fixed floor, so the weak chain has a
//!   lower SNR. Every chain pair has independent noise with the configured [`NoiseModel`]
//!   (correlation across tones, tilt, bursts; a burst hits the whole packet). Values are rounded
//!   to integers within the card's ±511 (10 bits).

use super::channel::{Layout, StaticChannel, add_path};
use super::radio::{Agc, AgcModel, Noise, NoiseModel};
use super::room::{self, Vec3};
use num_complex::{Complex32, Complex64};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::f64::consts::TAU;

/// A multi-antenna receiver configuration (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiAntenna {
    /// Receive chains (1–3 on the Atheros card).
    pub rx: u8,
    /// Transmit streams sounded per packet.
    pub tx: u8,
    /// Wi-Fi channel number reported in the frame (40 = 5200 MHz).
    pub channel: u16,
    /// Centre frequency, Hz.
    pub centre_hz: f64,
    /// Distance between neighbouring antennas of one radio, m.
    pub spacing_m: f64,
    /// Level of each receive chain relative to the mean (cycled when shorter than `rx`).
    pub chain_level: Vec<f64>,
    /// Gain behaviour of each receive chain (independent per chain).
    pub agc: AgcModel,
    /// RMS magnitude of the empty-room channel at unit level and gain.
    pub amplitude_rms: f64,
    /// Largest magnitude of a real or imaginary part (10-bit CSI: 511).
    pub full_scale: f64,
}

impl MultiAntenna {
    /// The BreathSense captures' link: 3 rx × 2 tx, 5200 MHz (channel 40), 20 MHz, 56 tones,
    /// with their chain levels and per-chain gain jitter.
    pub fn atheros_5ghz() -> Self {
        Self {
            rx: 3,
            tx: 2,
            channel: 40,
            centre_hz: 5.2e9,
            spacing_m: 0.03,
            chain_level: vec![0.6, 1.26, 1.12],
            agc: AgcModel {
                step_rate_hz: 0.0,
                glitch_probability: 0.0,
                jitter: 0.2,
                ..AgcModel::default()
            },
            amplitude_rms: 166.0,
            full_scale: 511.0,
        }
    }

    fn rx_count(&self) -> usize {
        usize::from(self.rx.max(1))
    }

    fn tx_count(&self) -> usize {
        usize::from(self.tx.max(1))
    }
}

/// The HT20 tones the Atheros CSI Tool reports: ±1..±28, in order, no DC.
pub(super) fn ht20_tones() -> Layout {
    let indices: Vec<i32> = (-28..=28).filter(|k| *k != 0).collect();
    let slots = (0..indices.len()).map(Some).collect();
    Layout { indices, slots }
}

/// One chain pair (receive chain `r`, transmit stream `t`).
#[derive(Debug, Clone)]
struct Block {
    r: usize,
    static_channel: StaticChannel,
    noise: Noise,
    rx_at: Vec3,
    tx_at: Vec3,
    /// Fixed phase of the receive chain plus the stream's cyclic shift, per block.
    fixed_phase: f64,
    csd_s: f64,
}

/// The receiver state between packets.
#[derive(Debug, Clone)]
pub(super) struct MimoRadio {
    blocks: Vec<Block>,
    agc: Vec<Agc>,
    gains: Vec<f64>,
    scratch: Vec<Complex64>,
    rotation: Vec<Complex64>,
    mean_rms: f64,
}

/// Antenna `i` of `n`, `spacing` apart and centred on `at`, along the horizontal
/// perpendicular to `link`.
fn antenna(at: Vec3, link: Vec3, i: usize, n: usize, spacing: f64) -> Vec3 {
    let h = (link[0] * link[0] + link[1] * link[1]).sqrt().max(1e-9);
    let across = [-link[1] / h, link[0] / h, 0.0];
    let offset = (i as f64 - 0.5 * (n as f64 - 1.0)) * spacing;
    [
        at[0] + across[0] * offset,
        at[1] + across[1] * offset,
        at[2] + across[2] * offset,
    ]
}

/// What the body contributes to one packet, in the single-antenna geometry: scatterers (relative
/// amplitude, path length), the shadow on the direct path and the chest position.
pub(super) struct BodyPaths<'a> {
    pub scatterers: &'a [(f64, f64)],
    pub shadow: f64,
    pub chest: Vec3,
}

impl MimoRadio {
    pub(super) fn new(
        cfg: &MultiAntenna,
        noise_model: &NoiseModel,
        room_geo: &room::Room,
        layout: &Layout,
        rng: &mut ChaCha8Rng,
    ) -> Self {
        let (nr, nt) = (cfg.rx_count(), cfg.tx_count());
        let link = room::sub(room_geo.rx, room_geo.tx);
        let rx_phase: Vec<f64> = (0..nr).map(|_| rng.random_range(0.0..TAU)).collect();
        let mut blocks = Vec::with_capacity(nr * nt);
        for (r, &chain_phase) in rx_phase.iter().enumerate() {
            for t in 0..nt {
                let rx_at = antenna(room_geo.rx, link, r, nr, cfg.spacing_m);
                let tx_at = antenna(room_geo.tx, link, t, nt, cfg.spacing_m);
                let los = room::norm(room::sub(rx_at, tx_at));
                let static_channel = StaticChannel::new(layout, cfg.centre_hz, los, rng);
                blocks.push(Block {
                    r,
                    static_channel,
                    noise: Noise::new(noise_model, layout.indices.len()),
                    rx_at,
                    tx_at,
                    fixed_phase: chain_phase,
                    // 802.11n cyclic shift of the second stream: −400 ns.
                    csd_s: -400e-9 * t as f64,
                });
            }
        }
        let mean_rms = (blocks
            .iter()
            .map(|b| b.static_channel.rms.powi(2))
            .sum::<f64>()
            / blocks.len().max(1) as f64)
            .sqrt()
            .max(1e-12);
        let tones = layout.indices.len();
        Self {
            blocks,
            agc: (0..nr).map(|_| Agc::new()).collect(),
            gains: vec![1.0; nr],
            scratch: vec![Complex64::new(0.0, 0.0); tones],
            rotation: vec![Complex64::new(0.0, 0.0); tones],
            mean_rms,
        }
    }

    /// One packet: `rx · tx` blocks of tones, receive-chain major. Returns the buffer, the mean
    /// gain and the relative received power of the first chain.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn packet(
        &mut self,
        cfg: &MultiAntenna,
        noise_model: &NoiseModel,
        snr_db: f64,
        phase_offsets: bool,
        room_geo: &room::Room,
        layout: &Layout,
        body: &BodyPaths<'_>,
        creep: Complex64,
        dt: f64,
        rng: &mut ChaCha8Rng,
        noise_rng: &mut ChaCha8Rng,
    ) -> (Vec<Complex32>, f64, f64) {
        let indices = &layout.indices;
        for (g, agc) in self.gains.iter_mut().zip(self.agc.iter_mut()) {
            *g = agc.next_gain(&cfg.agc, dt, rng);
        }
        let (common, timing_s) = if phase_offsets {
            let timing: f64 = rng.sample(StandardNormal);
            (rng.random_range(0.0..TAU), 15e-9 * timing)
        } else {
            (0.0, 0.0)
        };
        // A burst of interference hits the whole packet, every chain.
        let mut burst = 1.0f64;
        for b in self.blocks.iter_mut() {
            burst = burst.max(b.noise.next_packet(noise_model, noise_rng));
        }
        let snr = 10f64.powf(snr_db / 10.0);
        // A fixed noise floor: a chain at a lower level has a lower SNR.
        let noise_sigma = burst * cfg.amplitude_rms / (2.0 * snr).sqrt();
        let smooth_share = noise_model.correlated_share.clamp(0.0, 1.0);
        let white_sigma = noise_sigma * (1.0 - smooth_share).sqrt();
        let smooth_sigma = noise_sigma * smooth_share.sqrt();
        let tilted = noise_model.tilt_std > 0.0;
        let edge = f64::from(indices.iter().map(|k| k.abs()).max().unwrap_or(1).max(1));
        let tones = indices.len();
        let mut csi = Vec::with_capacity(self.blocks.len() * tones);
        let mut first_power = 0.0;
        let levels = if cfg.chain_level.is_empty() {
            &[1.0][..]
        } else {
            &cfg.chain_level[..]
        };
        let full = cfg.full_scale.max(1.0);
        let q = |x: f64| x.round().clamp(-full, full) as f32;
        for (i, b) in self.blocks.iter().enumerate() {
            let ch = &b.static_channel;
            for (u, h) in self.scratch.iter_mut().enumerate() {
                *h = ch.total[u] + ch.direct[u] * body.shadow + ch.creeping[u] * creep;
            }
            let shift = room::norm(room::sub(body.chest, b.rx_at))
                - room::norm(room::sub(body.chest, room_geo.rx))
                + room::norm(room::sub(body.chest, b.tx_at))
                - room::norm(room::sub(body.chest, room_geo.tx));
            for &(amplitude, path_m) in body.scatterers {
                add_path(
                    &mut self.scratch,
                    indices,
                    cfg.centre_hz,
                    amplitude,
                    path_m + shift,
                    std::f64::consts::PI,
                );
            }
            let level = levels[b.r % levels.len()];
            let scale = self.gains[b.r] * level * cfg.amplitude_rms / self.mean_rms;
            self.rotation
                .iter_mut()
                .for_each(|r| *r = Complex64::new(0.0, 0.0));
            add_path(
                &mut self.rotation,
                indices,
                0.0,
                scale,
                (timing_s + b.csd_s) * super::channel::C_M_S,
                common + b.fixed_phase,
            );
            // Noise scales with the chain's AGC gain (it amplifies what it receives), not
            // with its level.
            let g = self.gains[b.r];
            for (u, &k) in indices.iter().enumerate() {
                let h = self.scratch[u];
                if i == 0 {
                    first_power += h.norm_sqr();
                }
                let mut v = h * self.rotation[u];
                if tilted {
                    v *= b.noise.tilt(f64::from(k) / edge);
                }
                let n_re: f64 = rng.sample(StandardNormal);
                let n_im: f64 = rng.sample(StandardNormal);
                let c = b.noise.smooth(u) * smooth_sigma;
                csi.push(Complex32::new(
                    q(v.re + g * (white_sigma * n_re + c.re)),
                    q(v.im + g * (white_sigma * n_im + c.im)),
                ));
            }
        }
        let mean_gain = self.gains.iter().sum::<f64>() / self.gains.len().max(1) as f64;
        let relative_power = first_power
            / tones.max(1) as f64
            / self
                .blocks
                .first()
                .map_or(1.0, |b| b.static_channel.rms.powi(2));
        (csi, mean_gain, relative_power)
    }
}
