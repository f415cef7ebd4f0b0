//! The REST router: one async function from a buffered request to a buffered response, shared by
//! the Lambda adapter and the local hyper server.
//!
//! Order of work for `/api/v1`: size check → authentication (if a key is sent) → rate limit
//! (per key, or per client address for anonymous calls) → the route. Every response carries
//! `X-Request-Id` and `RateLimit-Policy`, and `RateLimit` once the request was counted.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use rand::RngCore;
use serde_json::{Value, json};

use crate::catalog_api::{AppFilter, Catalog, CatalogError};
use crate::clock::Clock;
use crate::connections::Integrations;
use crate::custom;
use crate::keys::{self, KeyHash};
use crate::mcp::{self, McpService};
use crate::openapi::{self, OpenApi, OpenApiError};
use crate::problem::{self, Problem};
use crate::ratelimit::RateLimitPolicy;
use crate::redact::redact_path;
use crate::runs::LATEST;
use crate::store::{Principal, Store, StoreError};
use crate::triggers::{self, Triggers};

/// Largest accepted request body. Tool searches are a sentence; nothing needs more.
pub const MAX_BODY: usize = 64 * 1024;
pub const REQUEST_ID_HEADER: &str = "x-request-id";
const API_PREFIX: &str = "/api/v1";
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 100;
const DEFAULT_TOOLS: usize = 10;

/// The caller's network address, attached as a request extension by the adapter (hyper peer
/// address, or API Gateway's `sourceIp`). Anonymous requests are rate-limited by it.
#[derive(Debug, Clone)]
pub struct ClientAddr(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Health,
    OpenApi,
    Catalog,
    Apps,
    FindTools,
    Tool,
    Runs,
    Connect,
    Connections,
    Connection,
    RunTool,
    ListCustomConnectors,
    CreateCustomConnector,
    GetCustomConnector,
    DeleteCustomConnector,
    RefreshCustomConnector,
    /// `/triggers…` and `/events`: several methods; `triggers.rs` dispatches them.
    Triggers,
}

impl Route {
    fn public(self) -> bool {
        matches!(self, Route::Health | Route::OpenApi | Route::Catalog)
    }
}

/// The `Allow` header of routes that take more than one method.
fn allowed(route: Route) -> Option<&'static str> {
    match route {
        Route::ListCustomConnectors | Route::CreateCustomConnector => Some("GET, POST"),
        Route::GetCustomConnector | Route::DeleteCustomConnector => Some("GET, DELETE"),
        _ => None,
    }
}

/// Routes of custom connectors (`/custom-connectors[/{id}[/refresh]]`), by method.
fn custom_route(rest: &str, m: &Method) -> Option<(Route, Method)> {
    if rest == "/custom-connectors" {
        return Some(if *m == Method::GET {
            (Route::ListCustomConnectors, Method::GET)
        } else {
            (Route::CreateCustomConnector, Method::POST)
        });
    }
    let id = rest.strip_prefix("/custom-connectors/")?;
    if let Some(id) = id.strip_suffix("/refresh") {
        return (!id.is_empty() && !id.contains('/'))
            .then_some((Route::RefreshCustomConnector, Method::POST));
    }
    if id.is_empty() || id.contains('/') {
        return None;
    }
    Some(if *m == Method::DELETE {
        (Route::DeleteCustomConnector, Method::DELETE)
    } else {
        (Route::GetCustomConnector, Method::GET)
    })
}

/// Matches a path below `/api/v1`; returns the route and the methods it allows.
fn route(rest: &str, m: &Method) -> Option<(Route, Method)> {
    if let Some(r) = custom_route(rest, m) {
        return Some(r);
    }
    Some(match rest {
        "/health" => (Route::Health, Method::GET),
        "/openapi.json" => (Route::OpenApi, Method::GET),
        "/catalog" => (Route::Catalog, Method::GET),
        "/apps" => (Route::Apps, Method::GET),
        "/tools/find" => (Route::FindTools, Method::POST),
        "/runs" => (Route::Runs, Method::GET),
        "/connections" => (Route::Connections, Method::GET),
        "/events" => (Route::Triggers, Method::GET),
        r if r == "/triggers" || r.starts_with("/triggers/") => (Route::Triggers, Method::GET),
        _ => {
            let one = |p: &str| !p.is_empty() && !p.contains('/');
            if let Some(name) = rest.strip_prefix("/tools/") {
                match name.strip_suffix("/run") {
                    Some(tool) if one(tool) => (Route::RunTool, Method::POST),
                    _ if one(name) => (Route::Tool, Method::GET),
                    _ => return None,
                }
            } else if rest
                .strip_prefix("/apps/")
                .and_then(|a| a.strip_suffix("/connect"))
                .is_some_and(one)
            {
                (Route::Connect, Method::POST)
            } else if rest.strip_prefix("/connections/").is_some_and(one) {
                (Route::Connection, Method::DELETE)
            } else {
                return None;
            }
        }
    })
}

/// A successful answer, before the common headers are added.
struct Reply {
    status: StatusCode,
    content_type: HeaderValue,
    /// Headers of a response produced elsewhere (the MCP service).
    extra: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(v: &Value) -> Self {
        Self {
            status: StatusCode::OK,
            content_type: HeaderValue::from_static("application/json"),
            extra: HeaderMap::new(),
            body: Bytes::from(v.to_string()),
        }
    }
}

/// Why the app could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    OpenApi(#[from] OpenApiError),
    #[error("MCP tools: {0}")]
    Mcp(String),
}

/// What the rate limiter said about this request.
#[derive(Default)]
struct Meta {
    /// `(remaining, reset_s)` once counted.
    rate: Option<(u32, u64)>,
    allow: Option<String>,
    account: Option<String>,
    api: bool,
}

enum Auth {
    None,
    Invalid(&'static str),
    Key(Principal),
}

pub struct App<S> {
    store: S,
    catalog: Arc<dyn Catalog>,
    clock: Arc<dyn Clock>,
    policy: RateLimitPolicy,
    openapi: OpenApi,
    mcp: McpService<S>,
    integrations: Option<Arc<Integrations>>,
    /// Outbound client and sealer for custom connectors; without them their endpoints answer 503.
    custom: Option<custom::Runtime>,
    triggers: Option<Arc<Triggers>>,
}

fn new_request_id() -> String {
    let mut r = [0u8; 8];
    rand::rng().fill_bytes(&mut r);
    let mut id = String::from("req_");
    for b in r {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

fn store_problem(e: &StoreError) -> Problem {
    tracing::error!(error = %e, "store failure");
    Problem::unavailable()
}

fn connection_status(connected: bool) -> &'static str {
    if connected {
        "connected"
    } else {
        "not_connected"
    }
}

/// Parses the query string, refusing parameters the route does not know.
fn query(req: &Request<Bytes>, allowed: &[&str]) -> Result<Vec<(String, String)>, Problem> {
    let raw = req.uri().query().unwrap_or("");
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
        if !allowed.contains(&k.as_ref()) {
            return Err(Problem::bad_request(
                "unknown_parameter",
                format!(
                    "Unknown query parameter {k:?}; this endpoint accepts: {}.",
                    if allowed.is_empty() {
                        "none".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ));
        }
        if out.iter().any(|(seen, _)| seen == k.as_ref()) {
            return Err(Problem::bad_request(
                "invalid_parameter",
                format!("Query parameter {k:?} is given more than once."),
            ));
        }
        out.push((k.into_owned(), v.into_owned()));
    }
    Ok(out)
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn page_limit(params: &[(String, String)]) -> Result<usize, Problem> {
    match param(params, "limit") {
        None => Ok(DEFAULT_PAGE),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                Problem::bad_request(
                    "invalid_parameter",
                    format!("limit must be an integer from 1 to {MAX_PAGE}, not {v:?}."),
                )
            }),
    }
}

fn catalog_error(e: CatalogError) -> Problem {
    match e {
        CatalogError::InvalidCursor => Problem::bad_request(
            "invalid_cursor",
            "The cursor is not one this API issued; start again without it.",
        ),
    }
}

impl<S: Store + Clone> App<S> {
    pub fn new(
        store: S,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        policy: RateLimitPolicy,
    ) -> Result<Self, StartError> {
        let mcp =
            mcp::service(store.clone(), catalog.clone(), None, None).map_err(StartError::Mcp)?;
        Ok(Self {
            store,
            catalog,
            clock,
            policy,
            openapi: OpenApi::load()?,
            mcp,
            integrations: None,
            custom: None,
            triggers: None,
        })
    }

    /// Turns on connections, hosted connect pages and tool runs (REST and MCP).
    pub fn with_integrations(
        mut self,
        integrations: Arc<Integrations>,
    ) -> Result<Self, StartError> {
        let custom = custom::Runtime {
            outbound: integrations.outbound.clone(),
            sealer: Some(integrations.sealer.clone()),
        };
        self.mcp = mcp::service(
            self.store.clone(),
            self.catalog.clone(),
            Some(integrations.clone()),
            Some(custom.clone()),
        )
        .map_err(StartError::Mcp)?;
        self.integrations = Some(integrations);
        self.custom = Some(custom);
        Ok(self)
    }

    fn integrations(&self) -> Result<&Arc<Integrations>, Problem> {
        self.integrations.as_ref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "integrations_unavailable",
                "Connections and tool runs are not configured on this server (credentials key, \
                 PUBLIC_BASE_URL); see the operator's logs.",
            )
        })
    }

    /// Enables custom connectors (REST and MCP) with the guarded client and the sealer.
    pub fn with_custom_connectors(mut self, rt: custom::Runtime) -> Result<Self, StartError> {
        self.mcp = mcp::service(
            self.store.clone(),
            self.catalog.clone(),
            self.integrations.clone(),
            Some(rt.clone()),
        )
        .map_err(StartError::Mcp)?;
        self.custom = Some(rt);
        Ok(self)
    }

    /// Serves `/api/v1/triggers…`, `/api/v1/events` and the `/hooks/` ingress with `t`
    /// (without it they answer 503 `triggers_unavailable`).
    pub fn with_triggers(mut self, t: Arc<Triggers>) -> Self {
        self.triggers = Some(t);
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Answers one request. Never fails: every error becomes a problem response.
    pub async fn handle(&self, req: Request<Bytes>) -> Response<Bytes> {
        let started = Instant::now();
        let request_id = new_request_id();
        let path = redact_path(req.uri().path()).into_owned();
        let mut meta = Meta::default();
        let (reply, retry_after) = match self.respond(&req, &mut meta).await {
            Ok(r) => (r, None),
            Err(p) => (
                Reply {
                    status: p.status,
                    content_type: HeaderValue::from_static(problem::CONTENT_TYPE),
                    extra: HeaderMap::new(),
                    body: Bytes::from(p.body(&path, &request_id).to_string()),
                },
                p.retry_after,
            ),
        };
        let has_body = !reply.body.is_empty();
        let mut resp = Response::new(reply.body);
        *resp.status_mut() = reply.status;
        *resp.headers_mut() = reply.extra;
        let h = resp.headers_mut();
        // An accepted MCP notification (202) has no body, hence no type.
        if has_body {
            h.insert(header::CONTENT_TYPE, reply.content_type);
        }
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            h.insert(REQUEST_ID_HEADER, v);
        }
        if meta.api
            && let Ok(v) = HeaderValue::from_str(&self.policy.policy_header())
        {
            h.insert("ratelimit-policy", v);
        }
        if let Some((remaining, reset)) = meta.rate
            && let Ok(v) = HeaderValue::from_str(&self.policy.limit_header(remaining, reset))
        {
            h.insert("ratelimit", v);
        }
        if let Some(s) = retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some(m) = meta.allow
            && let Ok(v) = HeaderValue::from_str(&m)
        {
            h.insert(header::ALLOW, v);
        }
        if reply.status == StatusCode::UNAUTHORIZED {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        tracing::info!(
            request_id = %request_id,
            method = %req.method(),
            path = %path,
            status = reply.status.as_u16(),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            account = meta.account.as_deref().unwrap_or("-"),
            "request"
        );
        resp
    }

    async fn respond(&self, req: &Request<Bytes>, meta: &mut Meta) -> Result<Reply, Problem> {
        let path = req.uri().path();
        let is_mcp = path == "/mcp" || path.starts_with("/mcp/");
        if path.starts_with("/connect/") || path == "/oauth/callback" {
            return self.hosted(req, meta).await;
        }
        if let Some(tail) = path.strip_prefix("/hooks/") {
            return self.hook(req, tail, meta).await;
        }
        let rest = match path.strip_prefix(API_PREFIX) {
            Some(rest) => rest,
            None if is_mcp => "",
            None => {
                return Err(Problem::not_found(
                    "not_found",
                    "No such endpoint; the API lives under /api/v1 and MCP at /mcp.",
                ));
            }
        };
        meta.api = true;

        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        // Custom connectors take whole OpenAPI documents.
        let limit = if rest == "/custom-connectors" {
            custom::MAX_REQUEST_BODY
        } else {
            MAX_BODY
        };
        if req.body().len() > limit || declared > limit as u64 {
            return Err(Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("Request bodies are limited to {limit} bytes."),
            ));
        }

        let auth = if is_mcp {
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            match segments.as_slice() {
                ["mcp"] => self.authenticate(req).await?,
                ["mcp", "k", key] => self.authenticate_key(key).await?,
                _ => {
                    return Err(Problem::not_found(
                        "not_found",
                        "The MCP endpoint is /mcp (with a Bearer key) or /mcp/k/<API_KEY>.",
                    ));
                }
            }
        } else {
            self.authenticate(req).await?
        };
        let subject = match &auth {
            Auth::Key(p) => format!("key:{}", p.key_hash.as_str()),
            _ => match req.extensions().get::<ClientAddr>() {
                Some(a) => format!("addr:{}", a.0),
                None => "addr:unknown".to_owned(),
            },
        };
        self.rate_limit(&subject, meta).await?;

        if is_mcp {
            return match auth {
                Auth::Key(p) => {
                    meta.account = Some(p.account_id.clone());
                    self.forward_mcp(req, p).await
                }
                Auth::Invalid(why) => Err(Problem::unauthorized(why)),
                Auth::None => Err(Problem::unauthorized(
                    "MCP needs an API key: Authorization: Bearer <API_KEY>, or the URL /mcp/k/<API_KEY>.",
                )),
            };
        }

        let Some((route, method)) = route(rest, req.method()) else {
            return Err(Problem::not_found(
                "not_found",
                format!("No endpoint {API_PREFIX}{rest}."),
            ));
        };
        if req.method() != method && route != Route::Triggers {
            meta.allow = Some(allowed(route).unwrap_or(method.as_str()).to_owned());
            return Err(Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("{API_PREFIX}{rest} accepts {method} only."),
            ));
        }
        let principal = match auth {
            Auth::Key(p) => {
                meta.account = Some(p.account_id.clone());
                Some(p)
            }
            Auth::Invalid(why) => return Err(Problem::unauthorized(why)),
            Auth::None if route.public() => None,
            Auth::None => {
                return Err(Problem::unauthorized(
                    "This endpoint needs an API key: send Authorization: Bearer <API_KEY>.",
                ));
            }
        };

        match (route, principal) {
            (Route::Health, _) => Ok(Reply::json(
                &json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}),
            )),
            (Route::OpenApi, _) => Ok(Reply {
                status: StatusCode::OK,
                content_type: HeaderValue::from_static("application/json"),
                extra: HeaderMap::new(),
                body: self.openapi.bytes.clone(),
            }),
            (Route::Catalog, _) => self.catalog_page(req),
            (Route::Apps, Some(p)) => self.apps(req, &p).await,
            (Route::FindTools, Some(p)) => self.find_tools(req, &p).await,
            (Route::Tool, Some(p)) => {
                let name = rest.trim_start_matches("/tools/");
                self.tool(name, &p).await
            }
            (Route::Runs, Some(p)) => self.runs(req, &p).await,
            (Route::Connect, Some(p)) => {
                let app = rest
                    .trim_start_matches("/apps/")
                    .trim_end_matches("/connect");
                self.connect(req, app, &p).await
            }
            (Route::Connections, Some(p)) => self.connections(req, &p).await,
            (Route::Connection, Some(p)) => {
                let id = rest.trim_start_matches("/connections/");
                self.delete_connection(req, id, &p).await
            }
            (Route::RunTool, Some(p)) => {
                let tool = rest.trim_start_matches("/tools/").trim_end_matches("/run");
                if custom::is_custom(tool) {
                    return self.run_custom(req, tool, &p).await;
                }
                self.run_tool(req, tool, &p).await
            }
            (Route::ListCustomConnectors, Some(p)) => {
                let params = query(req, &["cursor", "limit"])?;
                let limit = page_limit(&params)?;
                Ok(Reply::json(
                    &custom::list(
                        &self.store,
                        &p.account_id,
                        param(&params, "cursor"),
                        Some(limit),
                    )
                    .await?,
                ))
            }
            (Route::CreateCustomConnector, Some(p)) => {
                query(req, &[])?;
                let body = self.json_body(req, &self.openapi.create_custom_connector_request)?;
                let rt = self.custom_runtime()?;
                let v = custom::create(&self.store, rt, &p.account_id, &body, self.clock.now_ms())
                    .await
                    .map_err(|e| e.problem())?;
                let mut reply = Reply::json(&v);
                reply.status = StatusCode::CREATED;
                Ok(reply)
            }
            (Route::GetCustomConnector, Some(p)) => {
                query(req, &[])?;
                let id = rest.trim_start_matches("/custom-connectors/");
                let v = custom::get(&self.store, &p.account_id, id)
                    .await
                    .map_err(|e| e.problem())?;
                Ok(Reply::json(&v))
            }
            (Route::RefreshCustomConnector, Some(p)) => {
                query(req, &[])?;
                let id = rest
                    .trim_start_matches("/custom-connectors/")
                    .trim_end_matches("/refresh");
                let rt = self.custom_runtime()?;
                let v = custom::refresh(&self.store, rt, &p.account_id, id, self.clock.now_ms())
                    .await
                    .map_err(|e| e.problem())?;
                Ok(Reply::json(&v))
            }
            (Route::DeleteCustomConnector, Some(p)) => {
                query(req, &[])?;
                let id = rest.trim_start_matches("/custom-connectors/");
                custom::delete(&self.store, &p.account_id, id)
                    .await
                    .map_err(|e| e.problem())?;
                Ok(Reply {
                    status: StatusCode::NO_CONTENT,
                    content_type: HeaderValue::from_static("application/json"),
                    extra: HeaderMap::new(),
                    body: Bytes::new(),
                })
            }
            (Route::Triggers, Some(p)) => self.triggers_api(req, rest, &p, meta).await,
            // Private routes without a principal were answered with 401 above.
            (_, None) => Err(Problem::unauthorized("This endpoint needs an API key.")),
        }
    }

    fn trigger_service(&self) -> Result<&Triggers, Problem> {
        self.triggers.as_deref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "triggers_unavailable",
                "Triggers are not configured on this deployment.",
            )
        })
    }

    fn trigger_reply(answer: triggers::Answer, meta: &mut Meta) -> Result<Reply, Problem> {
        if let Some(allow) = answer.allow {
            meta.allow = Some(allow.to_string());
            return Err(Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("This endpoint accepts {allow} only."),
            ));
        }
        Ok(Reply {
            status: answer.status,
            content_type: HeaderValue::from_static("application/json"),
            extra: HeaderMap::new(),
            body: answer
                .body
                .map_or_else(Bytes::new, |v| Bytes::from(v.to_string())),
        })
    }

    async fn triggers_api(
        &self,
        req: &Request<Bytes>,
        rest: &str,
        p: &Principal,
        meta: &mut Meta,
    ) -> Result<Reply, Problem> {
        let answer = self
            .trigger_service()?
            .api(
                req.method(),
                rest,
                req.uri().query(),
                req.headers(),
                req.body(),
                &p.account_id,
            )
            .await?;
        Self::trigger_reply(answer, meta)
    }

    /// The public webhook ingress `/hooks/{trigger_id}/{token}` (no API key: the token in the
    /// path is the credential), rate-limited per trigger.
    async fn hook(
        &self,
        req: &Request<Bytes>,
        tail: &str,
        meta: &mut Meta,
    ) -> Result<Reply, Problem> {
        let svc = self.trigger_service()?;
        let id = tail.split('/').next().unwrap_or("");
        self.rate_limit(&format!("hook:{id}"), meta).await?;
        let answer = svc
            .ingress(req.method(), tail, req.headers(), req.body())
            .await?;
        Self::trigger_reply(answer, meta)
    }

    async fn authenticate(&self, req: &Request<Bytes>) -> Result<Auth, Problem> {
        let Some(value) = req.headers().get(header::AUTHORIZATION) else {
            return Ok(Auth::None);
        };
        let Some(key) = value.to_str().ok().and_then(keys::bearer) else {
            return Ok(Auth::Invalid(
                "Use the Bearer scheme: Authorization: Bearer <API_KEY>.",
            ));
        };
        self.authenticate_key(key).await
    }

    async fn authenticate_key(&self, key: &str) -> Result<Auth, Problem> {
        const UNKNOWN: &str = "The API key is unknown or revoked.";
        if !keys::well_formed(key) {
            return Ok(Auth::Invalid(UNKNOWN));
        }
        match self.store.authenticate(&KeyHash::of(key)).await {
            Ok(Some(p)) => Ok(Auth::Key(p)),
            Ok(None) => Ok(Auth::Invalid(UNKNOWN)),
            Err(e) => Err(store_problem(&e)),
        }
    }

    /// Hands an authenticated request to the rmcp service. The key never goes along: the URL-key
    /// path becomes `/mcp` and the Authorization header is dropped.
    async fn forward_mcp(
        &self,
        req: &Request<Bytes>,
        principal: Principal,
    ) -> Result<Reply, Problem> {
        let mut builder = Request::builder()
            .method(req.method())
            .uri("/mcp")
            .version(req.version());
        for (name, value) in req.headers() {
            if name != header::AUTHORIZATION {
                builder = builder.header(name, value);
            }
        }
        let mut forwarded = builder.body(Full::new(req.body().clone())).map_err(|e| {
            Problem::bad_request("invalid_request", format!("Unusable request: {e}."))
        })?;
        forwarded.extensions_mut().insert(principal);
        let (parts, body) = self.mcp.handle(forwarded).await.into_parts();
        let body = match body.collect().await {
            Ok(c) => c.to_bytes(),
            Err(never) => match never {},
        };
        let mut extra = parts.headers;
        let content_type = extra
            .remove(header::CONTENT_TYPE)
            .unwrap_or_else(|| HeaderValue::from_static("application/json"));
        Ok(Reply {
            status: parts.status,
            content_type,
            extra,
            body,
        })
    }

    async fn rate_limit(&self, subject: &str, meta: &mut Meta) -> Result<(), Problem> {
        let window = self.policy.window(self.clock.now_ms());
        match self
            .store
            .count_request(subject, &window, self.policy.limit)
            .await
        {
            Ok(Some(count)) => {
                meta.rate = Some((self.policy.limit.saturating_sub(count), window.reset_s));
                Ok(())
            }
            Ok(None) => {
                meta.rate = Some((0, window.reset_s));
                Err(Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "More than {} requests in {} s with this key; retry after {} s.",
                        self.policy.limit, self.policy.window_s, window.reset_s
                    ),
                )
                .with_retry_after(window.reset_s))
            }
            Err(e) => Err(store_problem(&e)),
        }
    }

    fn catalog_page(&self, req: &Request<Bytes>) -> Result<Reply, Problem> {
        let params = query(req, &["category", "cursor", "limit"])?;
        let limit = page_limit(&params)?;
        let filter = AppFilter {
            category: param(&params, "category"),
            search: None,
        };
        let page = self
            .catalog
            .apps(filter, param(&params, "cursor"), limit)
            .map_err(catalog_error)?;
        Ok(Reply::json(
            &json!({"apps": page.items, "next_cursor": page.next_cursor}),
        ))
    }

    async fn connected(&self, p: &Principal) -> Result<std::collections::HashSet<String>, Problem> {
        self.store
            .connected_apps(&p.account_id)
            .await
            .map_err(|e| store_problem(&e))
    }

    async fn apps(&self, req: &Request<Bytes>, p: &Principal) -> Result<Reply, Problem> {
        let params = query(req, &["search", "cursor", "limit"])?;
        let limit = page_limit(&params)?;
        let filter = AppFilter {
            category: None,
            search: param(&params, "search").filter(|s| !s.trim().is_empty()),
        };
        let page = self
            .catalog
            .apps(filter, param(&params, "cursor"), limit)
            .map_err(catalog_error)?;
        let connected = self.connected(p).await?;
        let apps: Vec<Value> = page
            .items
            .iter()
            .map(|a| {
                let mut v = json!(a);
                v["connection_status"] = connection_status(connected.contains(&a.id)).into();
                v
            })
            .collect();
        Ok(Reply::json(
            &json!({"apps": apps, "next_cursor": page.next_cursor}),
        ))
    }

    fn json_body(
        &self,
        req: &Request<Bytes>,
        validator: &jsonschema::Validator,
    ) -> Result<Value, Problem> {
        let ct = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON with Content-Type: application/json.",
            ));
        }
        let v: Value = serde_json::from_slice(req.body()).map_err(|e| {
            Problem::bad_request(
                "malformed_json",
                format!("The body is not valid JSON: {e}."),
            )
        })?;
        let errors = openapi::violations(validator, &v);
        if !errors.is_empty() {
            return Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "The body does not match the request schema; see errors.",
            )
            .with_errors(errors));
        }
        Ok(v)
    }

    async fn find_tools(&self, req: &Request<Bytes>, p: &Principal) -> Result<Reply, Problem> {
        query(req, &[])?;
        let body = self.json_body(req, &self.openapi.find_tools_request)?;
        // The schema guarantees the shapes below.
        let q = body["query"].as_str().unwrap_or_default();
        let app = body.get("app").and_then(Value::as_str);
        let limit = body
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_TOOLS, |n| n as usize);
        // `custom.<connector>` names one of the account's custom connectors.
        let custom_app = app.filter(|a| custom::is_custom(a));
        let known = match (app, custom_app) {
            (None, _) => true,
            (Some(_), Some(c)) => custom::app_exists(&self.store, &p.account_id, c)
                .await
                .map_err(|e| store_problem(&e))?,
            (Some(a), None) => self.catalog.app(a).is_some(),
        };
        if let (Some(app), false) = (app, known) {
            return Err(Problem::not_found(
                "app_not_found",
                format!("No app {app:?} in the catalog; GET /apps?search= finds app ids."),
            ));
        }
        let found = match custom_app {
            Some(_) => Default::default(),
            None => self.catalog.find_tools(q, app, limit),
        };
        let own = match (app, custom_app) {
            (Some(_), None) => custom::Found::default(),
            _ => custom::find(&self.store, &p.account_id, q, custom_app, limit)
                .await
                .map_err(|e| store_problem(&e))?,
        };
        let hint = found.hint.or(own.hint);
        let hits = custom::merge(found.hits, own.hits, limit);
        let connected = self.connected(p).await?;
        let tools: Vec<Value> = hits
            .iter()
            .map(|h| {
                let custom_tool = own.descriptions.get(&h.tool);
                let description = match custom_tool {
                    Some(d) => d.clone(),
                    None => self
                        .catalog
                        .tool(&h.tool)
                        .map(|t| t.description)
                        .unwrap_or_default(),
                };
                json!({
                    "name": h.tool,
                    "app": h.app,
                    "description": description,
                    "score": h.score,
                    "matched_terms": h.matched_terms,
                    // A custom connector carries its own credentials.
                    "connection_status": connection_status(
                        custom_tool.is_some() || connected.contains(&h.app)
                    ),
                })
            })
            .collect();
        let hint = if tools.is_empty() { hint } else { None };
        Ok(Reply::json(&json!({"tools": tools, "hint": hint})))
    }

    async fn tool(&self, name: &str, p: &Principal) -> Result<Reply, Problem> {
        if custom::is_custom(name) {
            return match custom::tool_def(&self.store, &p.account_id, name).await {
                Ok(Some(t)) => {
                    let mut v = json!(t);
                    v["connection_status"] = connection_status(true).into();
                    Ok(Reply::json(&v))
                }
                Ok(None) => Err(Problem::not_found(
                    "tool_not_found",
                    format!("No tool {name:?}; POST /tools/find finds tools for a task."),
                )),
                Err(e) => Err(store_problem(&e)),
            };
        }
        let Some(tool) = self.catalog.tool(name) else {
            return Err(Problem::not_found(
                "tool_not_found",
                format!("No tool {name:?}; POST /tools/find finds tools for a task."),
            ));
        };
        let connected = self.connected(p).await?;
        let mut v = json!(tool);
        v["connection_status"] = connection_status(connected.contains(&tool.app)).into();
        Ok(Reply::json(&v))
    }

    fn custom_runtime(&self) -> Result<&custom::Runtime, Problem> {
        self.custom.as_ref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "custom_connectors_unavailable",
                "Custom connectors are not configured on this deployment.",
            )
        })
    }

    /// `POST /tools/custom.<connector>.<tool>/run`.
    async fn run_custom(
        &self,
        req: &Request<Bytes>,
        name: &str,
        p: &Principal,
    ) -> Result<Reply, Problem> {
        query(req, &[])?;
        let body = self.json_body(req, &self.openapi.run_tool_request)?;
        let rt = self.custom_runtime()?;
        let runner = custom::SimpleRestRunner {
            outbound: &rt.outbound,
        };
        let args = body.get("arguments").unwrap_or(&Value::Null);
        match custom::run(
            &self.store,
            rt,
            &runner,
            self.clock.as_ref(),
            &p.account_id,
            name,
            args,
        )
        .await
        {
            Ok(outcome) => Ok(Reply::json(&outcome.to_json())),
            Err((e, run_id)) => Err(e.problem(run_id.as_deref())),
        }
    }

    async fn runs(&self, req: &Request<Bytes>, p: &Principal) -> Result<Reply, Problem> {
        query(req, &[])?;
        let runs = self
            .store
            .latest_runs(&p.account_id, LATEST)
            .await
            .map_err(|e| store_problem(&e))?;
        let runs: Vec<Value> = runs.iter().map(|r| r.to_json()).collect();
        Ok(Reply::json(&json!({"runs": runs, "next_cursor": null})))
    }
    /// The hosted connect pages (HTML, no API key; the link id is the secret). Rate-limited per
    /// client address like anonymous API calls.
    async fn hosted(&self, req: &Request<Bytes>, meta: &mut Meta) -> Result<Reply, Problem> {
        let subject = match req.extensions().get::<ClientAddr>() {
            Some(a) => format!("addr:{}", a.0),
            None => "addr:unknown".to_owned(),
        };
        self.rate_limit(&subject, meta).await?;
        let integrations = self.integrations()?;
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let Some(page) = crate::connect_page::handle(
            &integrations.connections,
            req.method(),
            req.uri().path(),
            req.uri().query(),
            content_type,
            req.body(),
        )
        .await
        else {
            return Err(Problem::not_found("not_found", "No such page."));
        };
        let mut extra = HeaderMap::new();
        for (k, v) in crate::connect_page::PAGE_HEADERS {
            extra.insert(*k, HeaderValue::from_static(v));
        }
        if let Some(to) = page.location.as_deref()
            && let Ok(v) = HeaderValue::from_str(to)
        {
            extra.insert(header::LOCATION, v);
        }
        Ok(Reply {
            status: page.status,
            content_type: HeaderValue::from_static("text/html; charset=utf-8"),
            extra,
            body: Bytes::from(page.html),
        })
    }

    async fn connect(
        &self,
        req: &Request<Bytes>,
        app: &str,
        p: &Principal,
    ) -> Result<Reply, Problem> {
        query(req, &[])?;
        let integrations = self.integrations()?;
        let body = if req.body().is_empty() {
            json!({})
        } else {
            self.json_body(req, &self.openapi.connect_request)?
        };
        let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
        let params = body
            .get("params")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let link = integrations
            .connections
            .create_link(
                &p.account_id,
                app,
                text("label"),
                text("redirect_url"),
                params,
            )
            .await
            .map_err(|e| crate::exec::connect_problem(&e))?;
        let mut reply = Reply::json(&link.to_json());
        reply.status = StatusCode::CREATED;
        Ok(reply)
    }

    async fn connections(&self, req: &Request<Bytes>, p: &Principal) -> Result<Reply, Problem> {
        let params = query(req, &["app", "cursor", "limit"])?;
        let limit = page_limit(&params)?;
        let integrations = self.integrations()?;
        let all = integrations
            .connections
            .list(&p.account_id)
            .await
            .map_err(|e| store_problem(&e))?;
        let app = param(&params, "app");
        let matching: Vec<Value> = all
            .iter()
            .filter(|(c, _)| app.is_none_or(|a| c.app == a))
            .map(|(c, default)| c.to_json(*default))
            .collect();
        let start = match param(&params, "cursor") {
            Some(c) => crate::catalog_api::decode_cursor(c)
                .ok()
                .filter(|s| *s <= matching.len())
                .ok_or_else(|| catalog_error(CatalogError::InvalidCursor))?,
            None => 0,
        };
        let end = (start + limit).min(matching.len());
        let next = (end < matching.len()).then(|| crate::catalog_api::encode_cursor(end));
        Ok(Reply::json(
            &json!({"connections": matching[start..end], "next_cursor": next}),
        ))
    }

    async fn delete_connection(
        &self,
        req: &Request<Bytes>,
        id: &str,
        p: &Principal,
    ) -> Result<Reply, Problem> {
        query(req, &[])?;
        let integrations = self.integrations()?;
        match integrations.connections.revoke(&p.account_id, id).await {
            Ok(()) => Ok(Reply {
                status: StatusCode::NO_CONTENT,
                content_type: HeaderValue::from_static("application/json"),
                extra: HeaderMap::new(),
                body: Bytes::new(),
            }),
            Err(StoreError::NotFound(_)) => Err(Problem::not_found(
                "connection_not_found",
                format!(
                    "No connection {id:?} (or it is already revoked); GET /connections lists them."
                ),
            )),
            Err(e) => Err(store_problem(&e)),
        }
    }

    async fn run_tool(
        &self,
        req: &Request<Bytes>,
        tool: &str,
        p: &Principal,
    ) -> Result<Reply, Problem> {
        query(req, &[])?;
        let integrations = self.integrations()?;
        let body = self.json_body(req, &self.openapi.run_tool_request)?;
        let empty = json!({});
        let arguments = body.get("arguments").unwrap_or(&empty);
        let run = crate::exec::RunRequest {
            tool,
            arguments,
            connection_id: body.get("connection_id").and_then(Value::as_str),
            origin: crate::exec::RunOrigin::Api,
            keep_arguments: crate::runs::Arguments::Redacted,
        };
        match integrations.executor.execute(&p.account_id, run).await {
            Ok(out) => Ok(Reply::json(&out.to_json())),
            Err(e) => Err(e.to_problem()),
        }
    }
}
