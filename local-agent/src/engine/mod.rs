//! The loopback-only engine API (GET /health /frame /anomaly /fall /baseline).
