//! Where CSI frames come from: the embedded simulator, recorded files, or live nodes via the hub.

pub mod atheros;
mod lines;
pub mod replay;
pub mod simulator;
