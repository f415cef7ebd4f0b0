//! Presence-sensing local agent: turns Wi-Fi CSI into presence, motion, vitals and range estimates,
//! serves them on a loopback-only engine API, runs the sensor hub and pushes Away Alerts.

pub mod alerts;
pub mod doctor;
pub mod engine;
pub mod eval;
pub mod hub;
pub mod link;
pub mod mqtt;
pub mod runtime;
pub mod sensing;
pub mod service;
pub mod store;
pub mod view;
