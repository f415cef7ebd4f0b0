//! Offline evaluations on recorded data (`local-agent eval ...`): our estimators next to a peer's
//! published method, on the same packets, with the protocol written down in code.

pub mod espectre;
pub mod motion;
