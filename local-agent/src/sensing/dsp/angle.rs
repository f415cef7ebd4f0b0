//! A branch-light `atan2` for the per-tick phase tracking: a link of 3 × 2 × 56 tones unwraps
//! 336 chain-pair phases every grid tick, and the library `atan2` (exact to an ulp, with many
//! branches) was a large share of a tick. This one is a degree-15 odd polynomial for `atan` on
//! [-1, 1] (least-squares fit on Chebyshev nodes) plus octant folding: at most 2.5e-7 rad from
//! the exact value, about one `f32` ulp at π, far below the phase noise of any CSI.

use std::f32::consts::{FRAC_PI_2, PI};

/// `atan(x)` for `|x| ≤ 1`.
#[inline]
fn atan_unit(x: f32) -> f32 {
    const C: [f32; 8] = [
        0.999_999_9,
        -0.333_319_6,
        0.199_692_41,
        -0.140_166_09,
        0.099_061_474,
        -0.059_367_646,
        0.024_166_476,
        -0.004_668_829,
    ];
    let t = x * x;
    let mut p = C[7];
    for c in C[..7].iter().rev() {
        p = p * t + c;
    }
    x * p
}

/// The angle of `(x, y)` like `f32::atan2(y, x)`, within 2.5e-7 rad; 0 for the origin. Inputs
/// must be finite (callers check).
#[inline]
pub fn atan2(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let (num, den) = if ay > ax { (ax, ay) } else { (ay, ax) };
    if den == 0.0 {
        return 0.0;
    }
    let mut a = atan_unit(num / den);
    if ay > ax {
        a = FRAC_PI_2 - a;
    }
    if x < 0.0 {
        a = PI - a;
    }
    if y < 0.0 { -a } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_library_atan2() {
        let mut worst = 0.0f32;
        for i in 0..20_000 {
            let th = -PI + (i as f32 + 0.5) * (2.0 * PI / 20_000.0);
            for r in [1e-6f32, 0.3, 1.0, 250.0] {
                let (y, x) = (r * th.sin(), r * th.cos());
                let d = (atan2(y, x) - y.atan2(x)).abs();
                // ±π is one angle.
                let d = d.min((d - 2.0 * PI).abs());
                worst = worst.max(d);
            }
        }
        assert!(worst < 5e-7, "worst error {worst}");
        assert_eq!(atan2(0.0, 0.0), 0.0);
        assert!((atan2(0.0, -1.0) - PI).abs() < 1e-6);
        assert!((atan2(-1.0, 0.0) + FRAC_PI_2).abs() < 1e-6);
    }
}
