//! Custom connectors' side that talks to their servers: creating and refreshing a connector
//! (listing an MCP server's tools, fetching an OpenAPI document) and running their tools (MCP
//! `tools/call`, or a REST request mapped like a catalog tool's), always through the
//! SSRF-guarded client. Types, rules, search and storage are the domain's
//! (`platform_domain::custom`).

pub mod mcp_client;

use std::sync::Arc;
use std::time::Instant;

use catalog_core::Method;
use platform_domain::clock::Clock;
use platform_domain::custom::{
    Called, Connector, ConnectorStore, CustomError, CustomTool, Kind, MAX_DOCUMENT, RunError,
    Source, connector_name, headers_of, new_id, openapi, resolve, seal_context, truncate,
};
use platform_domain::runs::{Arguments, NewRun, Run, RunOutput, RunStatus, RunStore};
use platform_domain::secrets::SecretBox;
use platform_domain::validation::check;
use serde_json::{Map, Value};

use crate::outbound::{Outbound, OutboundError};

/// What custom connectors need besides the store: the SSRF-guarded client and the sealer.
#[derive(Clone)]
pub struct Runtime {
    pub outbound: Arc<Outbound>,
    pub sealer: Option<Arc<dyn SecretBox>>,
}

impl From<OutboundError> for CustomError {
    fn from(e: OutboundError) -> Self {
        match e {
            OutboundError::Refused { url, reason } => {
                CustomError::Refused(format!("Refused to contact {url}: {reason}."))
            }
            OutboundError::InvalidUrl(m) => CustomError::Invalid(format!("Invalid URL: {m}.")),
            OutboundError::TooLarge { .. } => CustomError::DocumentTooLarge,
            other => CustomError::Unreachable(other.to_string()),
        }
    }
}

impl From<OutboundError> for RunError {
    fn from(e: OutboundError) -> Self {
        match e {
            OutboundError::Refused { url, reason } => {
                RunError::Refused(format!("Refused to contact {url}: {reason}."))
            }
            OutboundError::Timeout => RunError::Timeout,
            OutboundError::TooLarge { limit } => RunError::TooLarge(limit),
            OutboundError::InvalidUrl(m) | OutboundError::Network(m) => RunError::Unreachable(m),
        }
    }
}

async fn seal_headers(
    rt: &Runtime,
    id: &str,
    headers: &[(String, String)],
) -> Result<Option<String>, CustomError> {
    if headers.is_empty() {
        return Ok(None);
    }
    let sealer = rt
        .sealer
        .as_ref()
        .ok_or_else(|| CustomError::Sealing("no credentials key is configured".into()))?;
    let plain = serde_json::to_vec(headers).map_err(|e| CustomError::Sealing(e.to_string()))?;
    sealer
        .seal(&plain, &seal_context(id))
        .await
        .map(Some)
        .map_err(|e| CustomError::Sealing(e.to_string()))
}

pub async fn open_headers(
    rt: &Runtime,
    c: &Connector,
) -> Result<Vec<(String, String)>, CustomError> {
    let Some(sealed) = &c.headers_sealed else {
        return Ok(Vec::new());
    };
    let sealer = rt
        .sealer
        .as_ref()
        .ok_or_else(|| CustomError::Sealing("no credentials key is configured".into()))?;
    let plain = sealer
        .open(sealed, &seal_context(&c.id))
        .await
        .map_err(|e| CustomError::Sealing(e.to_string()))?;
    serde_json::from_slice(&plain).map_err(|e| CustomError::Sealing(e.to_string()))
}

/// Lists the tools of the connector's peer (MCP) or derives them from its document (REST).
/// Returns the tools, the title to name it by, and the base URL for REST.
async fn load_tools(
    rt: &Runtime,
    kind: Kind,
    name: Option<&str>,
    url: Option<&str>,
    document: Option<&Value>,
    base_url: Option<&str>,
    headers: &[(String, String)],
) -> Result<(String, Vec<CustomTool>, Option<String>), CustomError> {
    match kind {
        Kind::Mcp => {
            let url =
                url.ok_or_else(|| CustomError::Invalid("An MCP connector needs url.".into()))?;
            let listed = mcp_client::list_tools(&rt.outbound, url, headers).await?;
            let name = connector_name(name, &listed.server_name)?;
            let tools = mcp_client::derive(&name, listed.tools)?;
            Ok((name, tools, None))
        }
        Kind::Rest => {
            let (doc, doc_url) = match (document, url) {
                (Some(doc), _) => (doc.clone(), None),
                (None, Some(url)) => (fetch_document(&rt.outbound, url).await?, Some(url)),
                (None, None) => {
                    return Err(CustomError::Invalid(
                        "A REST connector needs openapi (the document) or url (where to fetch it)."
                            .into(),
                    ));
                }
            };
            let title = doc
                .pointer("/info/title")
                .and_then(Value::as_str)
                .unwrap_or("api")
                .to_owned();
            let name = connector_name(name, &title)?;
            let derived = openapi::derive(&name, &doc, doc_url)?;
            let base = match base_url.map(str::to_owned).or(derived.base_url) {
                Some(b) => b,
                None => {
                    return Err(CustomError::InvalidOpenApi(
                        "it names no absolute server URL; pass base_url.".into(),
                    ));
                }
            };
            rt.outbound.check_url(&base)?;
            Ok((name, derived.tools, Some(base)))
        }
    }
}

/// Fetches an OpenAPI document (JSON) through the guard.
pub async fn fetch_document(outbound: &Outbound, url: &str) -> Result<Value, CustomError> {
    let req = outbound
        .client()
        .get(url)
        .header(http::header::ACCEPT, "application/json");
    let resp = outbound.send(req).await?;
    if !(200..300).contains(&resp.status) {
        return Err(CustomError::Unreachable(format!(
            "fetching the OpenAPI document answered HTTP {}",
            resp.status
        )));
    }
    if resp.body.len() > MAX_DOCUMENT {
        return Err(CustomError::DocumentTooLarge);
    }
    serde_json::from_slice(&resp.body).map_err(|e| {
        CustomError::InvalidOpenApi(format!("the document at the URL is not JSON ({e})"))
    })
}

/// `POST /custom-connectors` (the body already matches the request schema).
async fn create(
    store: &dyn ConnectorStore,
    rt: &Runtime,
    account: &str,
    body: &Value,
    now_ms: i64,
) -> Result<Connector, CustomError> {
    let kind = body
        .get("kind")
        .and_then(Value::as_str)
        .and_then(Kind::parse)
        .ok_or_else(|| CustomError::Invalid("kind must be \"mcp\" or \"rest\".".into()))?;
    let url = body.get("url").and_then(Value::as_str);
    let document = body.get("openapi");
    if kind == Kind::Mcp && document.is_some() {
        return Err(CustomError::Invalid(
            "openapi belongs to REST connectors; an MCP connector takes url.".into(),
        ));
    }
    if document.is_some() && url.is_some() {
        return Err(CustomError::Invalid(
            "Give either openapi (the document) or url, not both.".into(),
        ));
    }
    if let Some(doc) = document
        && serde_json::to_vec(doc).map(|v| v.len()).unwrap_or(0) > MAX_DOCUMENT
    {
        return Err(CustomError::DocumentTooLarge);
    }
    if let Some(url) = url {
        rt.outbound.check_url(url)?;
    }
    let base_url = body.get("base_url").and_then(Value::as_str);
    if let Some(b) = base_url {
        rt.outbound.check_url(b)?;
    }
    let headers = headers_of(body.get("headers"))?;
    // A name that is taken fails before the peer is contacted, when it is given.
    let asked = body.get("name").and_then(Value::as_str);
    if let Some(n) = asked {
        let n = connector_name(Some(n), "")?;
        if store.connector_by_name(account, &n).await?.is_some() {
            return Err(CustomError::NameTaken(n));
        }
    }
    let (name, tools, base_url) =
        load_tools(rt, kind, asked, url, document, base_url, &headers).await?;
    let id = new_id();
    let connector = Connector {
        headers_sealed: seal_headers(rt, &id, &headers).await?,
        id,
        name,
        kind,
        source: if document.is_some() {
            Source::Inline
        } else {
            Source::Url
        },
        url: url.map(str::to_owned),
        base_url,
        header_names: headers.iter().map(|(n, _)| n.clone()).collect(),
        tools,
        created_at_ms: now_ms,
        refreshed_at_ms: now_ms,
    };
    store.put_connector(account, &connector).await?;
    tracing::info!(account, connector = %connector.id, kind = kind.as_str(),
                   tools = connector.tools.len(), "custom connector created");
    Ok(connector)
}

/// `POST /custom-connectors/{id}/refresh`: lists or fetches the tools again.
async fn refresh(
    store: &dyn ConnectorStore,
    rt: &Runtime,
    account: &str,
    id: &str,
    now_ms: i64,
) -> Result<Connector, CustomError> {
    let mut c = store
        .get_connector(account, id)
        .await?
        .ok_or_else(|| CustomError::NotFound(id.to_owned()))?;
    if c.source == Source::Inline {
        return Err(CustomError::NotRefreshable(
            "This connector was created from an inline OpenAPI document, so there is nothing to \
             fetch again; delete it and create it with the new document."
                .into(),
        ));
    }
    let headers = open_headers(rt, &c).await?;
    let (_, tools, base) = load_tools(
        rt,
        c.kind,
        Some(&c.name),
        c.url.as_deref(),
        None,
        c.base_url.as_deref(),
        &headers,
    )
    .await?;
    c.tools = tools;
    c.base_url = base;
    c.refreshed_at_ms = now_ms;
    store.replace_connector_tools(account, &c).await?;
    Ok(c)
}

/// One REST call of a derived tool: the arguments are grouped like its input schema,
/// `{"path": {..}, "query": {..}, "header": {..}, "body": ..}`.
struct RestCall<'a> {
    pub method: Method,
    pub base_url: &'a str,
    pub path: &'a str,
    pub input_schema: &'a Value,
    pub arguments: &'a Value,
    /// The connector's (opened) headers; they win over argument headers.
    pub headers: &'a [(String, String)],
}

/// Sends one REST call of a derived tool through the guard, with the executor's request
/// mapping.
async fn rest_call(outbound: &Outbound, call: RestCall<'_>) -> Result<Called, RunError> {
    let req = crate::request::prepare_request(
        outbound,
        call.method,
        call.path,
        call.base_url,
        call.input_schema,
        call.arguments,
        call.headers,
    )
    .map_err(RunError::InvalidArguments)?;
    let resp = outbound.send(req).await?;
    let data = match serde_json::from_slice::<Value>(&resp.body) {
        Ok(v) => v,
        Err(_) if resp.body.is_empty() => Value::Null,
        Err(_) => Value::String(String::from_utf8_lossy(&resp.body).into_owned()),
    };
    match resp.status {
        200..=299 => Ok(Called {
            http_status: Some(resp.status),
            data,
        }),
        429 => Err(RunError::RateLimited {
            retry_after: resp
                .headers
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok()),
        }),
        status => Err(RunError::Upstream {
            status: Some(status),
            detail: format!("HTTP {status}: {}", short(&data)),
        }),
    }
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    s.chars().take(300).collect()
}

/// Custom connectors for every account: the service REST and MCP both call.
pub struct CustomConnectors {
    connectors: Arc<dyn ConnectorStore>,
    runs: Arc<dyn RunStore>,
    clock: Arc<dyn Clock>,
    rt: Runtime,
}

impl CustomConnectors {
    pub fn new(
        connectors: Arc<dyn ConnectorStore>,
        runs: Arc<dyn RunStore>,
        clock: Arc<dyn Clock>,
        rt: Runtime,
    ) -> Self {
        Self {
            connectors,
            runs,
            clock,
            rt,
        }
    }

    /// `POST /custom-connectors` (the body already matches the request schema).
    pub async fn create(&self, account: &str, body: &Value) -> Result<Connector, CustomError> {
        create(
            self.connectors.as_ref(),
            &self.rt,
            account,
            body,
            self.clock.now_ms(),
        )
        .await
    }

    /// `POST /custom-connectors/{id}/refresh`.
    pub async fn refresh(&self, account: &str, id: &str) -> Result<Connector, CustomError> {
        refresh(
            self.connectors.as_ref(),
            &self.rt,
            account,
            id,
            self.clock.now_ms(),
        )
        .await
    }

    /// Runs a custom tool of the account and records the run; a failure carries the id of its
    /// recorded run when the peer was called.
    pub async fn run(
        &self,
        account: &str,
        name: &str,
        arguments: &Value,
    ) -> Result<RunOutput, (RunError, Option<String>)> {
        let (c, tool) = match resolve(self.connectors.as_ref(), account, name).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err((RunError::ToolNotFound(name.to_owned()), None)),
            Err(e) => return Err((CustomError::Store(e).into(), None)),
        };
        let args = match arguments {
            Value::Null => Value::Object(Map::new()),
            v => v.clone(),
        };
        if let Ok(errors) = check(&tool.input_schema, &args)
            && !errors.is_empty()
        {
            return Err((RunError::InvalidArguments(errors), None));
        }
        let headers = open_headers(&self.rt, &c)
            .await
            .map_err(|e| (e.into(), None))?;
        let started_at_ms = self.clock.now_ms();
        let started = Instant::now();
        let result = self.call(&c, &tool, &headers, &args).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let run = Run::from_new(NewRun {
            tool: tool.name.clone(),
            app: c.app(),
            status: if result.is_ok() {
                RunStatus::Succeeded
            } else {
                RunStatus::Failed
            },
            duration_ms,
            started_at_ms,
            error: result.as_ref().err().map(|e| truncate(&e.to_string(), 300)),
            arguments: args,
            keep_arguments: Arguments::Redacted,
        });
        if let Err(e) = self.runs.record_run(account, &run).await {
            tracing::error!(error = %e, run = %run.id, "run not recorded");
        }
        match result {
            Ok(called) => Ok(RunOutput {
                run_id: run.id,
                tool: tool.name,
                app: c.app(),
                http_status: called.http_status,
                data: called.data,
                duration_ms,
                connection_id: None,
            }),
            Err(e) => Err((e, Some(run.id))),
        }
    }

    /// One call of `tool` on its connector's server: MCP `tools/call`, or the REST request.
    async fn call(
        &self,
        c: &Connector,
        tool: &CustomTool,
        headers: &[(String, String)],
        args: &Value,
    ) -> Result<Called, RunError> {
        match (&c.kind, &tool.http) {
            (Kind::Mcp, _) => match c.url.as_deref() {
                Some(url) => {
                    mcp_client::call_tool(&self.rt.outbound, url, headers, &tool.remote, args)
                        .await
                        .map(|data| Called {
                            http_status: None,
                            data,
                        })
                }
                None => Err(RunError::Unreachable("the connector has no URL".into())),
            },
            (Kind::Rest, Some(op)) => {
                let call = RestCall {
                    method: op.method,
                    base_url: c.base_url.as_deref().unwrap_or_default(),
                    path: &op.path,
                    input_schema: &tool.input_schema,
                    arguments: args,
                    headers,
                };
                rest_call(&self.rt.outbound, call).await
            }
            (Kind::Rest, None) => Err(RunError::Unreachable(
                "the tool has no HTTP operation".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_substitute_and_encode_path_parameters_and_add_the_query() {
        let outbound = Outbound::new(crate::outbound::OutboundPolicy::default()).unwrap();
        let schema = json!({"properties": {"query": {"properties": {"tag": {}, "limit": {}}}}});
        let args = json!({"path": {"petId": "a b/c"}, "query": {"tag": ["x", "y"], "limit": 5}});
        let prepare = |args: &Value| {
            crate::request::prepare_request(
                &outbound,
                Method::Get,
                "/pets/{petId}",
                "https://pets.example.com/v1/",
                &schema,
                args,
                &[("X-Api-Key".into(), "k".into())],
            )
        };
        let req = prepare(&args).unwrap().build().unwrap();
        assert_eq!(
            req.url().as_str(),
            "https://pets.example.com/v1/pets/a%20b%2Fc?limit=5&tag=x&tag=y"
        );
        assert_eq!(req.headers()["x-api-key"], "k");
        assert!(
            prepare(&json!({})).is_err(),
            "the path parameter is required"
        );
    }
}
