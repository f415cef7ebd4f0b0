//! Request → response, with no I/O: the guard, method and path checks, and the five records.
//!
//! Kept apart from the hyper listener so it can be tested and reasoned about as a pure function
//! of the request head, the bound port and one published [`Snapshot`].

use std::time::Instant;

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method, Response, StatusCode, Uri};
use http_body_util::Full;
use serde::Serialize;

use super::error::ApiError;
use super::host_guard;
use super::records::{FrameRecord, HealthRecord};
use super::runner::Snapshot;

/// Estimator name and version reported in `/health` `model`.
pub const MODEL: &str = concat!("csi-dsp-pipeline/", env!("CARGO_PKG_VERSION"));

/// Version of the local agent reported in `/health` `version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a route needs beyond the request itself.
#[derive(Debug, Clone, Copy)]
pub struct RouteContext<'a> {
    /// The port the engine is bound to (the only port `Host` may name).
    pub port: u16,
    /// When the engine started, for `uptime_s`.
    pub started: Instant,
    pub now: Instant,
    pub snapshot: &'a Snapshot,
    /// The MQTT link, reported in `/health` (`mqtt`).
    pub mqtt: &'a crate::link::LinkStatus,
}

/// The parts of a request the engine looks at.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub method: &'a Method,
    pub uri: &'a Uri,
    pub headers: &'a HeaderMap,
    /// The request declares a body (non-zero `Content-Length` or any `Transfer-Encoding`).
    pub has_body: bool,
}

/// Answers one request. Never panics; every failure becomes a JSON error response.
pub fn respond(head: RequestHead<'_>, ctx: RouteContext<'_>) -> Response<Full<Bytes>> {
    match route(head, ctx) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(err) => error_response(&err),
    }
}

fn route(head: RequestHead<'_>, ctx: RouteContext<'_>) -> Result<Bytes, ApiError> {
    // The guard comes first: a refused caller learns nothing else about the engine.
    host_guard::check(head.headers, head.uri, ctx.port)?;
    if head.method != Method::GET {
        return Err(ApiError::MethodNotAllowed(head.method.to_string()));
    }
    if head.has_body {
        return Err(ApiError::BodyNotAllowed);
    }
    let snap = ctx.snapshot;
    match head.uri.path() {
        "/health" => to_json(&health(ctx)),
        "/frame" => to_json(&frame(snap)),
        "/anomaly" => to_json(&snap.anomaly),
        "/fall" => to_json(&snap.fall),
        "/baseline" => to_json(&snap.baseline),
        other => Err(ApiError::NotFound(truncate(other, 200))),
    }
}

/// `GET /health`.
pub fn health(ctx: RouteContext<'_>) -> HealthRecord {
    let snap = ctx.snapshot;
    HealthRecord {
        ok: snap.is_fresh(ctx.now),
        source: snap.source,
        model: MODEL.to_string(),
        fleet: snap.fleet,
        rate_hz: round3(snap.rate_at(ctx.now)),
        predict: snap.baseline.predict(),
        uptime_s: ctx.now.saturating_duration_since(ctx.started).as_secs(),
        version: VERSION.to_string(),
        mqtt: ctx.mqtt.view(),
    }
}

/// `GET /frame`.
pub fn frame(snap: &Snapshot) -> FrameRecord {
    let e = &snap.estimates;
    FrameRecord {
        ts: format!("{:.3}", snap.published_at),
        tick: snap.tick,
        present: e.present,
        motion: unit_interval(e.motion),
        live: snap.source.is_live(),
        source: snap.source,
        csi_connected: snap.csi_connected(),
        csi_frames: e.frames,
        range_peak_m: finite(e.range_peak_m),
        range_strength: finite(e.range_strength),
        pose_ready: false,
        breathing_bpm: finite(e.breathing_bpm),
        breathing_strength: finite(e.breathing_strength),
        heart_bpm: finite(e.heart_bpm),
        heart_strength: finite(e.heart_strength),
    }
}

/// A non-finite estimate is no estimate: JSON has no NaN, and `null` is the honest answer.
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

/// Motion is always reported and the contract bounds it to 0..1; a non-finite value (a pipeline
/// bug) reads as still rather than breaking the JSON.
fn unit_interval(v: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<Bytes, ApiError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| ApiError::Internal(e.to_string()))
}

/// Headers every engine response carries.
fn json_response(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The JSON error response for `err`, with `Allow: GET` on 405.
pub fn error_response(err: &ApiError) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(&err.body())
        .map(Bytes::from)
        .unwrap_or_else(|_| {
            Bytes::from_static(
                br#"{"error":"internal","detail":"error body could not be encoded"}"#,
            )
        });
    let mut response = json_response(err.status(), body);
    if matches!(err, ApiError::MethodNotAllowed(_)) {
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET"));
    }
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::records::Fleet;
    use crate::engine::source::SourceKind;

    #[test]
    fn non_finite_estimates_become_null_and_motion_stays_in_range() {
        let mut snap = Snapshot::initial(SourceKind::Replay);
        snap.estimates.breathing_bpm = Some(f64::NAN);
        snap.estimates.heart_bpm = Some(f64::INFINITY);
        snap.estimates.range_peak_m = Some(2.5);
        snap.estimates.motion = 1.7;
        let f = frame(&snap);
        assert_eq!(f.breathing_bpm, None);
        assert_eq!(f.heart_bpm, None);
        assert_eq!(f.range_peak_m, Some(2.5));
        assert_eq!(f.motion, 1.0);
        assert!(!f.live && !f.csi_connected);
        let json = serde_json::to_value(&f).unwrap_or_default();
        assert!(json["breathing_bpm"].is_null());
    }

    #[test]
    fn only_a_hub_with_a_node_online_is_live_and_connected() {
        let mut snap = Snapshot::initial(SourceKind::Hub);
        assert!(frame(&snap).live);
        assert!(!frame(&snap).csi_connected);
        snap.fleet = Fleet {
            nodes_online: 1,
            nodes_total: 2,
        };
        assert!(frame(&snap).csi_connected);
        let mut sim = Snapshot::initial(SourceKind::Simulator);
        sim.fleet = snap.fleet;
        assert!(!frame(&sim).csi_connected);
    }

    #[test]
    fn health_is_ok_only_with_a_recent_frame() {
        let started = Instant::now();
        let mut snap = Snapshot::initial(SourceKind::Simulator);
        let mqtt = crate::link::LinkStatus::off();
        let ctx = |snap: &Snapshot, now| {
            health(RouteContext {
                port: 1,
                started,
                now,
                snapshot: snap,
                mqtt: &mqtt,
            })
        };
        assert!(!ctx(&snap, started).ok);
        snap.last_frame_at = Some(started);
        snap.rate_hz = 99.5;
        assert!(ctx(&snap, started + Duration::from_secs(4)).ok);
        assert_eq!(ctx(&snap, started + Duration::from_secs(1)).rate_hz, 99.5);
        let later = ctx(&snap, started + Duration::from_secs(6));
        assert!(!later.ok);
        assert_eq!(later.rate_hz, 0.0);
        assert_eq!(later.uptime_s, 6);
    }
}
