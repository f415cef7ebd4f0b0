//! Room geometry: where the link, the furniture and the door are, and how a body on a given spot
//! couples into the link.

/// Three-dimensional point or vector in metres; x along the link, z up.
pub type Vec3 = [f64; 3];

pub(super) fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(super) fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(super) fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

/// The simulated room. Every position is a body's chest (its main scatterer), in metres.
///
/// The default is a 5 m × 4 m bedroom-office: the router on a shelf in a corner and the ESP32
/// node on the desk, 0.8 m in front of the chest of whoever sits at the computer (where users
/// put it, and the only geometry in which a single link shows a heartbeat at all), a bed along
/// the back wall, weakly coupled to the link, and a door on the right wall.
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    /// Transmitter (router) antenna.
    pub tx: Vec3,
    /// Receiver (ESP32 node) antenna.
    pub rx: Vec3,
    /// Width along x and depth along y; the room spans `[0, size[0]] × [0, size[1]]`.
    pub size: [f64; 2],
    /// Chest position of a person sitting on the desk chair.
    pub chair: Vec3,
    /// Horizontal direction the seated person faces (unit vector); their chest moves along it.
    pub chair_facing: [f64; 2],
    /// Chest position of a person lying on the bed (on their back).
    pub bed: Vec3,
    /// Where a person stands next to the bed before sitting on its edge.
    pub bed_side: [f64; 2],
    /// Just inside the door.
    pub door_inside: [f64; 2],
    /// Far enough outside the door that the wall hides the body.
    pub door_outside: [f64; 2],
    /// Rectangle `[x0, y0, x1, y1]` where a walking person picks waypoints (clear of the bed).
    pub walk_area: [f64; 4],
}

impl Default for Room {
    fn default() -> Self {
        Self {
            tx: [0.3, 0.3, 1.6],
            rx: [2.4, 1.3, 0.8],
            size: [5.0, 4.0],
            chair: [2.4, 2.1, CHEST_SITTING_M],
            chair_facing: [0.0, -1.0],
            bed: [1.3, 3.25, CHEST_LYING_BED_M],
            bed_side: [1.3, 2.45],
            door_inside: [4.5, 3.4],
            door_outside: [6.0, 3.4],
            walk_area: [0.6, 0.3, 4.4, 2.4],
        }
    }
}

/// Chest height of a standing adult.
pub(super) const CHEST_STANDING_M: f64 = 1.3;
/// Chest height seated on a desk chair.
pub(super) const CHEST_SITTING_M: f64 = 0.95;
/// Chest height lying on a bed (mattress top ~0.5 m).
pub(super) const CHEST_LYING_BED_M: f64 = 0.62;
/// Chest height lying on the floor.
pub(super) const CHEST_FLOOR_M: f64 = 0.15;
/// Chest height sitting on the bed edge.
pub(super) const CHEST_BED_EDGE_M: f64 = 0.95;

/// How the body couples into the link from one chest position.
#[derive(Debug, Clone, Copy)]
pub(super) struct Coupling {
    /// Transmitter → body → receiver path length.
    pub path_m: f64,
    /// Body path length minus the direct path length.
    pub excess_path_m: f64,
    /// Shortest distance from the chest to the direct TX–RX segment.
    pub range_m: f64,
    /// Attenuation of the direct path by the body (1 = clear, lower when the body blocks it).
    pub los_factor: f64,
    /// Body-path amplitude relative to the direct path, before posture and visibility factors.
    pub spreading: f64,
    /// Path-length change per metre of chest displacement along `normal`, never below a floor:
    /// the abdomen and flanks also move, so no posture is completely blind.
    pub chest_gain: f64,
}

impl Room {
    /// Length of the direct path.
    pub(super) fn los_m(&self) -> f64 {
        norm(sub(self.rx, self.tx))
    }

    /// True when `xy` is inside the walls.
    pub(super) fn contains(&self, xy: [f64; 2]) -> bool {
        xy[0] >= 0.0 && xy[0] <= self.size[0] && xy[1] >= 0.0 && xy[1] <= self.size[1]
    }

    /// Fraction of the body's reflection that reaches the link: 1 inside, fading to 0 within
    /// 0.5 m outside a wall (the doorway), so entering and leaving are gradual.
    pub(super) fn visibility(&self, xy: [f64; 2]) -> f64 {
        let dx = (-xy[0]).max(xy[0] - self.size[0]).max(0.0);
        let dy = (-xy[1]).max(xy[1] - self.size[1]).max(0.0);
        let outside = dx.max(dy);
        (1.0 - outside / 0.5).clamp(0.0, 1.0)
    }

    /// Geometry of the body path for a chest at `chest` whose front faces `normal`.
    pub(super) fn coupling(&self, chest: Vec3, normal: Vec3, wavelength_m: f64) -> Coupling {
        let to_tx = sub(chest, self.tx);
        let to_rx = sub(chest, self.rx);
        let d1 = norm(to_tx).max(0.2);
        let d2 = norm(to_rx).max(0.2);
        let los = self.los_m();
        let link = sub(self.rx, self.tx);
        let along = (dot(to_tx, link) / dot(link, link)).clamp(0.0, 1.0);
        let closest = [
            self.tx[0] + along * link[0],
            self.tx[1] + along * link[1],
            self.tx[2] + along * link[2],
        ];
        let range_m = norm(sub(chest, closest));
        // First Fresnel zone radius at the body's position along the link: inside it the torso
        // (≈ 0.4 m wide) blocks a large share of the direct path.
        let a = (along * los).max(0.05);
        let b = ((1.0 - along) * los).max(0.05);
        let fresnel = (wavelength_m * a * b / (a + b)).sqrt() + 0.2;
        let blocking = if dot(to_tx, link) < 0.0 || dot(to_rx, link) > 0.0 {
            0.0
        } else {
            0.6 * (-(range_m / fresnel).powi(2)).exp()
        };
        let u_sum = [
            to_tx[0] / d1 + to_rx[0] / d2,
            to_tx[1] / d1 + to_rx[1] / d2,
            to_tx[2] / d1 + to_rx[2] / d2,
        ];
        Coupling {
            path_m: d1 + d2,
            excess_path_m: d1 + d2 - los,
            range_m,
            los_factor: 1.0 - blocking,
            spreading: (los / (d1 * d2)).min(3.0),
            chest_gain: dot(u_sum, normal).abs().max(0.6),
        }
    }
}

impl Room {
    /// Three body paths that bounce off a surface on the way: transmitter → front wall (y = 0)
    /// → body → receiver, transmitter → body → back wall (y = depth) → receiver, and
    /// transmitter → body → floor → receiver. Returns the path length and the spreading factor
    /// (as in [`Coupling::spreading`]) of each.
    pub(super) fn wall_echoes(&self, chest: Vec3) -> [(f64, f64); 3] {
        let los = self.los_m();
        let tx_image = [self.tx[0], -self.tx[1], self.tx[2]];
        let rx_image = [self.rx[0], 2.0 * self.size[1] - self.rx[1], self.rx[2]];
        let path = |a: Vec3, b: Vec3| {
            let d1 = norm(sub(chest, a)).max(0.2);
            let d2 = norm(sub(chest, b)).max(0.2);
            (d1 + d2, (los / (d1 * d2)).min(3.0))
        };
        let rx_floor_image = [self.rx[0], self.rx[1], -self.rx[2]];
        [
            path(tx_image, self.rx),
            path(self.tx, rx_image),
            path(self.tx, rx_floor_image),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chair_is_off_the_link_and_sensitive_to_chest_motion() {
        let room = Room::default();
        let c = room.coupling(room.chair, [0.0, -1.0, 0.0], 0.123);
        assert!(c.range_m > 0.6 && c.range_m < 1.0, "{c:?}");
        assert!(c.chest_gain > 1.4, "{c:?}");
        assert!(c.los_factor > 0.98);
    }

    #[test]
    fn a_body_on_the_link_blocks_it() {
        let room = Room::default();
        let mid = [1.35, 0.8, 1.2];
        let c = room.coupling(mid, [0.0, 0.0, 1.0], 0.123);
        assert!(c.los_factor < 0.5, "{c:?}");
        assert!(c.excess_path_m.abs() < 0.05);
    }

    #[test]
    fn visibility_fades_through_the_door() {
        let room = Room::default();
        assert_eq!(room.visibility([4.0, 3.4]), 1.0);
        assert_eq!(room.visibility(room.door_outside), 0.0);
        let half = room.visibility([5.25, 3.4]);
        assert!(half > 0.4 && half < 0.6);
    }
}
