//! Signal-processing building blocks shared by the estimators.
//!
//! Each block is small, allocation-free on the hot path once warmed up, and tested on synthetic
//! signals so the estimators can be reasoned about piece by piece.

pub mod angle;
pub mod beats;
pub mod filter;
pub mod hampel;
pub mod harmonics;
pub mod rate;
pub mod resample;
pub mod running;
pub mod spectrum;

use num_complex::Complex32;

/// `|c|`, correctly rounded: the squares and their sum are exact or rounded once in `f64`,
/// which is what glibc's `hypotf` computes (bit for bit on every `f32` pair we tried) without
/// its call and special-case checks. Overflow cannot happen in `f64`; a non-finite part gives
/// a non-finite result, as `hypot` does except for `(±inf, NaN)`, which callers reject either
/// way.
#[inline]
pub fn magnitude(c: Complex32) -> f32 {
    let (re, im) = (f64::from(c.re), f64::from(c.im));
    (re * re + im * im).sqrt() as f32
}
