//! The MCP side of custom connectors: rmcp's Streamable HTTP client over the SSRF-guarded
//! [`Outbound`] client. One short session per operation (list or call): connectors are used
//! rarely and from Lambda, where a held-open session would not survive the invocation anyway.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use serde_json::Value;

use catalog_core::naming::{MAX_TOOL_NAME, slug, tool_name};
use platform_domain::custom::{CustomError, CustomTool, MAX_TOOLS, RunError, TOOL_PREFIX};

use crate::outbound::Outbound;

/// A `tools/list` that pages on past this many pages is refused (a server paging forever).
const MAX_PAGES: usize = 50;
const DESCRIPTION_MAX: usize = 1000;

/// The server's tools and how it calls itself.
pub struct Listed {
    pub server_name: String,
    pub tools: Vec<rmcp::model::Tool>,
}

fn budget(outbound: &Outbound) -> Duration {
    outbound.policy().timeout + Duration::from_secs(5)
}

/// Bounds an MCP exchange by the outbound timeout (rmcp retries some failures on its own).
async fn timed<T>(
    outbound: &Outbound,
    f: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(budget(outbound), f)
        .await
        .unwrap_or_else(|_| Err("the server did not answer in time".into()))
}

/// The error chain as one line: rmcp wraps the transport's error, which names the real cause
/// (refused by the guard, connection refused, HTTP 401...). Header values never appear in it.
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

async fn connect(
    outbound: &Outbound,
    url: &str,
    headers: &[(String, String)],
) -> Result<RunningService<RoleClient, ()>, CustomError> {
    outbound.check_url(url)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = HashMap::new();
    for (name, value) in headers {
        // rmcp sends the bearer token itself; anything else travels as a custom header.
        if name == "authorization"
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            return Err(CustomError::Invalid(format!(
                "Header {name:?} is not valid."
            )));
        };
        custom.insert(n, v);
    }
    config = config.custom_headers(custom);
    let transport = StreamableHttpClientTransport::with_client(outbound.client().clone(), config);
    timed(outbound, async {
        ().serve(transport).await.map_err(|e| chain(&e))
    })
    .await
    .map_err(|m| {
        if m.contains("private, loopback") || m.contains("redirect refused") {
            CustomError::Refused(m)
        } else {
            CustomError::Unreachable(m)
        }
    })
}

/// `initialize` and every page of `tools/list`.
pub async fn list_tools(
    outbound: &Outbound,
    url: &str,
    headers: &[(String, String)],
) -> Result<Listed, CustomError> {
    let client = connect(outbound, url, headers).await?;
    let server_name = client
        .peer_info()
        .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()))
        .unwrap_or_default();
    let listed = timed(outbound, async {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = client
                .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                .await
                .map_err(|e| chain(&e))?;
            tools.extend(page.tools);
            if tools.len() > MAX_TOOLS {
                return Ok(tools);
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(format!(
            "tools/list went on for more than {MAX_PAGES} pages"
        ))
    })
    .await;
    close(client).await;
    let tools = listed.map_err(CustomError::Unreachable)?;
    if tools.len() > MAX_TOOLS {
        return Err(CustomError::TooManyTools(tools.len()));
    }
    Ok(Listed { server_name, tools })
}

async fn close(client: RunningService<RoleClient, ()>) {
    // Ends the session (DELETE) so the server can free it; a failure here changes nothing.
    if let Err(e) = client.cancel().await {
        tracing::debug!(error = %e, "MCP client shutdown");
    }
}

/// Our tools for the server's: `custom.<connector>.<tool>` with the tool name made a slug
/// (`get-sum` → `get_sum`), unique within the connector.
pub fn derive(
    connector: &str,
    listed: Vec<rmcp::model::Tool>,
) -> Result<Vec<CustomTool>, CustomError> {
    let app = format!("{TOOL_PREFIX}{connector}");
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(listed.len());
    for t in listed {
        let remote = t.name.to_string();
        let base = match slug(&remote) {
            s if s.is_empty() => "tool".to_owned(),
            s => s,
        };
        let mut name = tool_name(&app, &base);
        let mut k = 2;
        while !seen.insert(name.clone()) {
            name = tool_name(&app, &format!("{base}_{k}"));
            k += 1;
        }
        debug_assert!(name.len() <= MAX_TOOL_NAME);
        let description = t
            .description
            .as_deref()
            .map(catalog_core::html::plain_text)
            .filter(|d| !d.trim().is_empty())
            .or_else(|| t.title.clone())
            .unwrap_or_else(|| remote.replace(['_', '-'], " "));
        let description: String = description.chars().take(DESCRIPTION_MAX).collect();
        let schema = Value::Object((*t.input_schema).clone());
        let params = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        out.push(CustomTool {
            name,
            summary: t.title.clone().unwrap_or_default(),
            remote,
            description,
            input_schema: schema,
            http: None,
            params,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// `tools/call`; the answer's structured content, else its text, else its content blocks.
pub async fn call_tool(
    outbound: &Outbound,
    url: &str,
    headers: &[(String, String)],
    tool: &str,
    arguments: &Value,
) -> Result<Value, RunError> {
    let client = connect(outbound, url, headers).await.map_err(|e| match e {
        CustomError::Refused(m) => RunError::Refused(m),
        CustomError::Unreachable(m) => RunError::Unreachable(m),
        other => RunError::Setup(other),
    })?;
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(args) = arguments {
        params = params.with_arguments(args.clone());
    }
    let called = timed(outbound, async {
        client.call_tool(params).await.map_err(|e| chain(&e))
    })
    .await;
    close(client).await;
    let result = called.map_err(|m| {
        if m.contains("did not answer in time") {
            RunError::Timeout
        } else {
            RunError::Unreachable(m)
        }
    })?;
    let v = serde_json::to_value(&result).map_err(|e| RunError::Unreachable(e.to_string()))?;
    let text: Vec<&str> = v
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if v.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(RunError::Upstream {
            status: None,
            detail: if text.is_empty() {
                "the tool failed without a message".to_owned()
            } else {
                text.join("\n")
            },
        });
    }
    if let Some(structured) = v.get("structuredContent").filter(|s| !s.is_null()) {
        return Ok(structured.clone());
    }
    let blocks = v.get("content").and_then(Value::as_array);
    match blocks {
        Some(b) if !b.is_empty() && b.len() == text.len() => Ok(Value::String(text.join("\n"))),
        Some(b) => Ok(Value::Array(b.clone())),
        None => Ok(Value::Null),
    }
}
