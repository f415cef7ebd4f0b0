//! The MCP tools' handlers: each validates its arguments against its input schema, calls the same
//! service as its REST twin, and answers a structured result. Invalid input and refusals are
//! results with `isError: true` (not protocol errors), so a model can correct itself; only an
//! unknown tool name is a JSON-RPC error (-32602, in `call_tool`), as MCP says. A run
//! that needs a connection is a normal result with the link.

use platform_domain::accounts::Principal;
use platform_domain::apps::AppFilter;
use platform_domain::custom::is_custom;
use platform_domain::error::UNAVAILABLE_DETAIL;
use platform_domain::runs::Arguments;
use platform_domain::tools::ToolsError;
use platform_exec::executor::{RunError, RunOrigin, RunRequest};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::Hub;
use crate::errors;
use crate::handlers::{app_json, found_json, tool_json};
use crate::openapi::violations;

const UNCONFIGURED: &str =
    "Connections and tool runs are not configured on this server; ask its operator.";

fn failed(message: impl Into<String>) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": message.into()}))
}

fn store_failed(e: &impl std::fmt::Display) -> CallToolResult {
    tracing::error!(error = %e, "store failure in MCP tool");
    failed(UNAVAILABLE_DETAIL)
}

/// A service's refusal in MCP's words (which name MCP's tools, not REST's endpoints).
fn tools_failed(e: &ToolsError) -> CallToolResult {
    match e {
        ToolsError::AppNotFound(app) => failed(format!(
            "No app {app:?} in the catalog; search_apps finds app ids."
        )),
        ToolsError::ToolNotFound(name) => failed(format!(
            "No tool {name:?}; find_tools finds tools for a task."
        )),
        ToolsError::InvalidCursor => failed(e.to_string()),
        ToolsError::Store(s) => store_failed(s),
    }
}

fn limit(args: &Value, default: usize) -> usize {
    args.get("limit")
        .and_then(Value::as_u64)
        .map_or(default, |n| n as usize)
}

impl Hub {
    pub(super) async fn call(
        &self,
        principal: &Principal,
        name: &str,
        args: &Value,
    ) -> CallToolResult {
        // call_tool answers unknown names with -32602 before they get here.
        let Some(validator) = self.tools.validators.get(name) else {
            return failed(format!("No tool {name:?}."));
        };
        let errors = violations(validator, args);
        if !errors.is_empty() {
            // Invalid input is a tool result the model can correct, not a protocol error.
            return CallToolResult::structured_error(json!({
                "error": "The arguments do not match the tool's input schema.",
                "errors": errors,
            }));
        }
        let account = principal.account_id.as_str();
        match name {
            "search_apps" => self.search_apps(account, args).await,
            "find_tools" => self.find_tools(account, args).await,
            "get_tool" => self.get_tool(account, args).await,
            "list_connections" => self.list_connections(account).await,
            "connect_app" => self.connect_app(account, args).await,
            "run_tool" => self.run_tool(account, args).await,
            _ => failed(format!("No tool {name:?}.")),
        }
    }

    async fn search_apps(&self, account: &str, args: &Value) -> CallToolResult {
        let filter = AppFilter {
            category: None,
            search: args
                .get("query")
                .and_then(Value::as_str)
                .filter(|q| !q.trim().is_empty()),
        };
        match self
            .services
            .toolbox
            .search_apps(account, filter, None, limit(args, 20))
            .await
        {
            Ok(page) => {
                let apps: Vec<Value> = page.items.iter().map(|(a, c)| app_json(a, *c)).collect();
                CallToolResult::structured(json!({"apps": apps}))
            }
            Err(e) => tools_failed(&e),
        }
    }

    async fn find_tools(&self, account: &str, args: &Value) -> CallToolResult {
        let query = args["query"].as_str().unwrap_or_default();
        let app = args.get("app").and_then(Value::as_str);
        match self
            .services
            .toolbox
            .find_tools(account, query, app, limit(args, 10))
            .await
        {
            Ok(found) => CallToolResult::structured(found_json(&found)),
            Err(e) => tools_failed(&e),
        }
    }

    async fn get_tool(&self, account: &str, args: &Value) -> CallToolResult {
        let name = args["name"].as_str().unwrap_or_default();
        match self.services.toolbox.get_tool(account, name).await {
            Ok((tool, connected)) => CallToolResult::structured(tool_json(&tool, connected)),
            Err(e) => tools_failed(&e),
        }
    }

    /// The account's connections; without integrations, the apps it has connected.
    async fn list_connections(&self, account: &str) -> CallToolResult {
        let Some(integrations) = &self.services.integrations else {
            return match self.services.toolbox.connected_apps(account).await {
                Ok(connected) => {
                    let mut apps: Vec<&String> = connected.iter().collect();
                    apps.sort();
                    let list: Vec<Value> = apps.iter().map(|a| json!({"app": a})).collect();
                    CallToolResult::structured(json!({"connections": list}))
                }
                Err(e) => store_failed(&e),
            };
        };
        match integrations.connections.list(account).await {
            Ok(all) => {
                let list: Vec<Value> = all.iter().map(|(c, d)| c.to_json(*d)).collect();
                CallToolResult::structured(json!({"connections": list}))
            }
            Err(e) => store_failed(&e),
        }
    }

    async fn connect_app(&self, account: &str, args: &Value) -> CallToolResult {
        let Some(integrations) = &self.services.integrations else {
            return failed(UNCONFIGURED);
        };
        let app = args["app"].as_str().unwrap_or_default();
        let label = args.get("label").and_then(Value::as_str).map(str::to_owned);
        match integrations
            .connections
            .create_link(account, app, label, None, Default::default())
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
                let p = errors::connect(&e);
                CallToolResult::structured_error(json!({"error": p.detail, "code": p.code}))
            }
        }
    }

    async fn run_tool(&self, account: &str, args: &Value) -> CallToolResult {
        let tool = args["tool"].as_str().unwrap_or_default();
        if is_custom(tool) {
            return self.run_custom(account, tool, &args["arguments"]).await;
        }
        if self.services.toolbox.catalog.tool(tool).is_none() {
            return failed(format!(
                "No tool {tool:?}; find_tools finds tools for a task."
            ));
        }
        let Some(integrations) = &self.services.integrations else {
            return failed(UNCONFIGURED);
        };
        let empty = json!({});
        let req = RunRequest {
            tool,
            arguments: args.get("arguments").unwrap_or(&empty),
            connection_id: args.get("connection_id").and_then(Value::as_str),
            origin: RunOrigin::Mcp,
            keep_arguments: Arguments::Redacted,
        };
        match integrations.executor.execute(account, req).await {
            Ok(out) => CallToolResult::structured(out.to_json()),
            Err(e) => run_failed(&e),
        }
    }

    /// Runs one of the account's custom tools (a tool error is a result the model can read).
    async fn run_custom(&self, account: &str, tool: &str, args: &Value) -> CallToolResult {
        let Some(custom) = &self.services.custom else {
            return failed("Custom connectors are not configured on this deployment.");
        };
        match custom.run(account, tool, args).await {
            Ok(out) => CallToolResult::structured(out.to_json()),
            Err((e, run_id)) => {
                let p = errors::custom_run(&e, run_id.as_deref());
                let mut v = json!({"error": p.detail, "code": p.code, "run_id": run_id});
                if !p.errors.is_empty() {
                    v["errors"] = json!(p.errors);
                }
                CallToolResult::structured_error(v)
            }
        }
    }
}

/// A failed run: a missing or dead connection is a normal result with the link to show (the
/// model retries after the user connects); anything else is an error result with the problem's
/// code and members.
fn run_failed(e: &RunError) -> CallToolResult {
    match e {
        RunError::ConnectionRequired { prompt, .. } => CallToolResult::structured(json!({
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
        RunError::NeedsReauth {
            prompt,
            connection_id,
            ..
        } => CallToolResult::structured(json!({
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
        _ => {
            let p = errors::run(e);
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
