//! The hub's HTTP listener (all interfaces, `SERVICE_SENTINEL_PORT`): `/health`, `/nodes`,
//! `/alerts`, the WebSocket `/ingest`, node sessions `/ingest/session`, and the loopback-only
//! `/control/away`.
//!
//! Every request passes the token rule first (loopback trusted, remote needs
//! `X-Service-Token`), so a refused caller learns nothing else. Loopback callers also pass the
//! engine's browser guard (no `Origin`/`Referer`, a loopback `Host`), because a web page in the
//! user's browser is a loopback peer too. Control routes answer loopback callers only.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use super::auth::{Caller, Refusal, TokenRule};
use super::ingest::Ingest;
use super::ingest_ws;
use super::registry::{Counters, CountersView, NodeView, Registry};
use super::session::{self, Sessions};
use crate::alerts::{AlertLog, AlertView, AwayMode};
use crate::engine::host_guard;
use crate::engine::records::ErrorBody;
use crate::engine::server::{Limits, accept_next};

/// Largest body of a control request.
const MAX_CONTROL_BODY: usize = 1024;

/// Time allowed for a control request's body to arrive.
const CONTROL_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Typed refusals of the hub API, each one status and `{"error", "detail"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubApiError {
    #[error(transparent)]
    Unauthorized(#[from] Refusal),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    BadRequest(String),
    #[error(
        "no such endpoint: {0}; the hub serves /health, /nodes, /alerts, /ingest (WebSocket), /ingest/session and /control/away (local only)"
    )]
    NotFound(String),
    #[error("method {method} is not allowed here; allowed: {allow}")]
    MethodNotAllowed { method: String, allow: &'static str },
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("the response could not be produced: {0}")]
    Internal(String),
}

impl HubApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            HubApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            HubApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            HubApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HubApiError::NotFound(_) => StatusCode::NOT_FOUND,
            HubApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            HubApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            HubApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            HubApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            HubApiError::Unauthorized(_) => "unauthorized",
            HubApiError::Forbidden(_) => "forbidden",
            HubApiError::BadRequest(_) => "bad_request",
            HubApiError::NotFound(_) => "not_found",
            HubApiError::MethodNotAllowed { .. } => "method_not_allowed",
            HubApiError::PayloadTooLarge(_) => "payload_too_large",
            HubApiError::Unavailable(_) => "unavailable",
            HubApiError::Internal(_) => "internal",
        }
    }
}

/// `GET /health`.
#[derive(Debug, Clone, Serialize)]
pub struct HubHealth {
    pub ok: bool,
    pub nodes_online: u32,
    pub nodes_total: u32,
    pub token_configured: bool,
    pub uptime_s: u64,
    /// Whether accepted frames feed the engine's pipeline (`run --source hub`).
    pub feeding_pipeline: bool,
    /// Input dropped or ignored by the hub, by reason, since start.
    pub ingest: CountersView,
}

#[derive(Debug, Serialize)]
struct NodesBody {
    nodes: Vec<NodeView>,
}

#[derive(Debug, Serialize)]
struct AlertsBody {
    hours: u32,
    alerts: Vec<AlertView>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AwayRequest {
    on: bool,
}

#[derive(Debug, Serialize)]
struct AwayBody {
    away: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionRequest {
    node_id: u8,
}

/// `POST /ingest/session`: what a node needs to tag its datagrams. The key is as secret as the
/// token that obtained it; the response is never cached and never logged.
#[derive(Serialize)]
struct SessionBody {
    /// 16 hex digits; the u64 in bytes 4..12 of every envelope (little-endian).
    session_id: String,
    /// 64 hex digits: the 32-byte HMAC-SHA256 key.
    key: String,
    node_id: u8,
    udp_port: u16,
    /// The session is forgotten after this long without a valid datagram.
    idle_timeout_s: u64,
    envelope_magic: &'static str,
    tag: &'static str,
}

/// Everything the handlers share.
pub struct HubState {
    pub registry: Arc<Registry>,
    pub ingest: Arc<Ingest>,
    pub sessions: Arc<Sessions>,
    /// The bound UDP port (named in session grants).
    pub udp_port: u16,
    pub rule: TokenRule,
    pub alerts: Arc<dyn AlertLog>,
    pub away: AwayMode,
    pub started: Instant,
    /// The bound port (the only port a control request's `Host` may name).
    pub port: u16,
    /// One permit per open `/ingest` WebSocket: upgraded connections leave hyper's connection
    /// limit, so they need their own.
    pub ws_permits: Arc<Semaphore>,
}

/// Parses `hours` from the query: an integer 1..=720, default 24.
pub fn parse_hours(query: Option<&str>) -> Result<u32, HubApiError> {
    let mut hours = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "hours" {
            return Err(HubApiError::BadRequest(format!(
                "unknown query parameter {:?}; /alerts takes only hours",
                truncate(key, 40)
            )));
        }
        if hours.is_some() {
            return Err(HubApiError::BadRequest("hours given more than once".into()));
        }
        let parsed =
            (!value.is_empty() && value.len() <= 3 && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u32>().ok())
                .flatten()
                .filter(|h| (1..=720).contains(h));
        hours = Some(parsed.ok_or_else(|| {
            HubApiError::BadRequest(format!(
                "hours must be an integer from 1 to 720, got {:?}",
                truncate(value, 40)
            ))
        })?);
    }
    Ok(hours.unwrap_or(24))
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn json_response<T: Serialize>(status: StatusCode, value: &T) -> Response<Full<Bytes>> {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = status;
            let h = response.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => error_response(&HubApiError::Internal(e.to_string())),
    }
}

/// The JSON error response for `err` (`Allow` on 405).
pub fn error_response(err: &HubApiError) -> Response<Full<Bytes>> {
    let body = ErrorBody {
        error: err.code(),
        detail: err.to_string(),
    };
    let bytes = serde_json::to_vec(&body)
        .map(Bytes::from)
        .unwrap_or_else(|_| {
            Bytes::from_static(
                br#"{"error":"internal","detail":"error body could not be encoded"}"#,
            )
        });
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = err.status();
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let HubApiError::MethodNotAllowed { allow, .. } = err {
        h.insert(ALLOW, HeaderValue::from_static(allow));
    }
    response
}

/// Answers one request. Never panics; every failure is a JSON error.
pub async fn respond(
    req: Request<Incoming>,
    peer: SocketAddr,
    state: Arc<HubState>,
    shutdown: watch::Receiver<bool>,
) -> Response<Full<Bytes>> {
    match route(req, peer, &state, shutdown).await {
        Ok(response) => response,
        Err(err) => error_response(&err),
    }
}

async fn route(
    req: Request<Incoming>,
    peer: SocketAddr,
    state: &Arc<HubState>,
    shutdown: watch::Receiver<bool>,
) -> Result<Response<Full<Bytes>>, HubApiError> {
    let caller = match state.rule.check(peer.ip(), req.headers()) {
        Ok(caller) => caller,
        Err(refusal) => {
            if req.uri().path() == "/ingest" {
                Counters::bump(&state.registry.counters.unauthorized);
            }
            return Err(refusal.into());
        }
    };
    // A web page in the user's browser is a loopback peer too. Like the engine, refuse
    // anything carrying Origin/Referer or naming a non-loopback Host (DNS rebinding), so pages
    // can neither read the node list nor switch away mode. Token callers are other machines.
    if caller == Caller::Local {
        host_guard::check(req.headers(), req.uri(), state.port)
            .map_err(|e| HubApiError::Forbidden(e.to_string()))?;
    }
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let has_body = !req.body().is_end_stream();
    let get_only = |allow| -> Result<(), HubApiError> {
        if method != Method::GET {
            return Err(HubApiError::MethodNotAllowed {
                method: method.to_string(),
                allow,
            });
        }
        if has_body {
            return Err(HubApiError::PayloadTooLarge(
                "this endpoint takes no request body".into(),
            ));
        }
        Ok(())
    };
    match path.as_str() {
        "/health" => {
            get_only("GET")?;
            let fleet = state.registry.fleet();
            Ok(json_response(
                StatusCode::OK,
                &HubHealth {
                    ok: true,
                    nodes_online: fleet.nodes_online,
                    nodes_total: fleet.nodes_total,
                    token_configured: state.rule.is_configured(),
                    uptime_s: state.started.elapsed().as_secs(),
                    feeding_pipeline: state.ingest.feeds_pipeline(),
                    ingest: state.registry.counters.view(),
                },
            ))
        }
        "/nodes" => {
            get_only("GET")?;
            Ok(json_response(
                StatusCode::OK,
                &NodesBody {
                    nodes: state.registry.view(),
                },
            ))
        }
        "/alerts" => {
            get_only("GET")?;
            let hours = parse_hours(req.uri().query())?;
            let log = Arc::clone(&state.alerts);
            // The log may be SQLite: read it off the async workers.
            let alerts = tokio::task::spawn_blocking(move || log.recent(hours))
                .await
                .map_err(|e| HubApiError::Internal(e.to_string()))?
                .map_err(|e| HubApiError::Unavailable(e.to_string()))?;
            Ok(json_response(StatusCode::OK, &AlertsBody { hours, alerts }))
        }
        "/ingest" => {
            if method != Method::GET {
                return Err(HubApiError::MethodNotAllowed {
                    method: method.to_string(),
                    allow: "GET",
                });
            }
            let accept = ingest_ws::accept_key(req.headers())
                .map_err(|e| HubApiError::BadRequest(e.to_string()))?;
            let permit = Arc::clone(&state.ws_permits)
                .try_acquire_owned()
                .map_err(|_| {
                    HubApiError::Unavailable(
                        "too many node WebSocket connections are open; close idle ones".into(),
                    )
                })?;
            Ok(ingest_ws::upgrade(
                req,
                accept,
                permit,
                peer,
                Arc::clone(&state.ingest),
                shutdown,
            ))
        }
        "/ingest/session" => {
            if method != Method::POST {
                return Err(HubApiError::MethodNotAllowed {
                    method: method.to_string(),
                    allow: "POST",
                });
            }
            let request: SessionRequest = read_json(req, "{\"node_id\": 0..255}").await?;
            let grant = state
                .sessions
                .open(peer.ip(), request.node_id, Instant::now());
            tracing::info!(
                %peer,
                node_id = grant.node_id,
                session = %format_args!("{:016x}", grant.session_id),
                "node session opened"
            );
            Ok(json_response(
                StatusCode::CREATED,
                &SessionBody {
                    session_id: format!("{:016x}", grant.session_id),
                    key: session::to_hex(&grant.key),
                    node_id: grant.node_id,
                    udp_port: state.udp_port,
                    idle_timeout_s: session::SESSION_IDLE.as_secs(),
                    envelope_magic: "0xC5115E01",
                    tag: "hmac-sha256-128",
                },
            ))
        }
        "/control/away" => {
            if caller != Caller::Local {
                return Err(HubApiError::Forbidden(
                    "control routes answer only callers on this computer".into(),
                ));
            }
            match method {
                Method::GET => {
                    get_only("GET, POST")?;
                }
                Method::POST => {
                    let body: AwayRequest = read_json(req, "{\"on\": true|false}").await?;
                    state.away.set(body.on);
                }
                _ => {
                    return Err(HubApiError::MethodNotAllowed {
                        method: method.to_string(),
                        allow: "GET, POST",
                    });
                }
            }
            Ok(json_response(
                StatusCode::OK,
                &AwayBody {
                    away: state.away.is_on(),
                },
            ))
        }
        other => Err(HubApiError::NotFound(truncate(other, 200))),
    }
}

/// Reads a small JSON body of the shape `shape` (named in errors).
async fn read_json<T: DeserializeOwned>(
    req: Request<Incoming>,
    shape: &str,
) -> Result<T, HubApiError> {
    let json_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json_type {
        return Err(HubApiError::BadRequest(format!(
            "send Content-Type: application/json with body {shape}"
        )));
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_CONTROL_BODY as u64) {
        return Err(HubApiError::PayloadTooLarge(format!(
            "request bodies here are at most {MAX_CONTROL_BODY} bytes"
        )));
    }
    // The header timeout does not cover the body: bound it too, so a client that never
    // finishes its body cannot hold a connection.
    let body = tokio::time::timeout(
        CONTROL_BODY_TIMEOUT,
        Limited::new(req.into_body(), MAX_CONTROL_BODY).collect(),
    )
    .await
    .map_err(|_| {
        HubApiError::BadRequest(format!(
            "the body did not arrive within {} s",
            CONTROL_BODY_TIMEOUT.as_secs()
        ))
    })?
    .map_err(|_| {
        HubApiError::PayloadTooLarge(format!(
            "request bodies here are at most {MAX_CONTROL_BODY} bytes"
        ))
    })?
    .to_bytes();
    serde_json::from_slice(&body).map_err(|e| {
        HubApiError::BadRequest(format!(
            "body must be {shape}: {}",
            truncate(&e.to_string(), 200)
        ))
    })
}

/// Serves until `shutdown` turns true, then lets in-flight requests finish for up to the grace
/// period. WebSocket connections end on the same signal.
pub async fn serve(
    listener: TcpListener,
    state: Arc<HubState>,
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
    let max = limits.max_connections.max(1);
    let permits = Arc::new(Semaphore::new(max));
    loop {
        let Some((permit, stream, peer)) = accept_next(&listener, &permits, &mut shutdown).await
        else {
            break;
        };
        let state = Arc::clone(&state);
        let conn_shutdown = shutdown.clone();
        let service = service_fn(move |req: Request<Incoming>| {
            let state = Arc::clone(&state);
            let shutdown = conn_shutdown.clone();
            async move {
                let method = req.method().clone();
                let path = state.rule.redact(req.uri().path());
                let response = respond(req, peer, state, shutdown).await;
                let status = response.status().as_u16();
                if status >= 400 {
                    tracing::info!(%peer, %method, path = %truncate(&path, 200), status, "hub request refused");
                } else {
                    tracing::debug!(%peer, %method, path = %truncate(&path, 200), status, "hub request");
                }
                Ok::<_, Infallible>(response)
            }
        });
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "hub connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    // Every connection task holds a permit until it ends: getting them all back means drained.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    tokio::select! {
        _ = permits.acquire_many(all) => tracing::debug!("hub connections closed"),
        _ = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!("hub connections still open after the grace period; closing");
        }
    }
}
