//! The embedded simulator: a seeded physical model of ESP32 CSI playing a scripted scene.
//!
//! It is the data users see before they connect a node and the ground truth of every accuracy
//! test, so it models what makes real CSI hard rather than what makes it easy:
//!
//! - **Static multipath** drawn from the seed (a direct path and 6–10 reflections, Rician K ≈ 0
//!   dB), evaluated on the real subcarrier grid (`f_c + k · 312.5 kHz`) with null, guard and DC
//!   slots exactly zero, plus a weak creeping reflection so an empty room is never frozen.
//! - **The body** as chest, head and hip scatterers (the axis tilts when lying or falling),
//!   swinging or flailing limbs, and the chest's echoes off two walls and the floor; all path
//!   lengths follow the person through the room geometry, and the body shadows the direct path
//!   when it stands in its Fresnel zone.
//! - **Chest motion**: irregular breathing (mm) and a heartbeat (sub-mm) moving the body-path
//!   phase by `2π · ΔL / λ`, scaled by the bistatic geometry of where the person is.
//! - **Receiver impairments**: complex Gaussian noise at a fixed SNR (white by default; with
//!   [`NoiseModel::measured`] correlated across neighbouring subcarriers, with a per-packet
//!   amplitude tilt and interference bursts, as in real quiet-room captures), AGC gain steps and
//!   glitches of ±15–30 %, a random common phase and timing slope per packet, int8 quantisation,
//!   and optionally timestamp jitter and packet loss.
//!
//! The same [`SimConfig`] always yields bit-identical frames. Segments are continuous: a person
//! told to sit still walks to the chair first, a person told to leave gets up and walks out, and
//! the ground truth reports that walk honestly. A scene starts in the steady state of its first
//! segment (`SitStill` first ⇒ already seated at frame 0).

mod activity;
mod channel;
mod choreography;
mod mimo;
mod radio;
mod room;
mod scenes;
mod vitals;

pub use activity::{Activity, BodyAction, Posture};
pub use channel::{SUBCARRIER_SPACING_HZ, channel_centre_hz};
pub use mimo::MultiAntenna;
pub use radio::{AgcModel, NoiseModel};
pub use room::{Room, Vec3};
pub use scenes::{scene, scene_names};

use crate::sensing::csi::{CsiFrame, WireFormat};
use channel::{Layout, StaticChannel, add_path};
use choreography::{Choreography, Kinematics};
use num_complex::{Complex32, Complex64};
use radio::{Agc, Creep, Noise, quantise};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::f64::consts::TAU;
use vitals::{Breathing, Heartbeat, ou_step};

/// One step of a scripted scene.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub duration_s: f64,
    pub activity: Activity,
}

/// Ground truth for the frame it accompanies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroundTruth {
    /// Someone is inside the room.
    pub present: bool,
    /// The body is moving (walking, changing posture, falling), beyond breathing and sway.
    pub moving: bool,
    /// Actual breathing rate while the person is still and breathing (the only time the CSI
    /// carries it); it wanders ±3 % around the scripted rate, so score against this.
    pub breathing_bpm: Option<f64>,
    /// Actual heart rate (without the within-breath arrhythmia) under the same conditions.
    pub heart_bpm: Option<f64>,
    /// Distance of the chest from the direct TX–RX line segment, while present.
    pub range_m: Option<f64>,
    /// Body path length minus direct path length (what a CSI range profile measures).
    pub excess_path_m: Option<f64>,
    /// The scripted activity of the current segment.
    pub activity: Activity,
    /// Index of the current segment in the script.
    pub segment: usize,
    pub action: BodyAction,
    pub posture: Posture,
    /// True during the impact burst of a fall.
    pub impact: bool,
    /// True from a fall's impact until the person is up again.
    pub fallen: bool,
    /// AGC gain applied to this packet (1.0 in truth-only stepping).
    pub agc_gain: f64,
    /// The frame's timestamp.
    pub t_s: f64,
}

/// Everything that defines a simulation. Two equal configs give bit-identical frames; build it
/// with `..SimConfig::default()` so new fields never break callers.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Seeds the room's multipath, the person's choices and every noise source.
    pub seed: u64,
    /// Nominal packet rate; with jitter and loss the measured rate differs, as on real links.
    pub rate_hz: f64,
    /// `CsiFrame::node_id` of every frame.
    pub node_id: String,
    /// The scene, played once from `t = 0`; see [`scene`] for named ones.
    pub script: Vec<Segment>,
    /// Buffer slots per frame: 64 (HT20 LLTF), 128 (+HT-LTF), 192 (+STBC), or any count as one
    /// centred block.
    pub subcarriers: usize,
    /// 2.4 GHz Wi-Fi channel (1–14).
    pub channel: u16,
    /// Mean signal-to-noise ratio over the valid subcarriers, dB. Faded subcarriers get less.
    pub snr_db: f64,
    /// Receiver gain behaviour; the default is an unlocked classic ESP32.
    pub agc: AgcModel,
    /// How the noise is spread across subcarriers and in time (correlation, tilt, interference
    /// bursts). The default is still white; `NoiseModel::measured()` has the statistics of
    /// real quiet rooms.
    pub noise: NoiseModel,
    /// Random common phase and timing-offset slope per packet, as every ESP32 packet has (no
    /// shared clock with the transmitter). Raw per-subcarrier phase is then meaningless without
    /// sanitising; amplitudes are unaffected.
    pub phase_offsets: bool,
    /// Peak-to-peak chest displacement of one normal breath.
    pub breathing_depth_m: f64,
    /// Peak-to-peak chest displacement of one heartbeat.
    pub heart_depth_m: f64,
    /// Standard deviation of a still person's postural drift (an Ornstein–Uhlenbeck walk of the
    /// whole body along its facing direction, 45 s memory). Its increments are white, so its
    /// spectrum falls as 1/f² and still reaches the heart band: on the multi-antenna ECG-timed
    /// streams it is what the heart-band peak trips on (see `local-agent/docs/accuracy.md`,
    /// "Heart rate on a multi-antenna 5 GHz link"); 0 switches it off for that diagnosis.
    pub postural_sway_m: f64,
    /// Beat times (seconds of scene time, ascending) that replace the modelled heartbeat, e.g.
    /// the R peaks of a real ECG recording: each beat's pulse starts at its time and spans the
    /// interval to the next beat. `None` keeps the model (rate from the script, with
    /// variability).
    pub heart_beats: Option<HeartBeats>,
    /// Body reflectivity, metres: body-path amplitude is this × `los / (d_tx · d_rx)` relative to
    /// the direct path.
    pub body_reflectivity_m: f64,
    /// RMS int8 magnitude of the empty-room channel at unit AGC gain.
    pub amplitude_rms: f64,
    /// Standard deviation of the sampling-time jitter (clamped to ±45 % of a period).
    pub timestamp_jitter_s: f64,
    /// Probability that a packet is lost.
    pub packet_loss: f64,
    /// Geometry of the link, furniture and door.
    pub room: Room,
    /// A multi-antenna receiver instead of the single-chain ESP32 (see [`MultiAntenna`]):
    /// frames then hold `rx · tx` blocks of 56 tones on its 5 GHz channel, and `subcarriers`,
    /// `channel`, `agc` and `amplitude_rms` are replaced by its own. `None` keeps the ESP32
    /// (frames bit-identical to before the option existed).
    pub antennas: Option<MultiAntenna>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            rate_hz: 100.0,
            node_id: "sim-1".to_string(),
            script: vec![Segment {
                duration_s: 60.0,
                activity: Activity::Absent,
            }],
            subcarriers: 64,
            channel: 6,
            snr_db: 30.0,
            agc: AgcModel::default(),
            noise: NoiseModel::default(),
            phase_offsets: true,
            breathing_depth_m: 0.006,
            heart_depth_m: 0.0005,
            postural_sway_m: POSTURAL_SWAY_M,
            heart_beats: None,
            body_reflectivity_m: 0.45,
            amplitude_rms: 28.0,
            timestamp_jitter_s: 0.0,
            packet_loss: 0.0,
            room: Room::default(),
            antennas: None,
        }
    }
}

impl SimConfig {
    /// The default configuration playing the named scene, or `None` for an unknown name.
    pub fn for_scene(name: &str, seed: u64) -> Option<Self> {
        Some(Self {
            seed,
            script: scene(name)?,
            ..Self::default()
        })
    }
}

/// Externally timed heartbeats (see [`SimConfig::heart_beats`]).
#[derive(Clone, PartialEq)]
pub struct HeartBeats {
    beats_s: std::sync::Arc<Vec<f64>>,
}

impl std::fmt::Debug for HeartBeats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeartBeats")
            .field("beats", &self.beats_s.len())
            .finish()
    }
}

impl HeartBeats {
    /// Beat times in seconds; non-finite values are dropped and the rest sorted.
    pub fn new(mut beats_s: Vec<f64>) -> Self {
        beats_s.retain(|t| t.is_finite());
        beats_s.sort_by(f64::total_cmp);
        Self {
            beats_s: std::sync::Arc::new(beats_s),
        }
    }

    pub fn times(&self) -> &[f64] {
        &self.beats_s
    }

    /// Mean heart rate over the beats inside `[from_s, to_s]`, bpm (`None` with fewer than 2).
    pub fn mean_bpm(&self, from_s: f64, to_s: f64) -> Option<f64> {
        let inside: Vec<f64> = self
            .beats_s
            .iter()
            .copied()
            .filter(|t| *t >= from_s && *t <= to_s)
            .collect();
        let (first, last) = (inside.first()?, inside.last()?);
        (inside.len() >= 2 && last > first)
            .then(|| 60.0 * (inside.len() - 1) as f64 / (last - first))
    }

    /// Chest displacement at `t_s` for a pulse `depth_m` peak to peak: the beat's pulse shape
    /// (the modelled heartbeat's) stretched over the interval to the next beat.
    fn displacement(&self, t_s: f64, depth_m: f64) -> f64 {
        let i = self.beats_s.partition_point(|b| *b <= t_s);
        if i == 0 || i >= self.beats_s.len() {
            return 0.0;
        }
        let (a, b) = (self.beats_s[i - 1], self.beats_s[i]);
        let span = b - a;
        if span <= 0.0 {
            return 0.0;
        }
        depth_m * vitals::pulse_shape((t_s - a) / span)
    }
}

/// Independent random streams, so that turning one effect on or off (or stepping ground truth
/// only) leaves the others unchanged.
const STREAM_ROOM: u64 = 1;
const STREAM_PERSON: u64 = 2;
const STREAM_RADIO: u64 = 3;
const STREAM_TIMING: u64 = 4;
const STREAM_NOISE: u64 = 5;
const STREAM_MIMO: u64 = 6;

/// Relative amplitude of the body's reflection per posture: an upright body shows the link
/// more cross-section than a curled-up or flat one.
fn posture_reflectivity(posture: Posture) -> f64 {
    match posture {
        Posture::Outside | Posture::Standing => 1.0,
        Posture::Sitting => 0.8,
        Posture::LyingBed => 0.65,
        Posture::LyingFloor => 0.55,
    }
}

/// Slow postural drift of a still person (standard deviation and memory). It moves the body
/// path's phase relative to the static channel by a fraction of a radian over minutes, so the
/// amplitude blind spots where a heartbeat vanishes come and go as they do in real rooms.
const POSTURAL_SWAY_M: f64 = 0.004;
const POSTURAL_SWAY_TAU_S: f64 = 45.0;

/// Amplitude reflection coefficient of walls and floor at 2.4 GHz.
const WALL_REFLECTION: f64 = 0.6;

/// The person's physical state between frames.
#[derive(Debug, Clone)]
struct Body {
    xy: [f64; 2],
    stride_phase: f64,
    /// Slow postural sway along the chest normal, OU state with unit variance.
    sway: f64,
    breathing: Breathing,
    heartbeat: Heartbeat,
    last_vitals: choreography::Vitals,
}

/// One body scatterer for the channel: amplitude relative to the direct path and path length.
#[derive(Debug, Clone, Copy)]
struct Scatterer {
    amplitude: f64,
    path_m: f64,
}

/// Everything the person contributes to one frame.
#[derive(Debug, Clone, Copy)]
struct BodyFrame {
    torso: Scatterer,
    limbs: Scatterer,
    /// Head and hips/legs: the body is 1.7 m long, so tilting it (falling, lying down) changes
    /// these paths by up to a metre while the chest path changes far less.
    extremities: [Scatterer; 2],
    /// The torso seen via the walls: the body lights up the room, so it reaches the receiver
    /// along more than one path, each moving differently as the person walks.
    echoes: [Scatterer; 3],
    los_factor: f64,
    /// Chest position, for the per-antenna path differences of a multi-antenna receiver.
    chest: Vec3,
}

/// Plays a [`SimConfig`]: one frame per packet, each with its ground truth. Also an
/// `Iterator` over `(CsiFrame, GroundTruth)`.
#[derive(Debug)]
pub struct Simulator {
    config: SimConfig,
    layout: Layout,
    static_channel: StaticChannel,
    centre_hz: f64,
    wavelength_m: f64,
    segment_ends_s: Vec<f64>,
    segment: usize,
    total_s: f64,
    tick: u64,
    last_t_s: Option<f64>,
    choreography: Choreography,
    body: Body,
    agc: Agc,
    noise: Noise,
    noise_rng: ChaCha8Rng,
    creep: Creep,
    person_rng: ChaCha8Rng,
    radio_rng: ChaCha8Rng,
    timing_rng: ChaCha8Rng,
    /// Per distinct frequency, reused between frames.
    channel_scratch: Vec<Complex64>,
    rotation_scratch: Vec<Complex64>,
    /// The multi-antenna receiver, when configured.
    mimo: Option<mimo::MimoRadio>,
}

impl Simulator {
    /// Precomputes the static channel; any config is accepted (a non-positive or non-finite
    /// rate, or an empty script, simply yields no frames).
    pub fn new(config: SimConfig) -> Self {
        let stream = |n| {
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(n);
            rng
        };
        let mut room_rng = stream(STREAM_ROOM);
        let mut person_rng = stream(STREAM_PERSON);
        let mut radio_rng = stream(STREAM_RADIO);
        let timing_rng = stream(STREAM_TIMING);
        let noise_rng = stream(STREAM_NOISE);
        let layout = match &config.antennas {
            Some(_) => mimo::ht20_tones(),
            None => Layout::new(config.subcarriers),
        };
        let centre_hz = config
            .antennas
            .as_ref()
            .map_or_else(|| channel_centre_hz(config.channel), |a| a.centre_hz);
        let static_channel =
            StaticChannel::new(&layout, centre_hz, config.room.los_m(), &mut room_rng);
        let mut end = 0.0;
        let segment_ends_s: Vec<f64> = config
            .script
            .iter()
            .map(|s| {
                end += s.duration_s.max(0.0);
                end
            })
            .collect();
        let choreography = Choreography::new(
            config.room.clone(),
            config.script.first().map(|s| &s.activity),
            &mut person_rng,
        );
        let start = choreography
            .clone()
            .at(0.0, &mut person_rng.clone())
            .pose
            .xy;
        let body = Body {
            xy: start,
            stride_phase: 0.0,
            sway: person_rng.sample(StandardNormal),
            breathing: Breathing::new(&mut person_rng),
            heartbeat: Heartbeat::new(&mut person_rng),
            last_vitals: choreography::Vitals {
                breathing_bpm: 15.0,
                heart_bpm: 70.0,
            },
        };
        let creep = Creep::new(&mut radio_rng);
        let distinct = layout.indices.len();
        let mimo = config.antennas.as_ref().map(|a| {
            mimo::MimoRadio::new(
                a,
                &config.noise,
                &config.room,
                &layout,
                &mut stream(STREAM_MIMO),
            )
        });
        Self {
            wavelength_m: channel::C_M_S / centre_hz,
            total_s: end,
            layout,
            static_channel,
            centre_hz,
            segment_ends_s,
            segment: 0,
            tick: 0,
            last_t_s: None,
            choreography,
            body,
            agc: Agc::new(),
            noise: Noise::new(&config.noise, distinct),
            noise_rng,
            creep,
            person_rng,
            radio_rng,
            timing_rng,
            channel_scratch: vec![Complex64::new(0.0, 0.0); distinct],
            rotation_scratch: vec![Complex64::new(0.0, 0.0); distinct],
            mimo,
            config,
        }
    }

    /// Length of the script.
    pub fn duration_s(&self) -> f64 {
        self.total_s
    }

    /// The configuration being played.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The next frame and its ground truth; `None` once the script has played out.
    pub fn next_frame(&mut self) -> Option<(CsiFrame, GroundTruth)> {
        let (t_s, dt, kinematics) = self.advance()?;
        let (body, mut truth) = self.body_step(t_s, dt, &kinematics);
        if self.mimo.is_some() {
            let (frame, gain) = self.mimo_step(t_s, dt, &body)?;
            truth.agc_gain = gain;
            return Some((frame, truth));
        }
        let (csi, gain, rssi_dbm) = self.radio_step(dt, &body);
        truth.agc_gain = gain;
        let frame = CsiFrame {
            node_id: self.config.node_id.clone(),
            t_s,
            rssi_dbm: Some(rssi_dbm),
            channel: Some(self.config.channel),
            format: WireFormat::Simulator,
            csi,
            shape: crate::sensing::csi::CsiShape::single(Some(20)),
        };
        Some((frame, truth))
    }

    /// The next frame's ground truth without synthesising its CSI: for simulating days of
    /// routine quickly. The truth sequence is identical to `next_frame`'s; mixing the two only
    /// changes the noise of later frames.
    pub fn next_truth(&mut self) -> Option<GroundTruth> {
        let (t_s, dt, kinematics) = self.advance()?;
        let (_, mut truth) = self.body_step(t_s, dt, &kinematics);
        truth.agc_gain = 1.0;
        Some(truth)
    }

    /// Moves to the next kept packet: its time, the time since the previous kept packet and the
    /// intended body state.
    fn advance(&mut self) -> Option<(f64, f64, Kinematics)> {
        let rate = self.config.rate_hz;
        if !(rate > 0.0 && rate.is_finite()) {
            return None;
        }
        loop {
            let nominal = self.tick as f64 / rate;
            if nominal >= self.total_s {
                return None;
            }
            self.tick += 1;
            let jitter = if self.config.timestamp_jitter_s > 0.0 {
                let z: f64 = self.timing_rng.sample(StandardNormal);
                (z * self.config.timestamp_jitter_s).clamp(-0.45 / rate, 0.45 / rate)
            } else {
                0.0
            };
            let lost = self.config.packet_loss > 0.0
                && self.timing_rng.random::<f64>() < self.config.packet_loss;
            if lost {
                continue;
            }
            let t_s = (nominal + jitter).max(0.0);
            while self.segment + 1 < self.segment_ends_s.len()
                && t_s >= self.segment_ends_s[self.segment]
            {
                let boundary = self.segment_ends_s[self.segment];
                self.segment += 1;
                let activity = self.config.script[self.segment].activity.clone();
                self.choreography
                    .start(boundary, &activity, &mut self.person_rng);
            }
            let dt = self.last_t_s.map_or(0.0, |last| (t_s - last).max(0.0));
            self.last_t_s = Some(t_s);
            let kinematics = self.choreography.at(t_s, &mut self.person_rng);
            return Some((t_s, dt, kinematics));
        }
    }

    /// Moves the body by `dt` towards `kinematics` and returns its scatterers and the truth.
    fn body_step(
        &mut self,
        t_s: f64,
        dt: f64,
        kinematics: &Kinematics,
    ) -> (BodyFrame, GroundTruth) {
        let rng = &mut self.person_rng;
        let body = &mut self.body;
        body.xy = kinematics.pose.xy;
        let speed = kinematics.speed_m_s;
        // Gait: cadence rises with speed; the chest bobs twice per stride.
        let gait = speed.min(1.3);
        body.stride_phase = (body.stride_phase + dt * 0.95 * gait.sqrt()).fract();
        body.sway = ou_step(body.sway, dt, POSTURAL_SWAY_TAU_S, rng);
        if let Some(v) = kinematics.vitals {
            body.last_vitals = v;
        }
        let breath_m = body.breathing.step(
            dt,
            body.last_vitals.breathing_bpm,
            self.config.breathing_depth_m,
            rng,
        );
        let heart_m = match &self.config.heart_beats {
            Some(beats) => beats.displacement(t_s, self.config.heart_depth_m),
            None => body.heartbeat.step(
                dt,
                body.last_vitals.heart_bpm,
                body.breathing.phase(),
                self.config.heart_depth_m,
                rng,
            ),
        };

        let normal = kinematics.normal;
        let still = kinematics.action == BodyAction::Still;
        let sway_m = if still {
            self.config.postural_sway_m * body.sway
        } else {
            0.0
        };
        let bob_m = 0.025 * gait * (TAU * 2.0 * body.stride_phase).sin();
        let chest = [
            body.xy[0] + normal[0] * sway_m,
            body.xy[1] + normal[1] * sway_m,
            kinematics.pose.z + bob_m + normal[2] * sway_m,
        ];
        let room = &self.config.room;
        let coupling = room.coupling(chest, normal, self.wavelength_m);
        let chest_motion_m = match kinematics.vitals {
            Some(_) => coupling.chest_gain * (breath_m + heart_m),
            None => 0.0,
        };
        let visibility = room.visibility(body.xy);
        let base_amplitude = self.config.body_reflectivity_m
            * coupling.spreading
            * posture_reflectivity(kinematics.pose.posture)
            * visibility;
        // The torso turns and twists while walking, so its cross-section flickers.
        let torso_amplitude =
            base_amplitude * (1.0 + 0.15 * gait * (TAU * 2.0 * body.stride_phase + 1.0).sin());

        // Arms and legs: swinging along the walking direction, or flailing after an impact.
        let heading = kinematics.heading;
        let swing = 0.35 * gait * (TAU * body.stride_phase).sin();
        let f = kinematics.flail_s;
        let flail = kinematics.flail;
        let limb_point = [
            chest[0] + heading[0] * swing + flail * 0.4 * (TAU * 5.1 * f + 1.0).sin(),
            chest[1] + heading[1] * swing + flail * 0.4 * (TAU * 6.7 * f + 2.0).sin(),
            chest[2] - 0.5 * gait.min(1.0) + flail * 0.3 * (TAU * 3.9 * f).sin(),
        ];
        let limb_amplitude = base_amplitude * (0.4 * gait.min(1.0) + 0.8 * flail);
        let limb_path =
            room::norm(room::sub(limb_point, room.tx)) + room::norm(room::sub(limb_point, room.rx));
        let (sin_tilt, cos_tilt) = (kinematics.tilt * std::f64::consts::FRAC_PI_2).sin_cos();
        let axis = [
            kinematics.lying_dir[0] * sin_tilt,
            kinematics.lying_dir[1] * sin_tilt,
            cos_tilt,
        ];
        let extremity = |offset_m: f64, share: f64| {
            let p = [
                chest[0] + axis[0] * offset_m,
                chest[1] + axis[1] * offset_m,
                chest[2] + axis[2] * offset_m,
            ];
            Scatterer {
                amplitude: base_amplitude * share,
                path_m: room::norm(room::sub(p, room.tx)) + room::norm(room::sub(p, room.rx)),
            }
        };
        let extremities = [extremity(0.4, 0.35), extremity(-0.5, 0.6)];
        let echoes = room
            .wall_echoes(chest)
            .map(|(path_m, spreading)| Scatterer {
                amplitude: self.config.body_reflectivity_m
                    * spreading
                    * WALL_REFLECTION
                    * posture_reflectivity(kinematics.pose.posture)
                    * visibility,
                path_m: path_m + chest_motion_m,
            });

        let present = kinematics.pose.posture != Posture::Outside && room.contains(body.xy);
        let moving = present && !still;
        let vitals_shown = present && still;
        let truth = GroundTruth {
            present,
            moving,
            breathing_bpm: kinematics
                .vitals
                .filter(|_| vitals_shown)
                .map(|v| body.breathing.rate_bpm(v.breathing_bpm)),
            heart_bpm: kinematics
                .vitals
                .filter(|_| vitals_shown)
                .map(|v| body.heartbeat.rate_bpm(v.heart_bpm)),
            range_m: present.then_some(coupling.range_m),
            excess_path_m: present.then_some(coupling.excess_path_m),
            activity: self
                .config
                .script
                .get(self.segment)
                .map(|s| s.activity.clone())
                .unwrap_or_default(),
            segment: self.segment,
            action: kinematics.action,
            posture: kinematics.pose.posture,
            impact: kinematics.impact,
            fallen: kinematics.impact || kinematics.pose.posture == Posture::LyingFloor,
            agc_gain: 1.0,
            t_s,
        };
        let frame = BodyFrame {
            torso: Scatterer {
                amplitude: torso_amplitude,
                path_m: coupling.path_m + chest_motion_m,
            },
            limbs: Scatterer {
                amplitude: limb_amplitude,
                path_m: limb_path,
            },
            extremities,
            echoes,
            // Outside the room the wall, not the body, is in the way.
            los_factor: if visibility > 0.0 {
                coupling.los_factor
            } else {
                1.0
            },
            chest,
        };
        (frame, truth)
    }

    /// A multi-antenna packet (see [`MultiAntenna`]): the frame and its mean chain gain.
    fn mimo_step(&mut self, t_s: f64, dt: f64, body: &BodyFrame) -> Option<(CsiFrame, f64)> {
        let creep = self.creep.step(dt, &mut self.radio_rng) * 0.5;
        let scatterers: Vec<(f64, f64)> = [body.torso, body.limbs]
            .into_iter()
            .chain(body.extremities)
            .chain(body.echoes)
            .map(|s| (s.amplitude, s.path_m))
            .collect();
        let paths = mimo::BodyPaths {
            scatterers: &scatterers,
            shadow: body.los_factor - 1.0,
            chest: body.chest,
        };
        let (radio, cfg) = (self.mimo.as_mut()?, self.config.antennas.as_ref()?);
        let (csi, gain, relative_power) = radio.packet(
            cfg,
            &self.config.noise,
            self.config.snr_db,
            self.config.phase_offsets,
            &self.config.room,
            &self.layout,
            &paths,
            creep,
            dt,
            &mut self.radio_rng,
            &mut self.noise_rng,
        );
        let rssi_noise: f64 = self.radio_rng.sample(StandardNormal);
        let rssi = -52.0 + 10.0 * relative_power.max(1e-6).log10() + rssi_noise;
        let frame = CsiFrame {
            node_id: self.config.node_id.clone(),
            t_s,
            rssi_dbm: Some(rssi.round().clamp(-127.0, 0.0) as i16),
            channel: Some(cfg.channel),
            format: WireFormat::Simulator,
            csi,
            shape: crate::sensing::csi::CsiShape {
                rx: cfg.rx.max(1),
                tx: cfg.tx.max(1),
                bandwidth_mhz: Some(20),
            },
        };
        Some((frame, gain))
    }

    /// Synthesises the received buffer: channel, then receiver impairments.
    fn radio_step(&mut self, dt: f64, body: &BodyFrame) -> (Vec<Complex32>, f64, i16) {
        let channel = &self.static_channel;
        let creep = self.creep.step(dt, &mut self.radio_rng);
        let creep = creep * 0.5;
        let shadow = body.los_factor - 1.0;
        for (u, h) in self.channel_scratch.iter_mut().enumerate() {
            *h = channel.total[u] + channel.direct[u] * shadow + channel.creeping[u] * creep;
        }
        let indices = &self.layout.indices;
        let paths = [body.torso, body.limbs]
            .into_iter()
            .chain(body.extremities)
            .chain(body.echoes);
        for s in paths {
            add_path(
                &mut self.channel_scratch,
                indices,
                self.centre_hz,
                s.amplitude,
                s.path_m,
                // A body reflection flips the phase, like any reflection off a denser medium.
                std::f64::consts::PI,
            );
        }

        let rng = &mut self.radio_rng;
        let gain = self.agc.next_gain(&self.config.agc, dt, rng);
        let scale = gain * self.config.amplitude_rms / channel.rms;
        // Common phase (carrier phase offset) and a linear phase across subcarriers (timing
        // offset of the packet detection, ~±15 ns), one pair per packet.
        let (common, timing_s) = if self.config.phase_offsets {
            let timing: f64 = rng.sample(StandardNormal);
            (rng.random_range(0.0..TAU), 15e-9 * timing)
        } else {
            (0.0, 0.0)
        };
        self.rotation_scratch
            .iter_mut()
            .for_each(|r| *r = Complex64::new(0.0, 0.0));
        add_path(
            &mut self.rotation_scratch,
            indices,
            0.0,
            scale,
            timing_s * channel::C_M_S,
            common,
        );
        let snr = 10f64.powf(self.config.snr_db / 10.0);
        let burst = self
            .noise
            .next_packet(&self.config.noise, &mut self.noise_rng);
        let noise_sigma = burst * scale * channel.rms / (2.0 * snr).sqrt();
        // The same noise power, split between smooth-across-subcarriers and white.
        let smooth_share = self.config.noise.correlated_share.clamp(0.0, 1.0);
        let white_sigma = noise_sigma * (1.0 - smooth_share).sqrt();
        let smooth_sigma = noise_sigma * smooth_share.sqrt();
        let tilted = self.config.noise.tilt_std > 0.0;
        let edge = f64::from(indices.iter().map(|k| k.abs()).max().unwrap_or(1).max(1));
        let noise = &self.noise;

        let mut power = 0.0;
        let csi = self
            .layout
            .slots
            .iter()
            .map(|slot| match slot {
                None => Complex32::new(0.0, 0.0),
                Some(u) => {
                    let h = self.channel_scratch[*u];
                    power += h.norm_sqr();
                    let mut v = h * self.rotation_scratch[*u];
                    if tilted {
                        v *= noise.tilt(f64::from(indices[*u]) / edge);
                    }
                    let n_re: f64 = rng.sample(StandardNormal);
                    let n_im: f64 = rng.sample(StandardNormal);
                    let c = noise.smooth(*u) * smooth_sigma;
                    Complex32::new(
                        quantise(v.re + white_sigma * n_re + c.re),
                        quantise(v.im + white_sigma * n_im + c.im),
                    )
                }
            })
            .collect();
        let valid = self
            .layout
            .slots
            .iter()
            .filter(|s| s.is_some())
            .count()
            .max(1);
        let relative_power = power / valid as f64 / (channel.rms * channel.rms);
        let rssi_noise: f64 = rng.sample(StandardNormal);
        let rssi = -52.0 + 10.0 * relative_power.max(1e-6).log10() + rssi_noise;
        (csi, gain, rssi.round().clamp(-127.0, 0.0) as i16)
    }
}

impl Iterator for Simulator {
    type Item = (CsiFrame, GroundTruth);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame()
    }
}
