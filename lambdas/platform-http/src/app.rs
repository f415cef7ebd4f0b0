//! The platform's HTTP surface as one async function from a buffered request to a buffered
//! response ([`App::handle`]), shared by the Lambda adapter and the local hyper server.
//!
//! Order of work for `/api/v1`: size check → authentication (if a key is sent) → rate limit
//! (per key, or per client address for anonymous calls) → the route. Every response carries
//! `X-Request-Id` and `RateLimit-Policy`, and `RateLimit` once the request was counted. The
//! hosted connect pages and the webhook ingress sit outside `/api/v1`; MCP (`/mcp`) is
//! authenticated and counted like the API, then handed to [`crate::mcp`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use platform_domain::Repositories;
use platform_domain::apps::Catalog;
use platform_domain::clock::Clock;
use platform_domain::ratelimit::RateLimitPolicy;
use platform_domain::tools::Toolbox;
use platform_exec::Integrations;
use platform_exec::custom::{CustomConnectors, Runtime};
use platform_exec::triggers::Triggers;

use crate::extract::{MAX_BODY, declared_length};
use crate::guard::{Auth, Guard, Meta};
use crate::handlers::Ctx;
use crate::mcp::{self, McpService};
use crate::openapi::{OpenApi, OpenApiError};
use crate::problem::{self, Problem};
use crate::redact::redact_path;
use crate::reply::Reply;
use crate::routes::{self, Matched};
use crate::services::Services;

pub const REQUEST_ID_HEADER: &str = "x-request-id";
const API_PREFIX: &str = "/api/v1";

/// Why the app could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    OpenApi(#[from] OpenApiError),
    #[error("MCP tools: {0}")]
    Mcp(String),
}

pub struct App {
    services: Services,
    guard: Guard,
    openapi: OpenApi,
    mcp: McpService,
}

fn new_request_id() -> String {
    platform_domain::ids::random_id("req_", 8)
}

impl App {
    pub fn new(
        store: impl Repositories + 'static,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        policy: RateLimitPolicy,
    ) -> Result<Self, StartError> {
        let store: Arc<dyn Repositories> = Arc::new(store);
        let services = Services {
            toolbox: Toolbox::new(catalog, store.clone(), store.clone()),
            store,
            clock,
            integrations: None,
            custom: None,
            triggers: None,
        };
        Ok(Self {
            mcp: mcp::service(services.clone()).map_err(StartError::Mcp)?,
            guard: Guard {
                store: services.store.clone(),
                clock: services.clock.clone(),
                policy,
                hook_blocked: Default::default(),
            },
            services,
            openapi: OpenApi::load()?,
        })
    }

    /// Turns on connections, hosted connect pages and tool runs (REST and MCP), and custom
    /// connectors with the same guarded client and sealer.
    pub fn with_integrations(
        mut self,
        integrations: Arc<Integrations>,
    ) -> Result<Self, StartError> {
        let rt = Runtime {
            outbound: integrations.outbound.clone(),
            sealer: Some(integrations.sealer.clone()),
        };
        self.services.integrations = Some(integrations);
        self.with_custom_connectors(rt)
    }

    /// Enables custom connectors (REST and MCP) with the guarded client and the sealer.
    pub fn with_custom_connectors(mut self, rt: Runtime) -> Result<Self, StartError> {
        let store = self.services.store.clone();
        self.services.custom = Some(Arc::new(CustomConnectors::new(
            store.clone(),
            store,
            self.services.clock.clone(),
            rt,
        )));
        self.mcp = mcp::service(self.services.clone()).map_err(StartError::Mcp)?;
        Ok(self)
    }

    /// Serves `/api/v1/triggers…`, `/api/v1/events` and the `/hooks/` ingress with `t`
    /// (without it they answer 503 `triggers_unavailable`).
    pub fn with_triggers(mut self, t: Arc<Triggers>) -> Self {
        self.services.triggers = Some(t);
        self
    }

    pub fn services(&self) -> &Services {
        &self.services
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            services: &self.services,
            openapi: &self.openapi,
            guard: &self.guard,
        }
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
        let status = reply.status;
        let resp = self.finish(reply, &request_id, &meta, retry_after);
        tracing::info!(
            request_id = %request_id,
            method = %req.method(),
            path = %path,
            status = status.as_u16(),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            account = meta.account.as_deref().unwrap_or("-"),
            "request"
        );
        resp
    }

    /// The response with the headers every answer carries.
    fn finish(
        &self,
        reply: Reply,
        request_id: &str,
        meta: &Meta,
        retry_after: Option<u64>,
    ) -> Response<Bytes> {
        let has_body = !reply.body.is_empty();
        let mut resp = Response::new(reply.body);
        *resp.status_mut() = reply.status;
        *resp.headers_mut() = reply.extra;
        let h = resp.headers_mut();
        // An accepted MCP notification (202) has no body, hence no type.
        if has_body {
            h.insert(header::CONTENT_TYPE, reply.content_type);
        }
        if let Ok(v) = HeaderValue::from_str(request_id) {
            h.insert(REQUEST_ID_HEADER, v);
        }
        if meta.api
            && let Ok(v) = HeaderValue::from_str(&self.guard.policy.policy_header())
        {
            h.insert("ratelimit-policy", v);
        }
        if let Some((remaining, reset)) = meta.rate
            && let Ok(v) = HeaderValue::from_str(&self.guard.policy.limit_header(remaining, reset))
        {
            h.insert("ratelimit", v);
        }
        if let Some(s) = retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some(m) = &meta.allow
            && let Ok(v) = HeaderValue::from_str(m)
        {
            h.insert(header::ALLOW, v);
        }
        if reply.status == StatusCode::UNAUTHORIZED {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }

    async fn respond(&self, req: &Request<Bytes>, meta: &mut Meta) -> Result<Reply, Problem> {
        let path = req.uri().path();
        let is_mcp = path == "/mcp" || path.starts_with("/mcp/");
        if path.starts_with("/connect/") || path == "/oauth/callback" {
            return self.ctx().hosted(req, meta).await;
        }
        if let Some(tail) = path.strip_prefix("/hooks/") {
            return self.ctx().hook(req, tail, meta).await;
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
        self.check_size(req, rest)?;
        if is_mcp {
            let auth = self.guard.mcp_auth(req, path).await?;
            self.guard.count(req, &auth, meta).await?;
            return self.mcp(req, auth, meta).await;
        }
        let auth = self.guard.authenticate(req).await?;
        self.guard.count(req, &auth, meta).await?;
        let Some(matched) = routes::route(rest) else {
            return Err(Problem::not_found(
                "not_found",
                format!("No endpoint {API_PREFIX}{rest}."),
            ));
        };
        if !matched.route.late() {
            self.check_method(req, rest, &matched, meta)?;
        }
        let principal = match auth {
            Auth::Key(p) => {
                meta.account = Some(p.account_id.clone());
                Some(p)
            }
            Auth::Invalid(why) => return Err(Problem::unauthorized(why)),
            Auth::None if matched.route.public() => None,
            Auth::None => {
                return Err(Problem::unauthorized(
                    "This endpoint needs an API key: send Authorization: Bearer <API_KEY>.",
                ));
            }
        };
        if matched.route.late() {
            self.services.triggers()?;
            self.check_late(req, rest, &matched, meta)?;
        }
        self.ctx()
            .dispatch(req, matched.route, principal.as_ref())
            .await
    }

    /// A route checked before authentication: 405 with its `Allow` for another method.
    fn check_method(
        &self,
        req: &Request<Bytes>,
        rest: &str,
        matched: &Matched<'_>,
        meta: &mut Meta,
    ) -> Result<(), Problem> {
        if matched.methods.contains(req.method()) {
            return Ok(());
        }
        meta.allow = Some(routes::allow(matched.methods));
        Err(Problem::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{API_PREFIX}{rest} accepts {} only.", matched.expected),
        ))
    }

    /// A route checked after authentication: 404 for an unknown trigger path, 405 with `Allow`
    /// for another method.
    fn check_late(
        &self,
        req: &Request<Bytes>,
        rest: &str,
        matched: &Matched<'_>,
        meta: &mut Meta,
    ) -> Result<(), Problem> {
        if matched.route == routes::Route::UnknownTrigger {
            return Err(Problem::not_found(
                "not_found",
                format!("No endpoint {API_PREFIX}{rest}."),
            ));
        }
        if matched.methods.contains(req.method()) {
            return Ok(());
        }
        let allow = routes::allow(matched.methods);
        let detail = format!("This endpoint accepts {allow} only.");
        meta.allow = Some(allow);
        Err(Problem::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            detail,
        ))
    }

    /// 413 for a body over the route's limit, declared or sent.
    fn check_size(&self, req: &Request<Bytes>, rest: &str) -> Result<(), Problem> {
        let declared = declared_length(req.headers());
        // Custom connectors take whole OpenAPI documents.
        let limit = if rest == "/custom-connectors" {
            platform_domain::custom::MAX_REQUEST_BODY
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
        Ok(())
    }

    /// Authenticated MCP: the key goes to the rmcp service as the request's principal.
    async fn mcp(
        &self,
        req: &Request<Bytes>,
        auth: Auth,
        meta: &mut Meta,
    ) -> Result<Reply, Problem> {
        match auth {
            Auth::Key(p) => {
                meta.account = Some(p.account_id.clone());
                mcp::forward(&self.mcp, req, p).await
            }
            Auth::Invalid(why) => Err(Problem::unauthorized(why)),
            Auth::None => Err(Problem::unauthorized(
                "MCP needs an API key: Authorization: Bearer <API_KEY>, or the URL /mcp/k/<API_KEY>.",
            )),
        }
    }
}
