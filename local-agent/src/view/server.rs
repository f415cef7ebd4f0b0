//! The live view's listener: 127.0.0.1 only, its own port, every answer behind the token.
//!
//! Routes (all need the session cookie, or `Authorization: Bearer <token>`):
//! - `GET /?token=…`: sets the cookie and redirects to `/` (so the token leaves the address bar);
//! - `GET /`, `/app.js`, `/app.css`, `/icon.svg`: the page, embedded in the binary;
//! - `GET /api/state`: one update as JSON; `GET /api/events`: the same as Server-Sent Events,
//!   twice a second, with the timelines' new points;
//! - `GET /api/doctor`: the doctor's findings; `POST /api/away`: `{"on": bool}`, same-origin only.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, LOCATION, SET_COOKIE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc, watch};

use super::adapter::{self, Inputs};
use super::auth::{self, Refused, Token};
use crate::alerts::schedule::AwaySchedule;
use crate::alerts::{AlertLog, AlertView, AwayMode};
use crate::doctor::{self, Check, Report};
use crate::engine::history::{Minute, Sample};
use crate::engine::server::{Limits, accept_next};

use crate::runtime::VIEW_HEADER;

/// Time between two updates of a watching page.
pub const UPDATE_PERIOD: Duration = Duration::from_millis(500);
/// The alert log is read at most this often per page.
const ALERTS_PERIOD: Duration = Duration::from_secs(2);
/// Alerts sent to the page (newest first).
const ALERTS_SHOWN: usize = 50;
/// A doctor report is reused this long.
const DOCTOR_CACHE: Duration = Duration::from_secs(10);
/// Largest body of `POST /api/away`.
const MAX_BODY: usize = 1024;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const ICON_SVG: &str = include_str!("assets/icon.svg");

/// The page may load only its own scripts, styles and images and talk only to its own origin;
/// no frame may embed it, and no form may post elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type ViewBody = BoxBody<Bytes, Infallible>;

/// What the handlers share.
pub struct ViewState {
    pub port: u16,
    pub token: Token,
    pub doctor: doctor::Context,
    pub checks: Vec<Box<dyn Check>>,
    pub alerts: Arc<dyn AlertLog>,
    pub away: AwayMode,
    pub schedule: AwaySchedule,
    pub started: Instant,
    pub shutdown: watch::Receiver<bool>,
    doctor_cache: tokio::sync::Mutex<Option<(Instant, Report)>>,
    tz: jiff::tz::TimeZone,
}

impl ViewState {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        port: u16,
        token: Token,
        doctor: doctor::Context,
        alerts: Arc<dyn AlertLog>,
        away: AwayMode,
        schedule: AwaySchedule,
        started: Instant,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            port,
            token,
            doctor,
            checks: doctor::checks::all(),
            alerts,
            away,
            schedule,
            started,
            shutdown,
            doctor_cache: tokio::sync::Mutex::new(None),
            tz: jiff::tz::TimeZone::system(),
        }
    }
}

/// Streams Server-Sent Events from a channel; ends when the sender goes.
struct SseBody {
    rx: mpsc::Receiver<Bytes>,
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

fn full(body: impl Into<Bytes>) -> ViewBody {
    Full::new(body.into()).boxed()
}

/// Headers on every answer, refusals included.
fn harden(response: &mut Response<ViewBody>) {
    let h = response.headers_mut();
    let set = |h: &mut http::HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(h, "content-security-policy", CSP);
    set(h, "x-frame-options", "DENY");
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "cross-origin-opener-policy", "same-origin");
    set(h, "cross-origin-resource-policy", "same-origin");
    set(
        h,
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(VIEW_HEADER, HeaderValue::from_static("1"));
}

fn respond(status: StatusCode, content_type: &'static str, body: ViewBody) -> Response<ViewBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    harden(&mut r);
    r
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<ViewBody> {
    match serde_json::to_vec(value) {
        Ok(b) => respond(status, "application/json", full(b)),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &e.to_string(),
        ),
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    detail: &'a str,
}

fn error(status: StatusCode, code: &str, detail: &str) -> Response<ViewBody> {
    let body = serde_json::to_vec(&ErrorBody {
        error: code,
        detail,
    })
    .unwrap_or_default();
    respond(status, "application/json", full(body))
}

/// The page a visitor without the token sees: no data, just what to do.
fn locked(detail: &str) -> Response<ViewBody> {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Presence agent: locked</title></head>\
         <body><h1>Presence agent</h1><p>{}</p></body></html>",
        escape(detail)
    );
    respond(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        full(html),
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Answers one request. Never panics.
pub async fn handle(req: Request<Incoming>, state: Arc<ViewState>) -> Response<ViewBody> {
    let port = state.port;
    if let Err(Refused::Host(why)) = auth::check_host(req.headers(), req.uri(), port) {
        return error(StatusCode::FORBIDDEN, "forbidden", &why);
    }
    let path = req.uri().path().to_string();
    if req.method() == Method::GET
        && path == "/"
        && let Some(presented) = auth::query_token(req.uri())
    {
        if state.token.matches(presented) {
            let mut r = respond(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", full(""));
            r.headers_mut()
                .insert(LOCATION, HeaderValue::from_static("/"));
            if let Ok(v) = HeaderValue::from_str(&auth::set_cookie(port, &state.token)) {
                r.headers_mut().insert(SET_COOKIE, v);
            }
            return r;
        }
        tracing::info!("live view visit with a wrong token refused");
        return locked(
            "This address has a token from an earlier start of the agent, or a mistyped one. Open the address the agent printed when it started, or run `local-agent open`.",
        );
    }
    if !auth::has_session(req.headers(), port, &state.token) {
        return locked(&Refused::NoSession.to_string());
    }
    if let Err(e) = auth::check_fetch_site(req.headers()) {
        return error(StatusCode::FORBIDDEN, "forbidden", &e.to_string());
    }
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/") => respond(StatusCode::OK, "text/html; charset=utf-8", full(INDEX_HTML)),
        (Method::GET, "/app.js") => respond(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            full(APP_JS),
        ),
        (Method::GET, "/app.css") => {
            respond(StatusCode::OK, "text/css; charset=utf-8", full(APP_CSS))
        }
        (Method::GET, "/icon.svg") => respond(StatusCode::OK, "image/svg+xml", full(ICON_SVG)),
        (Method::GET, "/api/state") => {
            let alerts = read_alerts(&state).await;
            json(StatusCode::OK, &build(&state, alerts))
        }
        (Method::GET, "/api/events") => events(state),
        (Method::GET, "/api/doctor") => json(StatusCode::OK, &doctor_report(&state).await),
        (Method::POST, "/api/away") => away(req, &state).await,
        (
            _,
            "/" | "/app.js" | "/app.css" | "/icon.svg" | "/api/state" | "/api/events"
            | "/api/doctor",
        ) => {
            let mut r = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route answers GET only",
            );
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("GET"));
            r
        }
        (_, "/api/away") => {
            let mut r = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route answers POST only",
            );
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
            r
        }
        _ => error(StatusCode::NOT_FOUND, "not_found", "no such page"),
    }
}

async fn doctor_report(state: &ViewState) -> Report {
    let mut cache = state.doctor_cache.lock().await;
    if let Some((at, report)) = cache.as_ref()
        && at.elapsed() < DOCTOR_CACHE
    {
        return report.clone();
    }
    let report = doctor::run(&state.checks, &state.doctor).await;
    *cache = Some((Instant::now(), report.clone()));
    report
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AwayRequest {
    on: bool,
}

#[derive(Serialize)]
struct AwayReply {
    away: bool,
}

async fn away(req: Request<Incoming>, state: &ViewState) -> Response<ViewBody> {
    if let Err(e) = auth::check_same_origin(req.headers(), state.port) {
        tracing::info!(error = %e, "away switch refused");
        return error(StatusCode::FORBIDDEN, "forbidden", &e.to_string());
    }
    let is_json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim() == "application/json")
        });
    if !is_json {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send Content-Type: application/json",
        );
    }
    let body = Limited::new(req.into_body(), MAX_BODY);
    let bytes = match tokio::time::timeout(Duration::from_secs(10), body.collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(_)) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the body must be at most 1 KiB",
            );
        }
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                "the body did not arrive",
            );
        }
    };
    match serde_json::from_slice::<AwayRequest>(&bytes) {
        Ok(r) => {
            state.away.set(r.on);
            tracing::info!(away = r.on, "away mode set from the live view");
            json(
                StatusCode::OK,
                &AwayReply {
                    away: state.away.is_on(),
                },
            )
        }
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &format!("expected {{\"on\": true|false}}: {e}"),
        ),
    }
}

async fn read_alerts(state: &ViewState) -> Vec<AlertView> {
    let log = Arc::clone(&state.alerts);
    match tokio::task::spawn_blocking(move || log.recent(24)).await {
        Ok(Ok(mut list)) => {
            list.truncate(ALERTS_SHOWN);
            list
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the live view cannot read the alert log");
            Vec::new()
        }
        Err(_) => Vec::new(),
    }
}

fn build(state: &ViewState, alerts: Vec<AlertView>) -> adapter::State {
    let live = state.doctor.live.as_ref();
    let now = Instant::now();
    let local = jiff::Timestamp::now().to_zoned(state.tz.clone()).datetime();
    let (snap, calibrating_for_s, tonight) = match live {
        Some(l) => (
            Arc::clone(&l.snapshots.borrow()),
            l.history.calibrating_for().map(|d| d.as_secs_f64()),
            l.history.tonight(&state.tz),
        ),
        None => (
            Arc::new(crate::engine::runner::Snapshot::initial(
                crate::engine::source::SourceKind::Simulator,
            )),
            None,
            [None; 12],
        ),
    };
    adapter::state(Inputs {
        snap: &snap,
        now,
        started: state.started,
        hub: live.and_then(|l| l.hub.as_ref()),
        calibrating_for_s,
        alerts,
        away: &state.away,
        schedule: state.schedule.entries(),
        in_window: state.schedule.is_active_at(local),
        tonight,
    })
}

/// One Server-Sent Event: the state plus the timeline points the page has not seen.
#[derive(Serialize)]
struct Update {
    /// The page should drop what it has (first message of a connection).
    reset: bool,
    state: adapter::State,
    samples: Vec<Sample>,
    minutes: Vec<Minute>,
    minute: Option<Minute>,
}

fn events(state: Arc<ViewState>) -> Response<ViewBody> {
    let (tx, rx) = mpsc::channel::<Bytes>(2);
    tokio::spawn(stream(state, tx));
    let mut r = respond(StatusCode::OK, "text/event-stream", SseBody { rx }.boxed());
    r.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// Feeds one watching page until it goes away or the agent stops. Only runs while someone
/// watches, so an unwatched agent pays nothing for the view but the 1 Hz history.
async fn stream(state: Arc<ViewState>, tx: mpsc::Sender<Bytes>) {
    let mut shutdown = state.shutdown.clone();
    let mut tick = tokio::time::interval(UPDATE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last_sample = i64::MIN;
    let mut last_minute = i64::MIN;
    let mut alerts = Vec::new();
    let mut alerts_at: Option<Instant> = None;
    let mut first = true;
    if tx
        .send(Bytes::from_static(b"retry: 2000\n\n"))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
            _ = tx.closed() => break,
        }
        if alerts_at.is_none_or(|t| t.elapsed() >= ALERTS_PERIOD) {
            alerts = read_alerts(&state).await;
            alerts_at = Some(Instant::now());
        }
        let (samples, minutes, minute) = match state.doctor.live.as_ref() {
            Some(l) => {
                let samples = l.history.samples_after(last_sample);
                let (minutes, minute) = l.history.minutes_after(last_minute);
                (samples, minutes, minute)
            }
            None => (Vec::new(), Vec::new(), None),
        };
        if let Some(s) = samples.last() {
            last_sample = s.t;
        }
        if let Some(m) = minutes.last() {
            last_minute = m.t;
        }
        let update = Update {
            reset: first,
            state: build(&state, alerts.clone()),
            samples,
            minutes,
            minute,
        };
        first = false;
        let Ok(json) = serde_json::to_string(&update) else {
            break;
        };
        let message = Bytes::from(format!("event: update\ndata: {json}\n\n"));
        if tx.send(message).await.is_err() {
            break;
        }
    }
}

/// Serves until `shutdown` turns true; open event streams end with it.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ViewState>,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    loop {
        let Some((permit, stream, peer)) = accept_next(&listener, &permits, &mut shutdown).await
        else {
            break;
        };
        let state = Arc::clone(&state);
        let service = service_fn(move |req: Request<Incoming>| {
            let state = Arc::clone(&state);
            async move {
                let method = req.method().clone();
                let path = req.uri().path().to_string();
                let response = handle(req, state).await;
                let status = response.status().as_u16();
                if status >= 400 {
                    tracing::info!(%peer, %method, %path, status, "live view request refused");
                } else {
                    tracing::debug!(%peer, %method, %path, status, "live view request");
                }
                Ok::<_, Infallible>(response)
            }
        });
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "live view connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!("live view connections still open after the grace period; closing");
        }
    }
}
