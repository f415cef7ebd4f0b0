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
pub mod spectrum;
