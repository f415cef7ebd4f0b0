//! Custom connectors: an account's own MCP servers and REST APIs (from an OpenAPI document).
//!
//! Their tools are named `custom.<connector>.<tool>` and join the catalog's in `find`, `get` and
//! `run` for the owning account only; another account gets `tool_not_found`. A connector keeps
//! its derived tools (names, descriptions, input schemas, and for REST the method and path) in
//! one item, so a refresh replaces them atomically and a search needs one read per account.
//! Auth headers are sealed at rest with the connector id as context.
//!
//! Here: the types, the rules (names, headers), the search over an account's tools, the tools of
//! an OpenAPI document ([`openapi`]) and the [`ConnectorStore`] port. Creating, refreshing and
//! running connectors talks to their servers, so it lives in `platform-exec`.

pub mod openapi;
mod search;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::apps::{Page, ToolDef, decode_cursor, encode_cursor};
use crate::clock::rfc3339;
use crate::error::StoreError;
use crate::validation::FieldError;
use catalog_core::Method;

pub use search::{Found, app_exists, catalog_of, find, merge};

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

    pub fn parse(s: &str) -> Option<Kind> {
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
    #[error("the cursor is not one this API issued")]
    InvalidCursor,
}

/// The stored connectors of every account.
#[async_trait]
pub trait ConnectorStore: Send + Sync {
    /// Stores a new connector. `NameTaken` or `LimitReached` when those conditions fail.
    async fn put_connector(&self, account: &str, c: &Connector) -> Result<(), CustomError>;

    /// Replaces the tools, base URL and refresh time of an existing connector.
    async fn replace_connector_tools(
        &self,
        account: &str,
        c: &Connector,
    ) -> Result<(), CustomError>;

    async fn get_connector(&self, account: &str, id: &str)
    -> Result<Option<Connector>, StoreError>;

    async fn connector_by_name(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<Connector>, StoreError>;

    /// Every connector of the account, with its tools.
    async fn list_connectors(&self, account: &str) -> Result<Vec<Connector>, StoreError>;

    /// Deletes the connector; `NotFound` when it went meanwhile.
    async fn delete_connector(&self, account: &str, c: &Connector) -> Result<(), StoreError>;
}

/// A new connector id: `cc_` + 20 hex digits.
pub fn new_id() -> String {
    crate::ids::random_id("cc_", 10)
}

/// The connector name from the request, or from the MCP server / API title: a slug of at most
/// [`MAX_NAME`] characters.
pub fn connector_name(asked: Option<&str>, fallback: &str) -> Result<String, CustomError> {
    match asked {
        Some(n) => {
            let slug = catalog_core::naming::slug(n);
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
            let mut slug = catalog_core::naming::slug(fallback);
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
pub fn headers_of(v: Option<&Value>) -> Result<Vec<(String, String)>, CustomError> {
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

/// The context a connector's headers are sealed under.
pub fn seal_context(id: &str) -> String {
    format!("cc#{id}")
}

/// `GET /custom-connectors`: the account's connectors, oldest first, `limit` from `cursor`.
pub async fn list(
    store: &dyn ConnectorStore,
    account: &str,
    cursor: Option<&str>,
    limit: Option<usize>,
) -> Result<Page<Connector>, CustomError> {
    let start = cursor
        .map(decode_cursor)
        .transpose()
        .map_err(|_| CustomError::InvalidCursor)?
        .unwrap_or(0);
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    let mut all = store.list_connectors(account).await?;
    all.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
    let end = (start + limit).min(all.len());
    let next_cursor = (end < all.len()).then(|| encode_cursor(end));
    Ok(Page {
        items: all.get(start..end).unwrap_or_default().to_vec(),
        next_cursor,
    })
}

/// `GET /custom-connectors/{id}`.
pub async fn get(
    store: &dyn ConnectorStore,
    account: &str,
    id: &str,
) -> Result<Connector, CustomError> {
    store
        .get_connector(account, id)
        .await?
        .ok_or_else(|| CustomError::NotFound(id.to_owned()))
}

/// `DELETE /custom-connectors/{id}`.
pub async fn delete(
    store: &dyn ConnectorStore,
    account: &str,
    id: &str,
) -> Result<(), CustomError> {
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
pub fn connector_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(TOOL_PREFIX)?;
    let (c, t) = rest.split_once('.')?;
    (!c.is_empty() && !t.is_empty()).then_some(c)
}

pub fn is_custom(name: &str) -> bool {
    name.starts_with(TOOL_PREFIX)
}

/// The connector and tool a custom tool name refers to, for the account.
pub async fn resolve(
    store: &dyn ConnectorStore,
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
pub async fn tool_def(
    store: &dyn ConnectorStore,
    account: &str,
    name: &str,
) -> Result<Option<ToolDef>, StoreError> {
    Ok(resolve(store, account, name).await?.map(|(c, t)| {
        // A REST tool says where it goes; an MCP tool is a call to the connector's server.
        // The connector's own headers authenticate it: their names and values stay private.
        let http = t.http.as_ref();
        ToolDef {
            example_input: crate::apps::example_input(&t.input_schema),
            method: http.map(|h| h.method.as_str().to_owned()),
            path: http.map(|h| h.path.clone()),
            server_url: http.and(c.base_url.clone()),
            auth: Vec::new(),
            app: c.app(),
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
        }
    }))
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

/// What a runner reports about a call that reached the peer.
pub struct Called {
    pub http_status: Option<u16>,
    pub data: Value,
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
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
    use crate::apps::Hit;

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
