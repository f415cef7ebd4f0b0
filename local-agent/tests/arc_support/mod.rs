//! Arc demodulation of a complex channel value whose moving part is one path.
//!
//! A link's value is a static sum of paths plus the paths the chest moves. When the moving
//! paths shift together by the chest's displacement `d`, the value traces an arc of a circle,
//! `c + r·e^{iθ}` with `θ = 4π·d/λ + const`. Its phase about the origin is a nonlinear function
//! of `d` once the arc spans a radian or more (a 4–12 mm breath at 5 GHz does): the breath's
//! harmonics then reach the heart band. The angle about the arc's own centre is linear in `d`.
//! This is the DC-offset compensation and arctangent demodulation of CW-radar vital-sign work:
//! fit the circle over a window (algebraic Kåsa fit, refined by a few Gauss–Newton steps on the
//! geometric distances, which removes Kåsa's bias toward small circles on short, noisy arcs),
//! then unwrap the angle about the fitted centre.
//!
//! Test support, not production code: the heart path tried it and did not keep it
//! (`local-agent/docs/accuracy.md`, "Heart rate on a multi-antenna 5 GHz link"); `diag_heart`
//! still uses it.

// The diagnostic uses only part of it.
#![allow(dead_code)]

use num_complex::Complex32;

/// A circle fitted to a window of complex samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Circle {
    pub centre: Complex32,
    pub radius: f32,
    /// Root-mean-square distance of the samples from the circle.
    pub rms_residual: f32,
}

/// Fewest samples a fit accepts (three define a circle; a few more make a residual mean
/// something).
pub const MIN_POINTS: usize = 8;
/// Gauss–Newton refinement steps after the algebraic fit.
const REFINE_STEPS: usize = 6;
/// A fit whose radius exceeds this multiple of the samples' spread is a line, not an arc.
const MAX_RADIUS_OVER_SPREAD: f64 = 1e3;

/// Fits a circle to the finite samples of `z`. `None` when fewer than [`MIN_POINTS`] are finite
/// or they do not define a circle (all equal, collinear, or a numerically singular fit).
pub fn fit_circle(z: &[Complex32]) -> Option<Circle> {
    let pts: Vec<(f64, f64)> = z
        .iter()
        .filter(|v| v.re.is_finite() && v.im.is_finite())
        .map(|v| (f64::from(v.re), f64::from(v.im)))
        .collect();
    if pts.len() < MIN_POINTS {
        return None;
    }
    let n = pts.len() as f64;
    // Centred and scaled, so the normal equations are well conditioned whatever the units.
    let (mx, my) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let spread = (pts
        .iter()
        .map(|(x, y)| (x - mx).powi(2) + (y - my).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    if !(spread > 0.0 && spread.is_finite()) {
        return None;
    }
    let p: Vec<(f64, f64)> = pts
        .iter()
        .map(|(x, y)| ((x - mx) / spread, (y - my) / spread))
        .collect();
    // Kåsa: least squares of x² + y² + D·x + E·y + F = 0.
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for &(x, y) in &p {
        let row = [x, y, 1.0];
        let rhs = -(x * x + y * y);
        for i in 0..3 {
            for j in 0..3 {
                a[i][j] += row[i] * row[j];
            }
            b[i] += row[i] * rhs;
        }
    }
    let s = solve3(a, b)?;
    let (mut cx, mut cy) = (-0.5 * s[0], -0.5 * s[1]);
    let r2 = cx * cx + cy * cy - s[2];
    // NaN fails this test too.
    if r2.is_nan() || r2 <= 0.0 {
        return None;
    }
    let mut r = r2.sqrt();
    let cost = |cx: f64, cy: f64, r: f64| {
        p.iter()
            .map(|(x, y)| ((x - cx).hypot(y - cy) - r).powi(2))
            .sum::<f64>()
    };
    let mut c0 = cost(cx, cy, r);
    for _ in 0..REFINE_STEPS {
        let mut a = [[0.0f64; 3]; 3];
        let mut b = [0.0f64; 3];
        for &(x, y) in &p {
            let d = (x - cx).hypot(y - cy);
            if d <= 1e-12 {
                continue;
            }
            let jac = [-(x - cx) / d, -(y - cy) / d, -1.0];
            let res = d - r;
            for i in 0..3 {
                for j in 0..3 {
                    a[i][j] += jac[i] * jac[j];
                }
                b[i] -= jac[i] * res;
            }
        }
        let Some(step) = solve3(a, b) else { break };
        let (nx, ny, nr) = (cx + step[0], cy + step[1], r + step[2]);
        let c1 = cost(nx, ny, nr);
        if c1.is_nan() || c1 >= c0 || nr <= 0.0 {
            break;
        }
        (cx, cy, r, c0) = (nx, ny, nr, c1);
    }
    if !(r.is_finite() && r < MAX_RADIUS_OVER_SPREAD) {
        return None;
    }
    let circle = Circle {
        centre: Complex32::new((mx + cx * spread) as f32, (my + cy * spread) as f32),
        radius: (r * spread) as f32,
        rms_residual: ((c0 / n).sqrt() * spread) as f32,
    };
    let ok = circle.centre.re.is_finite()
        && circle.centre.im.is_finite()
        && circle.radius.is_finite()
        && circle.rms_residual.is_finite();
    ok.then_some(circle)
}

/// The unwrapped angle of every sample about `centre`, in `out` (NaN where a sample is not
/// finite or sits on the centre; the unwrapping carries on from the last valid sample). Steps
/// between samples must stay under π, which chest motion on a 10 Hz grid does.
pub fn unwrapped_angle(z: &[Complex32], centre: Complex32, out: &mut Vec<f32>) {
    out.clear();
    let mut acc = 0.0f64;
    let mut last: Option<f64> = None;
    for v in z {
        let d = v - centre;
        if !(d.re.is_finite() && d.im.is_finite()) || d.norm_sqr() == 0.0 {
            out.push(f32::NAN);
            continue;
        }
        let ang = f64::from(d.im).atan2(f64::from(d.re));
        acc = match last {
            None => ang,
            Some(prev) => {
                let step = (ang - prev + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
                    - std::f64::consts::PI;
                acc + step
            }
        };
        last = Some(ang);
        out.push(acc as f32);
    }
}

/// Span of an unwrapped angle series, radians (max − min over its finite samples; 0 when none).
pub fn span(angle: &[f32]) -> f32 {
    let (lo, hi) = angle
        .iter()
        .filter(|v| v.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if hi >= lo { hi - lo } else { 0.0 }
}

/// Gaussian elimination with partial pivoting; `None` when singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    let scale = a
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    for i in 0..3 {
        let p = (i..3).max_by(|x, y| a[*x][i].abs().total_cmp(&a[*y][i].abs()))?;
        a.swap(i, p);
        b.swap(i, p);
        if a[i][i].is_nan() || a[i][i].abs() <= 1e-12 * scale {
            return None;
        }
        for r in i + 1..3 {
            let f = a[r][i] / a[i][i];
            let pivot = a[i];
            for (x, y) in a[r].iter_mut().zip(pivot).skip(i) {
                *x -= f * y;
            }
            b[r] -= f * b[i];
        }
    }
    let mut x = [0.0; 3];
    for i in (0..3).rev() {
        let mut s = b[i];
        for c in i + 1..3 {
            s -= a[i][c] * x[c];
        }
        x[i] = s / a[i][i];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A breath-like displacement (mm) with a small pulse on top.
    fn displacement(i: usize) -> f64 {
        let t = i as f64 / 10.0;
        8.0 * (std::f64::consts::TAU * 0.25 * t).sin()
            + 0.3 * (std::f64::consts::TAU * 1.2 * t).sin()
    }

    #[test]
    fn recovers_a_displacement_linearly_from_an_arc() {
        let lambda_mm = 57.7; // 5.2 GHz
        let centre = Complex32::new(3.0, -2.0);
        let r = 0.8f32;
        let z: Vec<Complex32> = (0..300)
            .map(|i| {
                let th = 4.0 * std::f64::consts::PI * displacement(i) / lambda_mm + 0.4;
                centre + Complex32::from_polar(r, th as f32)
            })
            .collect();
        let c = fit_circle(&z).expect("an arc");
        assert!((c.centre - centre).norm() < 1e-3, "{c:?}");
        assert!((c.radius - r).abs() < 1e-3);
        assert!(c.rms_residual < 1e-3);
        let mut ang = Vec::new();
        unwrapped_angle(&z, c.centre, &mut ang);
        // Linear in the displacement: angle = k·d + offset, with k = 4π/λ.
        let k = 4.0 * std::f64::consts::PI / lambda_mm;
        let off = f64::from(ang[0]) - k * displacement(0);
        for (i, a) in ang.iter().enumerate() {
            let want = k * displacement(i) + off;
            assert!((f64::from(*a) - want).abs() < 2e-3, "sample {i}");
        }
        // The swing is 1.7 rad each way: the phase about the origin is far from linear.
        assert!(span(&ang) > 3.0);
    }

    #[test]
    fn a_noisy_short_arc_keeps_its_centre() {
        use rand::SeedableRng;
        use rand_chacha::ChaCha8Rng;
        use rand_distr::{Distribution, Normal};
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let noise = Normal::new(0.0f32, 0.01).expect("normal");
        let centre = Complex32::new(1.0, 1.0);
        let z: Vec<Complex32> = (0..300)
            .map(|i| {
                let th = 0.6 * (i as f32 * 0.15).sin();
                centre
                    + Complex32::from_polar(0.5, th)
                    + Complex32::new(noise.sample(&mut rng), noise.sample(&mut rng))
            })
            .collect();
        let c = fit_circle(&z).expect("an arc");
        assert!((c.centre - centre).norm() < 0.05, "{c:?}");
        assert!((c.rms_residual - 0.014).abs() < 0.005, "{c:?}");
    }

    #[test]
    fn degenerate_inputs_give_none() {
        let few: Vec<Complex32> = (0..5)
            .map(|i| Complex32::from_polar(1.0, i as f32))
            .collect();
        assert!(fit_circle(&few).is_none());
        assert!(fit_circle(&[]).is_none());
        let same = vec![Complex32::new(1.0, 2.0); 50];
        assert!(fit_circle(&same).is_none());
        let line: Vec<Complex32> = (0..50)
            .map(|i| Complex32::new(i as f32, 2.0 * i as f32 + 1.0))
            .collect();
        assert!(fit_circle(&line).is_none());
        let nan = vec![Complex32::new(f32::NAN, 0.0); 50];
        assert!(fit_circle(&nan).is_none());
        let inf = vec![Complex32::new(f32::INFINITY, 1.0); 50];
        assert!(fit_circle(&inf).is_none());
        // NaN samples among good ones are skipped, and read NaN in the angle.
        let mut z: Vec<Complex32> = (0..50)
            .map(|i| Complex32::from_polar(2.0, 0.05 * i as f32))
            .collect();
        z[10] = Complex32::new(f32::NAN, 1.0);
        let c = fit_circle(&z).expect("an arc");
        assert!(c.centre.norm() < 1e-3);
        let mut ang = Vec::new();
        unwrapped_angle(&z, c.centre, &mut ang);
        assert!(ang[10].is_nan());
        assert!((ang[11] - 0.55).abs() < 1e-3);
        assert!(span(&[]) == 0.0 && span(&[f32::NAN]) == 0.0);
    }
}
