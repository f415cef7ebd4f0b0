//! The remote MCP server (`/mcp`, and `/mcp/k/<KEY>` with the key in the path), on `rmcp` in
//! stateless JSON mode: every POST stands alone, which is what Lambda behind API Gateway needs.
//!
//! The router authenticates and rate-limits the request exactly like REST, then hands it here
//! ([`forward`]) with the caller's [`Principal`] in the request extensions; tools read it from
//! there. Every tool calls the same service as its REST twin ([`calls`]); a run that needs a
//! connection is a normal result with a connect link, so the model shows the link and retries.

mod calls;
mod tools;

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use http::header::{self, HeaderValue};
use http_body_util::{BodyExt, Full};
use platform_domain::accounts::Principal;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::problem::Problem;
use crate::reply::Reply;
use crate::services::Services;
use tools::{Tools, build_tools};

/// One MCP handler; rmcp builds one per request.
pub struct Hub {
    services: Services,
    tools: Arc<Tools>,
}

impl ServerHandler for Hub {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "companion-platform",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Find apps with search_apps and tools for a task with find_tools; get_tool shows \
                 a tool's arguments.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The list is the same for every key today, but connection-dependent tools will differ
        // per account, so caches must not share it.
        Ok(ListToolsResult::with_all_items(self.tools.list.clone())
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<Principal>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("request without a principal", None))?;
        // An unknown tool is the caller's protocol mistake, not a tool outcome: MCP answers it
        // with JSON-RPC -32602 (invalid params). Known tools' refusals stay `isError` results.
        if !self.tools.validators.contains_key(request.name.as_ref()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "Unknown tool {:?}; the tools are search_apps, connect_app, \
                     list_connections, find_tools, get_tool and run_tool.",
                    request.name
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&principal, &request.name, &args).await.into())
    }
}

/// The rmcp service the router forwards authenticated `/mcp` requests to.
pub type McpService = StreamableHttpService<Hub, NeverSessionManager>;

pub fn service(services: Services) -> Result<McpService, String> {
    let tools = Arc::new(build_tools()?);
    let mut cfg = StreamableHttpServerConfig::default();
    cfg.legacy_session_mode = false;
    cfg.json_response = true;
    cfg.sse_keep_alive = None;
    // Every request carries an API key and no cookie, so DNS rebinding gains an attacker
    // nothing; the deployed Host names are not known here. Browsers are refused by Origin.
    cfg.allowed_hosts = Vec::new();
    let cfg = cfg.enforce_origin_validation();
    Ok(StreamableHttpService::new(
        move || {
            Ok(Hub {
                services: services.clone(),
                tools: tools.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        cfg,
    ))
}

/// Hands an authenticated request to the rmcp service. The key never goes along: the URL-key
/// path becomes `/mcp` and the Authorization header is dropped.
pub(crate) async fn forward(
    mcp: &McpService,
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
    let mut forwarded = builder
        .body(Full::new(req.body().clone()))
        .map_err(|e| Problem::bad_request("invalid_request", format!("Unusable request: {e}.")))?;
    forwarded.extensions_mut().insert(principal);
    let (parts, body) = mcp.handle(forwarded).await.into_parts();
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
