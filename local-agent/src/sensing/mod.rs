//! The sensing pipeline: CSI frames in, honest estimates out.

pub mod calibration;
pub mod csi;
pub mod dsp;
pub mod fall;
pub mod motion;
pub mod pipeline;
pub mod presence;
pub mod range;
pub mod routine;
pub mod source;
pub mod still;
pub mod vitals;
