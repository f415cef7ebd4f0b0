//! Custom connectors: an account's own MCP servers and REST APIs (from an OpenAPI document).
//!
//! Their tools are named `custom.<connector>.<tool>` and join the catalog's in `find`, `get` and
//! `run` for the owning account only; another account gets `tool_not_found`. A connector keeps
//! its derived tools (names, descriptions, input schemas, and for REST the method and path) in
//! one item, so a refresh replaces them atomically and a search needs one Query per account.
//! Auth headers are sealed at rest with the connector id as context.

pub mod mcp_client;
pub mod rest;
mod store;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use http::StatusCode;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::catalog::{self, Method};
use crate::catalog_api::{Hit, ToolDef, decode_cursor, encode_cursor};
use crate::clock::{Clock, rfc3339};
use crate::outbound::{Outbound, OutboundError};
use crate::problem::{FieldError, Problem};
use crate::runs::{Arguments, NewRun, Run, RunStatus};
use crate::sealed::Sealer;
use crate::search::text::Verb;
use crate::search::{AppText, DocText, Index};
use crate::store::{Store, StoreError};

pub use rest::{RestCall, RestRunner, SimpleRestRunner};
pub use store::CustomStore;

/// Connectors per account.
pub const MAX_CONNECTORS: u32 = 20;
/// Tools per connector.
pub const MAX_TOOLS: usize = 500;
/// Largest OpenAPI document accepted, inline or fetched.
pub const MAX_DOCUMENT: usize = 2 * 1024 * 1024;
/// Largest `POST /custom-connectors` body: a document plus the request around it.
pub const MAX_REQUEST_BODY: usize = MAX_DOCUMENT + 64 * 1024;
/// Prefix of every custom tool name and custom app id.
pub const TOOL_PREFIX: &str = "custom.";
const MAX_HEADERS: usize = 20;
const MAX_NAME: usize = 24;
const DEFAULT_PAGE: usize = 20;

/// What custom connectors need besides the store: the SSRF-guarded client and the sealer.
#[derive(Clone)]
pub struct Runtime {
    pub outbound: Arc<Outbound>,
    pub sealer: Option<Arc<Sealer>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Mcp,
    Rest,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Mcp => "mcp",
            Kind::Rest => "rest",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        match s {
            "mcp" => Some(Kind::Mcp),
            "rest" => Some(Kind::Rest),
            _ => None,
        }
    }
}

/// One derived tool of a connector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomTool {
    /// `custom.<connector>.<tool>`.
    pub name: String,
    /// The name the peer knows: the MCP tool's name, or the operationId / derived operation name.
    pub remote: String,
    pub description: String,
    pub input_schema: Value,
    /// REST only: how to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpOp>,
    /// Index text beyond name and description (summary and tags, parameter names).
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub params: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpOp {
    pub method: Method,
    /// Path template relative to the connector's base URL, e.g. `/pets/{id}`.
    pub path: String,
}

/// Where a REST connector's document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The connector's `url` (MCP server, or OpenAPI document to fetch again on refresh).
    Url,
    /// An inline OpenAPI document (nothing to refresh from).
    Inline,
}

/// A stored connector.
#[derive(Debug, Clone)]
pub struct Connector {
    pub id: String,
    /// Unique per account; the `<connector>` of tool names.
    pub name: String,
    pub kind: Kind,
    pub source: Source,
    /// MCP server URL, or the OpenAPI document URL.
    pub url: Option<String>,
    /// REST: where operations are sent.
    pub base_url: Option<String>,
    /// Names of the headers sent along (values only sealed).
    pub header_names: Vec<String>,
    pub headers_sealed: Option<String>,
    pub tools: Vec<CustomTool>,
    pub created_at_ms: i64,
    pub refreshed_at_ms: i64,
}

impl Connector {
    pub fn app(&self) -> String {
        format!("{TOOL_PREFIX}{}", self.name)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "kind": self.kind.as_str(),
            "url": self.url,
            "base_url": self.base_url,
            "headers": self.header_names,
            "tool_count": self.tools.len(),
            "tools": self.tools.iter().map(|t| json!({"name": t.name, "description": t.description})).collect::<Vec<_>>(),
            "created_at": rfc3339(self.created_at_ms),
            "refreshed_at": rfc3339(self.refreshed_at_ms),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CustomError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    InvalidOpenApi(String),
    #[error("the OpenAPI document is larger than {MAX_DOCUMENT} bytes")]
    DocumentTooLarge,
    #[error("the connector offers {0} tools; at most {MAX_TOOLS} are kept per connector")]
    TooManyTools(usize),
    #[error("the connector's tools take {0} bytes compressed, more than can be stored")]
    ToolsTooLarge(usize),
    #[error("the account has {MAX_CONNECTORS} custom connectors already")]
    LimitReached,
    #[error("a connector named {0:?} exists already")]
    NameTaken(String),
    #[error("no custom connector {0:?}")]
    NotFound(String),
    #[error("{0}")]
    NotRefreshable(String),
    #[error("secrets cannot be sealed: {0}")]
    Sealing(String),
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

impl CustomError {
    pub fn problem(&self) -> Problem {
        let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
        match self {
            CustomError::Store(e) => {
                tracing::error!(error = %e, "store failure (custom connectors)");
                Problem::unavailable()
            }
            CustomError::Invalid(m) => Problem::new(unprocessable, "invalid_request", m.clone()),
            CustomError::Refused(m) => Problem::new(
                unprocessable,
                "destination_refused",
                format!("{m} Only public https destinations are allowed."),
            ),
            CustomError::Unreachable(m) => Problem::new(
                unprocessable,
                "connector_unreachable",
                format!("The connector's server could not be used: {m}"),
            ),
            CustomError::InvalidOpenApi(m) => Problem::new(
                unprocessable,
                "invalid_openapi",
                format!("Not a usable OpenAPI 3 document: {m}"),
            ),
            CustomError::DocumentTooLarge => Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "document_too_large",
                self.to_string(),
            ),
            CustomError::TooManyTools(_) | CustomError::ToolsTooLarge(_) => {
                Problem::new(unprocessable, "too_many_tools", self.to_string())
            }
            CustomError::LimitReached => Problem::new(
                unprocessable,
                "connector_limit",
                format!("{self}; delete one first."),
            ),
            CustomError::NameTaken(_) => Problem::new(
                StatusCode::CONFLICT,
                "connector_name_taken",
                format!("{self}; choose another name."),
            ),
            CustomError::NotFound(_) => Problem::not_found("connector_not_found", self.to_string()),
            CustomError::NotRefreshable(m) => {
                Problem::new(unprocessable, "not_refreshable", m.clone())
            }
            CustomError::Sealing(_) => {
                tracing::error!(error = %self, "sealing unavailable");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "sealing_unavailable",
                    "Connector headers cannot be stored safely right now; retry later.",
                )
            }
        }
    }
}

fn new_id() -> String {
    let mut r = [0u8; 10];
    rand::rng().fill_bytes(&mut r);
    let mut id = String::from("cc_");
    for b in r {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// The connector name from the request, or from the MCP server / API title: a slug of at most
/// [`MAX_NAME`] characters.
fn connector_name(asked: Option<&str>, fallback: &str) -> Result<String, CustomError> {
    match asked {
        Some(n) => {
            let slug = crate::derive::slug(n);
            if slug.is_empty() || slug.len() > MAX_NAME || slug != n {
                return Err(CustomError::Invalid(format!(
                    "name must be lowercase letters, digits and '_' (at most {MAX_NAME}), \
                     e.g. {:?}.",
                    if slug.is_empty() {
                        "my_api".to_owned()
                    } else {
                        slug.chars().take(MAX_NAME).collect()
                    }
                )));
            }
            Ok(slug)
        }
        None => {
            let mut slug = crate::derive::slug(fallback);
            if slug.len() > MAX_NAME {
                let cut = slug[..MAX_NAME].rfind('_').unwrap_or(MAX_NAME);
                slug.truncate(cut);
            }
            Ok(if slug.is_empty() {
                "connector".to_owned()
            } else {
                slug
            })
        }
    }
}

/// Validated `headers` of a create request.
fn headers_of(v: Option<&Value>) -> Result<Vec<(String, String)>, CustomError> {
    let Some(map) = v.and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    if map.len() > MAX_HEADERS {
        return Err(CustomError::Invalid(format!(
            "At most {MAX_HEADERS} headers per connector."
        )));
    }
    let mut out = Vec::new();
    for (name, value) in map {
        let value = value.as_str().unwrap_or_default();
        let lname = name.to_ascii_lowercase();
        if http::HeaderName::from_bytes(lname.as_bytes()).is_err()
            || http::HeaderValue::from_str(value).is_err()
        {
            return Err(CustomError::Invalid(format!(
                "Header {name:?} is not a valid HTTP header name and value."
            )));
        }
        // These belong to the transport; letting a connector set them would break the protocol.
        if matches!(
            lname.as_str(),
            "accept"
                | "content-type"
                | "content-length"
                | "host"
                | "mcp-session-id"
                | "mcp-protocol-version"
                | "last-event-id"
                | "transfer-encoding"
                | "connection"
        ) {
            return Err(CustomError::Invalid(format!(
                "Header {name:?} is set by the platform and cannot be configured."
            )));
        }
        out.push((lname, value.to_owned()));
    }
    Ok(out)
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

fn seal_context(id: &str) -> String {
    format!("cc#{id}")
}

async fn open_headers(rt: &Runtime, c: &Connector) -> Result<Vec<(String, String)>, CustomError> {
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
                (None, Some(url)) => (rest::fetch_document(&rt.outbound, url).await?, Some(url)),
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
            let derived = rest::derive(&name, &doc, doc_url)?;
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

/// `POST /custom-connectors` (the body already matches the request schema).
pub async fn create<S: Store>(
    store: &S,
    rt: &Runtime,
    account: &str,
    body: &Value,
    now_ms: i64,
) -> Result<Value, CustomError> {
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
    Ok(connector.to_json())
}

pub async fn list<S: Store>(
    store: &S,
    account: &str,
    cursor: Option<&str>,
    limit: Option<usize>,
) -> Result<Value, Problem> {
    let start = cursor
        .map(decode_cursor)
        .transpose()
        .map_err(|_| {
            Problem::bad_request(
                "invalid_cursor",
                "The cursor is not one this API issued; start again without it.",
            )
        })?
        .unwrap_or(0);
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    let mut all = store
        .list_connectors(account)
        .await
        .map_err(|e| CustomError::from(e).problem())?;
    all.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
    let end = (start + limit).min(all.len());
    let page: Vec<Value> = all
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(Connector::to_json)
        .collect();
    Ok(json!({
        "custom_connectors": page,
        "next_cursor": (end < all.len()).then(|| encode_cursor(end)),
    }))
}

pub async fn get<S: Store>(store: &S, account: &str, id: &str) -> Result<Value, CustomError> {
    store
        .get_connector(account, id)
        .await?
        .map(|c| c.to_json())
        .ok_or_else(|| CustomError::NotFound(id.to_owned()))
}

pub async fn refresh<S: Store>(
    store: &S,
    rt: &Runtime,
    account: &str,
    id: &str,
    now_ms: i64,
) -> Result<Value, CustomError> {
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
    Ok(c.to_json())
}

pub async fn delete<S: Store>(store: &S, account: &str, id: &str) -> Result<(), CustomError> {
    let c = store
        .get_connector(account, id)
        .await?
        .ok_or_else(|| CustomError::NotFound(id.to_owned()))?;
    store
        .delete_connector(account, &c)
        .await
        .map_err(|e| match e {
            // Deleted by a concurrent request in between.
            StoreError::NotFound(_) => CustomError::NotFound(id.to_owned()),
            other => other.into(),
        })
}

/// Splits `custom.<connector>.<tool>` into the connector name.
fn connector_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(TOOL_PREFIX)?;
    let (c, t) = rest.split_once('.')?;
    (!c.is_empty() && !t.is_empty()).then_some(c)
}

pub fn is_custom(name: &str) -> bool {
    name.starts_with(TOOL_PREFIX)
}

async fn resolve<S: Store>(
    store: &S,
    account: &str,
    name: &str,
) -> Result<Option<(Connector, CustomTool)>, StoreError> {
    let Some(cname) = connector_of(name) else {
        return Ok(None);
    };
    let Some(c) = store.connector_by_name(account, cname).await? else {
        return Ok(None);
    };
    let tool = c.tools.iter().find(|t| t.name == name).cloned();
    Ok(tool.map(|t| (c, t)))
}

/// `GET /tools/{name}` for a custom tool of the account.
pub async fn tool_def<S: Store>(
    store: &S,
    account: &str,
    name: &str,
) -> Result<Option<ToolDef>, StoreError> {
    Ok(resolve(store, account, name).await?.map(|(c, t)| ToolDef {
        name: t.name,
        app: c.app(),
        description: t.description,
        input_schema: t.input_schema,
    }))
}

/// The account's custom tools found for a query.
#[derive(Debug, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub descriptions: HashMap<String, String>,
    pub hint: Option<String>,
}

/// Whether the account has a connector `custom.<name>` (for the `app` filter).
pub async fn app_exists<S: Store>(store: &S, account: &str, app: &str) -> Result<bool, StoreError> {
    let Some(name) = app.strip_prefix(TOOL_PREFIX) else {
        return Ok(false);
    };
    Ok(store.connector_by_name(account, name).await?.is_some())
}

/// Searches the account's custom tools with the catalog's BM25F ranking, over an index built for
/// just these tools.
pub async fn find<S: Store>(
    store: &S,
    account: &str,
    query: &str,
    app: Option<&str>,
    limit: usize,
) -> Result<Found, StoreError> {
    let connectors = store.list_connectors(account).await?;
    if connectors.is_empty() {
        return Ok(Found::default());
    }
    let cat = index_of(&connectors);
    let found = cat.find(query, app, limit);
    let descriptions = found
        .hits
        .iter()
        .filter_map(|h| {
            cat.tool(&h.tool)
                .map(|t| (h.tool.clone(), t.description.clone()))
        })
        .collect();
    Ok(Found {
        hits: found
            .hits
            .into_iter()
            .map(|h| Hit {
                tool: h.tool,
                app: h.app,
                score: f64::from(h.score),
                matched_terms: h.matched_terms,
            })
            .collect(),
        descriptions,
        hint: found.hint,
    })
}

/// An in-memory catalog of the connectors (apps) and their tools, with its search index.
fn index_of(connectors: &[Connector]) -> catalog::Catalog {
    let mut sorted: Vec<&Connector> = connectors.iter().collect();
    sorted.sort_by_key(|c| c.app());
    let mut apps = Vec::new();
    let mut tools: Vec<(catalog::Tool, &CustomTool)> = Vec::new();
    for (i, c) in sorted.iter().enumerate() {
        let start = tools.len() as u32;
        let mut own: Vec<&CustomTool> = c.tools.iter().collect();
        own.sort_by(|a, b| a.name.cmp(&b.name));
        for t in own {
            let (method, path) = match &t.http {
                Some(h) => (h.method, h.path.clone()),
                // An MCP tool's verb stands in for a method, so the method prior treats
                // "list_items" like a GET and "create_item" like a POST.
                None => (mcp_method(&t.remote), String::new()),
            };
            tools.push((
                catalog::Tool {
                    name: t.name.clone(),
                    app: i as u32,
                    method,
                    path,
                    operation_id: Some(t.remote.clone()),
                    description: t.description.clone(),
                    security: Vec::new(),
                    deprecated: false,
                },
                t,
            ));
        }
        apps.push(catalog::App {
            id: c.app(),
            title: c.name.replace('_', " "),
            provider: String::new(),
            service: None,
            description: String::new(),
            categories: Vec::new(),
            logo_url: None,
            base_url: c.base_url.clone().unwrap_or_default(),
            version: String::new(),
            license: None,
            auth: Vec::new(),
            tools: (start, tools.len() as u32),
        });
    }
    let app_texts: Vec<AppText> = apps
        .iter()
        .map(|a| AppText {
            id: &a.id,
            title: &a.title,
            provider: "",
            service: None,
            family: &[],
            extra: &[],
        })
        .collect();
    let docs: Vec<DocText> = tools
        .iter()
        .map(|(tool, t)| DocText {
            app: tool.app,
            name: &t.remote,
            summary: if t.summary.is_empty() {
                &t.description
            } else {
                &t.summary
            },
            description: &t.description,
            path: &tool.path,
            params: &t.params,
            verb: match &t.http {
                Some(h) => Verb::of_operation(h.method, &h.path),
                None => None,
            },
        })
        .collect();
    let index = Index::build(&app_texts, &docs);
    drop(docs);
    drop(app_texts);
    catalog::Catalog {
        source: catalog::Source {
            package: "custom".into(),
            input_key: String::new(),
        },
        apps,
        tools: tools.into_iter().map(|(t, _)| t).collect(),
        index,
        schemas: Vec::new(),
    }
}

fn mcp_method(remote: &str) -> Method {
    let first = crate::search::text::words(remote)
        .into_iter()
        .next()
        .map(|w| crate::search::text::stem(&w));
    match first.as_deref().and_then(Verb::of_term) {
        Some(Verb::Get | Verb::List) => Method::Get,
        Some(Verb::Update) => Method::Patch,
        Some(Verb::Delete) => Method::Delete,
        _ => Method::Post,
    }
}

/// Merges catalog and custom hits, keeping each list's own order: the head that matched more
/// query words goes first, and on a tie the one scoring higher relative to its own list's best
/// (BM25 scores of two corpora are not comparable as numbers).
pub fn merge(catalog: Vec<Hit>, custom: Vec<Hit>, limit: usize) -> Vec<Hit> {
    if custom.is_empty() {
        return catalog;
    }
    let top = |v: &[Hit]| v.first().map_or(1.0, |h| h.score.max(f64::MIN_POSITIVE));
    let (ca, cu) = (top(&catalog), top(&custom));
    let mut a = catalog.into_iter().peekable();
    let mut b = custom.into_iter().peekable();
    let mut out = Vec::new();
    while out.len() < limit {
        let take_custom = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(x), Some(y)) => (y.matched_terms.len(), y.score / cu)
                .partial_cmp(&(x.matched_terms.len(), x.score / ca))
                .is_some_and(|o| o.is_ge()),
        };
        let next = if take_custom { b.next() } else { a.next() };
        out.extend(next);
    }
    out
}

/// Outcome of a custom tool run, before it is answered.
pub struct RunOutcome {
    pub run_id: String,
    pub tool: String,
    pub app: String,
    pub http_status: Option<u16>,
    pub data: Value,
    pub duration_ms: u64,
}

impl RunOutcome {
    pub fn to_json(&self) -> Value {
        json!({
            "run_id": self.run_id,
            "tool": self.tool,
            "app": self.app,
            "status": "succeeded",
            "http_status": self.http_status,
            "data": self.data,
            "duration_ms": self.duration_ms,
            "connection_id": null,
        })
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("no tool {0:?}")]
    ToolNotFound(String),
    #[error("the arguments do not match the tool's input schema")]
    InvalidArguments(Vec<FieldError>),
    #[error("{0}")]
    Refused(String),
    #[error("the upstream answered {status:?}: {detail}")]
    Upstream { status: Option<u16>, detail: String },
    #[error("the upstream is rate limiting")]
    RateLimited { retry_after: Option<u64> },
    #[error("the upstream did not answer in time")]
    Timeout,
    #[error("the upstream's answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Unreachable(String),
    #[error(transparent)]
    Setup(#[from] CustomError),
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

impl RunError {
    /// The problem for a failed run; `run_id` names the recorded run when there is one.
    pub fn problem(&self, run_id: Option<&str>) -> Problem {
        let p = match self {
            RunError::ToolNotFound(name) => Problem::not_found(
                "tool_not_found",
                format!("No tool {name:?}; POST /tools/find finds tools for a task."),
            ),
            RunError::InvalidArguments(errors) => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_arguments",
                "The arguments do not match the tool's input schema; see errors.",
            )
            .with_errors(errors.clone()),
            RunError::Refused(m) => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "destination_refused",
                m.clone(),
            ),
            RunError::Upstream { status, detail } => {
                let p = Problem::new(
                    StatusCode::BAD_GATEWAY,
                    "upstream_error",
                    format!("The tool's server reported an error: {detail}"),
                );
                match status {
                    Some(s) => p.with("upstream_status", json!(s)),
                    None => p,
                }
            }
            RunError::RateLimited { retry_after } => {
                let p = Problem::new(
                    StatusCode::BAD_GATEWAY,
                    "upstream_rate_limited",
                    "The tool's server is rate limiting; retry later.",
                );
                match retry_after {
                    Some(s) => p.with_retry_after(*s),
                    None => p,
                }
            }
            RunError::Timeout => Problem::new(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                "The tool's server did not answer in time.",
            ),
            RunError::TooLarge(limit) => Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_too_large",
                format!("The tool's answer is larger than {limit} bytes."),
            ),
            RunError::Unreachable(m) => Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                format!("The tool's server could not be reached: {m}"),
            ),
            RunError::Setup(e) => e.problem(),
        };
        match run_id {
            Some(id) => p.with("run_id", json!(id)),
            None => p,
        }
    }
}

/// What a runner reports about a call that reached the peer.
pub struct Called {
    pub http_status: Option<u16>,
    pub data: Value,
}

/// Runs a custom tool of the account and records the run. `runner` executes REST tools.
pub async fn run<S: Store, R: RestRunner>(
    store: &S,
    rt: &Runtime,
    runner: &R,
    clock: &dyn Clock,
    account: &str,
    name: &str,
    arguments: &Value,
) -> Result<RunOutcome, (RunError, Option<String>)> {
    let (c, tool) = match resolve(store, account, name).await {
        Ok(Some(found)) => found,
        Ok(None) => return Err((RunError::ToolNotFound(name.to_owned()), None)),
        Err(e) => return Err((CustomError::Store(e).into(), None)),
    };
    let args = match arguments {
        Value::Null => Value::Object(Map::new()),
        v => v.clone(),
    };
    if let Ok(validator) = jsonschema::validator_for(&tool.input_schema) {
        let errors = crate::openapi::violations(&validator, &args);
        if !errors.is_empty() {
            return Err((RunError::InvalidArguments(errors), None));
        }
    }
    let headers = open_headers(rt, &c).await.map_err(|e| (e.into(), None))?;
    let started_at_ms = clock.now_ms();
    let started = Instant::now();
    let result = match (&c.kind, &tool.http) {
        (Kind::Mcp, _) => match c.url.as_deref() {
            Some(url) => mcp_client::call_tool(&rt.outbound, url, &headers, &tool.remote, &args)
                .await
                .map(|data| Called {
                    http_status: None,
                    data,
                }),
            None => Err(RunError::Unreachable("the connector has no URL".into())),
        },
        (Kind::Rest, Some(op)) => {
            let base = c.base_url.as_deref().unwrap_or_default();
            runner
                .run(RestCall {
                    method: op.method,
                    base_url: base,
                    path: &op.path,
                    input_schema: &tool.input_schema,
                    arguments: &args,
                    headers: &headers,
                })
                .await
        }
        (Kind::Rest, None) => Err(RunError::Unreachable(
            "the tool has no HTTP operation".into(),
        )),
    };
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
    if let Err(e) = store.record_run(account, &run).await {
        tracing::error!(error = %e, run = %run.id, "run not recorded");
    }
    match result {
        Ok(called) => Ok(RunOutcome {
            run_id: run.id,
            tool: tool.name,
            app: c.app(),
            http_status: called.http_status,
            data: called.data,
            duration_ms,
        }),
        Err(e) => Err((e, Some(run.id))),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(tool: &str, score: f64, matched: usize) -> Hit {
        Hit {
            tool: tool.into(),
            app: "a".into(),
            score,
            matched_terms: (0..matched).map(|i| format!("w{i}")).collect(),
        }
    }

    #[test]
    fn merging_keeps_each_lists_order_and_prefers_more_matched_words() {
        let catalog = vec![hit("c1", 20.0, 1), hit("c2", 15.0, 1)];
        let custom = vec![hit("x1", 2.0, 2), hit("x2", 1.0, 1)];
        let merged: Vec<String> = merge(catalog, custom, 10)
            .into_iter()
            .map(|h| h.tool)
            .collect();
        assert_eq!(merged, ["x1", "c1", "c2", "x2"]);
        let only: Vec<String> = merge(vec![hit("c1", 1.0, 1)], Vec::new(), 10)
            .into_iter()
            .map(|h| h.tool)
            .collect();
        assert_eq!(only, ["c1"]);
        assert_eq!(
            merge(vec![hit("c", 1.0, 1)], vec![hit("x", 1.0, 1)], 1).len(),
            1
        );
    }

    #[test]
    fn names_are_slugs_of_bounded_length() {
        assert_eq!(
            connector_name(None, "Pet Store API!").unwrap(),
            "pet_store_api"
        );
        assert_eq!(connector_name(Some("my_api"), "x").unwrap(), "my_api");
        assert!(connector_name(Some("My API"), "x").is_err());
        assert!(connector_name(Some(""), "x").is_err());
        let long = connector_name(None, "a very long server name that goes on and on").unwrap();
        assert!(long.len() <= MAX_NAME, "{long}");
        assert_eq!(connector_name(None, "!!!").unwrap(), "connector");
        assert_eq!(connector_of("custom.pets.list_pets"), Some("pets"));
        assert_eq!(connector_of("custom.pets"), None);
        assert_eq!(connector_of("slack.chat_post_message"), None);
    }

    #[test]
    fn transport_headers_cannot_be_configured() {
        let ok = headers_of(Some(&json!({"Authorization": "Bearer x", "X-Team": "a"}))).unwrap();
        assert_eq!(ok[0].0, "authorization");
        assert!(headers_of(Some(&json!({"Mcp-Session-Id": "1"}))).is_err());
        assert!(headers_of(Some(&json!({"bad header": "1"}))).is_err());
        assert!(headers_of(Some(&json!({"x": "line\nbreak"}))).is_err());
    }
}
