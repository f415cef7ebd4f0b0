//! The remote MCP server (`/mcp`, and `/mcp/k/<KEY>` with the key in the path), on `rmcp` in
//! stateless JSON mode: every POST stands alone, which is what Lambda behind API Gateway needs.
//!
//! The router authenticates and rate-limits the request exactly like REST, then hands it to the
//! rmcp service with the caller's [`Principal`] in the request extensions; tools read it from
//! there. `connect_app`, `list_connections` and `run_tool` use the connections and the executor
//! ([`Integrations`]); a run that needs a connection is a normal result with a connect link, so
//! the model shows the link and retries.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::catalog_api::{AppFilter, Catalog};
use crate::connections::Integrations;
use crate::exec::{RunError, RunOrigin, RunRequest};
use crate::openapi::violations;
use crate::store::{Principal, Store};

const MAX_RESULTS: usize = 50;

/// The tools, with their input schemas (also used to validate arguments).
fn tool_specs() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "search_apps",
            "Search the app catalog by name or purpose. Each app says whether the caller has \
             connected it (connection_status).",
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"query": {"type": "string", "maxLength": 200},
                                  "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}}}),
        ),
        (
            "connect_app",
            "Connect an app (its catalog id) to the caller's account: returns a single-use link \
             (30 minutes) for the user to open. Connecting again adds another connection \
             (e.g. a second account); label tells them apart.",
            json!({"type": "object", "additionalProperties": false, "required": ["app"],
                   "properties": {"app": {"type": "string", "minLength": 1},
                                  "label": {"type": "string", "minLength": 1, "maxLength": 100}}}),
        ),
        (
            "list_connections",
            "List the caller's connections (id, app, label, identity, status, default).",
            json!({"type": "object", "additionalProperties": false, "properties": {}}),
        ),
        (
            "find_tools",
            "Find tools for a task described in plain words, best first. Optionally only within \
             one app (its catalog id). An empty result comes with a hint.",
            json!({"type": "object", "additionalProperties": false, "required": ["query"],
                   "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 500},
                                  "app": {"type": "string", "minLength": 1},
                                  "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}}}),
        ),
        (
            "get_tool",
            "Get one tool by name, with the JSON Schema of its arguments.",
            json!({"type": "object", "additionalProperties": false, "required": ["name"],
                   "properties": {"name": {"type": "string", "minLength": 1}}}),
        ),
        (
            "run_tool",
            "Run a tool with arguments matching its input schema (see get_tool), through the \
             app's default connection or the given connection_id. If the app is not connected \
             the result has status connection_required and a connect_url to show the user.",
            json!({"type": "object", "additionalProperties": false, "required": ["tool", "arguments"],
                   "properties": {"tool": {"type": "string", "minLength": 1},
                                  "arguments": {"type": "object"},
                                  "connection_id": {"type": "string", "minLength": 1}}}),
        ),
    ]
}

struct Tools {
    list: Vec<Tool>,
    validators: HashMap<&'static str, jsonschema::Validator>,
}

fn build_tools() -> Result<Tools, String> {
    let mut list = Vec::new();
    let mut validators = HashMap::new();
    for (name, description, schema) in tool_specs() {
        let validator = jsonschema::validator_for(&schema).map_err(|e| format!("{name}: {e}"))?;
        validators.insert(name, validator);
        let Value::Object(obj) = schema else {
            return Err(format!("{name}: schema is not an object"));
        };
        list.push(Tool::new(name, description, Arc::new(obj)));
    }
    Ok(Tools { list, validators })
}

/// One MCP handler; rmcp builds one per request from [`McpState`].
pub struct Hub<S> {
    store: S,
    catalog: Arc<dyn Catalog>,
    tools: Arc<Tools>,
    integrations: Option<Arc<Integrations>>,
}

const UNCONFIGURED: &str =
    "Connections and tool runs are not configured on this server; ask its operator.";

fn failed(message: impl Into<String>) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": message.into()}))
}

fn status(connected: bool) -> &'static str {
    if connected {
        "connected"
    } else {
        "not_connected"
    }
}

impl<S: Store + Clone> Hub<S> {
    async fn call(&self, principal: &Principal, name: &str, args: &Value) -> CallToolResult {
        let Some(validator) = self.tools.validators.get(name) else {
            return failed(format!(
                "No tool {name:?}; the tools are search_apps, connect_app, list_connections, \
                 find_tools, get_tool and run_tool."
            ));
        };
        let errors = violations(validator, args);
        if !errors.is_empty() {
            // Invalid input is a tool result the model can correct, not a protocol error.
            return CallToolResult::structured_error(json!({
                "error": "The arguments do not match the tool's input schema.",
                "errors": errors,
            }));
        }
        let limit = |default: usize| {
            args.get("limit")
                .and_then(Value::as_u64)
                .map_or(default, |n| n as usize)
        };
        match name {
            "connect_app" => return self.connect_app(principal, args).await,
            "run_tool" => return self.run_tool(principal, args).await,
            "list_connections" if self.integrations.is_some() => {
                return self.list_connections(principal).await;
            }
            _ => {}
        }
        let connected = match self.store.connected_apps(&principal.account_id).await {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "store failure in MCP tool");
                return failed("The platform's storage did not answer; retry shortly.");
            }
        };
        match name {
            "search_apps" => {
                let query = args
                    .get("query")
                    .and_then(Value::as_str)
                    .filter(|q| !q.trim().is_empty());
                let filter = AppFilter {
                    category: None,
                    search: query,
                };
                match self.catalog.apps(filter, None, limit(20)) {
                    Ok(page) => {
                        let apps: Vec<Value> = page
                            .items
                            .iter()
                            .map(|a| {
                                let mut v = json!(a);
                                v["connection_status"] = status(connected.contains(&a.id)).into();
                                v
                            })
                            .collect();
                        CallToolResult::structured(json!({"apps": apps}))
                    }
                    Err(e) => failed(e.to_string()),
                }
            }
            "find_tools" => {
                let query = args["query"].as_str().unwrap_or_default();
                let app = args.get("app").and_then(Value::as_str);
                if let Some(app) = app
                    && self.catalog.app(app).is_none()
                {
                    return failed(format!(
                        "No app {app:?} in the catalog; search_apps finds app ids."
                    ));
                }
                let found = self.catalog.find_tools(query, app, limit(10));
                let tools: Vec<Value> = found
                    .hits
                    .iter()
                    .map(|h| {
                        json!({
                            "name": h.tool,
                            "app": h.app,
                            "description": self.catalog.tool(&h.tool).map(|t| t.description).unwrap_or_default(),
                            "score": h.score,
                            "matched_terms": h.matched_terms,
                            "connection_status": status(connected.contains(&h.app)),
                        })
                    })
                    .collect();
                CallToolResult::structured(json!({"tools": tools, "hint": found.hint}))
            }
            "get_tool" => {
                let name = args["name"].as_str().unwrap_or_default();
                match self.catalog.tool(name) {
                    Some(t) => {
                        let mut v = json!(t);
                        v["connection_status"] = status(connected.contains(&t.app)).into();
                        CallToolResult::structured(v)
                    }
                    None => failed(format!(
                        "No tool {name:?}; find_tools finds tools for a task."
                    )),
                }
            }
            "list_connections" => {
                let mut apps: Vec<&String> = connected.iter().collect();
                apps.sort();
                let list: Vec<Value> = apps.iter().map(|a| json!({"app": a})).collect();
                CallToolResult::structured(json!({"connections": list}))
            }
            _ => failed(format!("No tool {name:?}.")),
        }
    }
}

impl<S: Store + Clone> Hub<S> {
    async fn connect_app(&self, principal: &Principal, args: &Value) -> CallToolResult {
        let Some(integrations) = &self.integrations else {
            return failed(UNCONFIGURED);
        };
        let app = args["app"].as_str().unwrap_or_default();
        let label = args.get("label").and_then(Value::as_str).map(str::to_owned);
        match integrations
            .connections
            .create_link(&principal.account_id, app, label, None, Default::default())
            .await
        {
            Ok(link) => {
                let mut v = link.to_json();
                v["connect_url"] = v["url"].clone();
                v["hint"] =
                    "Show connect_url to the user; once they finish, run the tool again.".into();
                CallToolResult::structured(v)
            }
            Err(e) => {
                let p = crate::exec::connect_problem(&e);
                CallToolResult::structured_error(json!({"error": p.detail, "code": p.code}))
            }
        }
    }

    async fn list_connections(&self, principal: &Principal) -> CallToolResult {
        let Some(integrations) = &self.integrations else {
            return failed(UNCONFIGURED);
        };
        match integrations.connections.list(&principal.account_id).await {
            Ok(all) => {
                let list: Vec<Value> = all.iter().map(|(c, d)| c.to_json(*d)).collect();
                CallToolResult::structured(json!({"connections": list}))
            }
            Err(e) => {
                tracing::error!(error = %e, "store failure in MCP tool");
                failed("The platform's storage did not answer; retry shortly.")
            }
        }
    }

    async fn run_tool(&self, principal: &Principal, args: &Value) -> CallToolResult {
        let tool = args["tool"].as_str().unwrap_or_default();
        if self.catalog.tool(tool).is_none() {
            return failed(format!(
                "No tool {tool:?}; find_tools finds tools for a task."
            ));
        }
        let Some(integrations) = &self.integrations else {
            return failed(UNCONFIGURED);
        };
        let empty = json!({});
        let req = RunRequest {
            tool,
            arguments: args.get("arguments").unwrap_or(&empty),
            connection_id: args.get("connection_id").and_then(Value::as_str),
            origin: RunOrigin::Mcp,
            keep_arguments: crate::runs::Arguments::Redacted,
        };
        match integrations
            .executor
            .execute(&principal.account_id, req)
            .await
        {
            Ok(out) => CallToolResult::structured(out.to_json()),
            // Not an error: the model shows the link and retries after the user connects.
            Err(RunError::ConnectionRequired { prompt, .. }) => CallToolResult::structured(json!({
                "status": "connection_required",
                "connection_required": true,
                "app": prompt.app,
                "connect_url": prompt.connect_url,
                "expires_at": prompt.expires_at,
                "hint": format!(
                    "{} is not connected. Ask the user to open connect_url (it works once, \
                     for 30 minutes), then run the tool again.",
                    prompt.app
                ),
            })),
            Err(RunError::NeedsReauth {
                prompt,
                connection_id,
                ..
            }) => CallToolResult::structured(json!({
                "status": "needs_reauth",
                "connection_required": true,
                "app": prompt.app,
                "connection_id": connection_id,
                "connect_url": prompt.connect_url,
                "expires_at": prompt.expires_at,
                "hint": format!(
                    "The connection to {} expired or was revoked. Ask the user to open \
                     connect_url to reconnect, then run the tool again.",
                    prompt.app
                ),
            })),
            Err(e) => {
                let p = e.to_problem();
                let mut v = json!({"error": p.detail, "code": p.code});
                if !p.errors.is_empty() {
                    v["errors"] = json!(p.errors);
                }
                if let Some(r) = p.retry_after {
                    v["retry_after"] = r.into();
                }
                for (k, val) in p.extra {
                    v[k] = val;
                }
                CallToolResult::structured_error(v)
            }
        }
    }
}

impl<S: Store + Clone> ServerHandler for Hub<S> {
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
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&principal, &request.name, &args).await.into())
    }
}

/// The rmcp service the router forwards authenticated `/mcp` requests to.
pub type McpService<S> = StreamableHttpService<Hub<S>, NeverSessionManager>;

pub fn service<S: Store + Clone>(
    store: S,
    catalog: Arc<dyn Catalog>,
    integrations: Option<Arc<Integrations>>,
) -> Result<McpService<S>, String> {
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
                store: store.clone(),
                catalog: catalog.clone(),
                tools: tools.clone(),
                integrations: integrations.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        cfg,
    ))
}
