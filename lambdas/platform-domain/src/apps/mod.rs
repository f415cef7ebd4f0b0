//! Apps and their tools: the [`Catalog`] port every use case asks about apps through.
//!
//! The built catalog artifact (from `lambdas/catalog`, see [`artifact`]) implements it for
//! production; [`StaticCatalog`] answers from a small JSON file for development and tests.
//! Everything here is read-only and synchronous: the catalog is loaded once per process and
//! searched in memory.

mod artifact;
mod static_catalog;

pub use static_catalog::{LoadError, StaticCatalog};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use catalog_core::{AuthScheme, Method};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One app in catalog listings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppSummary {
    /// Stable id, e.g. `slack`, `github`.
    pub id: String,
    pub name: String,
    pub description: String,
    pub categories: Vec<String>,
    pub tool_count: usize,
}

/// One app in full, as `GET /apps/{app}` shows it: the canonical app, whichever of its names
/// (slug, alias, title, former per-document id) it was asked by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppDetail {
    /// The canonical slug.
    pub id: String,
    pub name: String,
    pub description: String,
    /// Other names people use for it ("gh", "ms teams").
    pub aliases: Vec<String>,
    /// Ids earlier catalogs gave its documents; they still name this app everywhere.
    pub former_ids: Vec<String>,
    pub categories: Vec<String>,
    pub logo_url: Option<String>,
    /// The OpenAPI documents its tools come from.
    pub documents: Vec<AppDocument>,
    pub tool_count: usize,
    /// How it connects, deduplicated: `oauth2`, `api_key`, `bearer`, `basic`, `openid_connect`.
    pub auth: Vec<String>,
}

/// A source document of an app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppDocument {
    pub id: String,
    pub title: String,
    pub version: String,
    /// Where the document came from (package and version, or the vendor's repository).
    pub origin: String,
    pub license: Option<String>,
}

/// The short name of a credential scheme's kind, as [`AppDetail::auth`] and tool detail list it
/// (the same words `catalog_core::AuthKind::label` uses).
pub fn auth_label(kind: &catalog_core::AuthKind) -> &'static str {
    kind.label()
}

/// One tool (an operation of an app), as `GET /tools/{name}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// Globally unique, app-prefixed snake_case name, e.g. `slack_send_message`.
    pub name: String,
    /// Id of the app the tool belongs to.
    pub app: String,
    pub description: String,
    /// JSON Schema of the tool's arguments.
    pub input_schema: Value,
    /// The HTTP method a run sends (`POST`); `None` when the catalog does not say (an MCP
    /// custom tool, a development catalog entry without one).
    #[serde(default)]
    pub method: Option<String>,
    /// Path template relative to `server_url`, e.g. `/repos/{owner}/{repo}/issues`.
    #[serde(default)]
    pub path: Option<String>,
    /// The server a run goes to, variables with defaults filled in; the others stay `{name}`
    /// templates the connection supplies (`https://{yourOktaDomain}`).
    #[serde(default)]
    pub server_url: Option<String>,
    /// The ways to authenticate a run, any one suffices; empty when the tool needs no
    /// credentials or the catalog does not say. Kinds and scopes only: never a secret.
    #[serde(default)]
    pub auth: Vec<ToolAuth>,
    /// One input that satisfies `input_schema` (its required fields only).
    #[serde(default)]
    pub example_input: Option<Value>,
}

/// One accepted way to authenticate a tool's runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAuth {
    /// `oauth2`, `api_key`, `basic`, `bearer` or `openid_connect`; schemes used together that
    /// differ in kind (rare) are joined with `+`; `none` when running without credentials is
    /// one of the accepted ways.
    pub kind: String,
    /// The scopes the tool needs (OAuth 2.0 / OpenID Connect); empty for other kinds.
    pub scopes: Vec<String>,
    /// Names of the schemes used together (the API document's `securitySchemes` keys).
    pub schemes: Vec<String>,
}

impl ToolAuth {
    /// One alternative from its schemes (label, name, scopes each).
    pub fn of<'a>(schemes: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>) -> Self {
        let mut kinds: Vec<&str> = Vec::new();
        let mut scopes: Vec<String> = Vec::new();
        let mut names = Vec::new();
        for (kind, name, s) in schemes {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
            for x in s {
                if !scopes.contains(x) {
                    scopes.push(x.clone());
                }
            }
            names.push(name.to_owned());
        }
        Self {
            kind: if kinds.is_empty() {
                "none".to_owned()
            } else {
                kinds.join("+")
            },
            scopes,
            schemes: names,
        }
    }
}

/// The example tool detail shows for `schema`: the catalog builder's own example function, kept
/// only when it is an object (a tool's input always is).
pub(crate) fn example_input(schema: &Value) -> Option<Value> {
    Some(catalog_core::example::example(schema)).filter(Value::is_object)
}

/// Which apps to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppFilter<'a> {
    /// Only apps in this category (exact category id).
    pub category: Option<&'a str>,
    /// Free-text search over app names, aliases and descriptions.
    pub search: Option<&'a str>,
}

/// A page of results; `next_cursor` is opaque to clients and `None` on the last page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Tool name (resolvable with [`Catalog::tool`]).
    pub tool: String,
    pub app: String,
    pub score: f64,
    /// Query terms that matched this tool.
    pub matched_terms: Vec<String>,
}

impl From<catalog_core::search::Hit> for Hit {
    fn from(h: catalog_core::search::Hit) -> Self {
        Hit {
            tool: h.tool,
            app: h.app,
            score: f64::from(h.score),
            matched_terms: h.matched_terms,
        }
    }
}

/// Result of a tool search; `hint` explains an empty or weak result to the caller (an LLM).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FindResult {
    pub hits: Vec<Hit>,
    pub hint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("the cursor is not one this catalog issued")]
    InvalidCursor,
}

/// What running a tool needs: the HTTP operation behind it and the app's credentials schemes.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub tool: String,
    pub app: String,
    pub method: Method,
    /// Path template relative to the app's base URL, e.g. `/v1/refunds/{refund}`.
    pub path: String,
    /// Alternatives (any one suffices), each the schemes used together. Empty: no credentials.
    pub security: Vec<Vec<AuthScheme>>,
    /// The server this tool's requests go to when it differs per document or operation (the
    /// built catalog names one per tool); `None`: the app's [`AppAuth::base_url`].
    pub server_url: Option<String>,
}

/// How an app is reached and authenticated.
#[derive(Debug, Clone, PartialEq)]
pub struct AppAuth {
    pub app: String,
    /// The API's server URL (`servers[0].url`); may hold `{name}` templates.
    pub base_url: String,
    pub schemes: Vec<AuthScheme>,
}

pub trait Catalog: Send + Sync {
    /// Apps matching `filter`, in a stable order, `limit` at most, starting after `cursor`.
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError>;

    /// The app by its slug or a former per-document id; the answer names the canonical app.
    fn app(&self, id: &str) -> Option<AppSummary>;

    /// The app in full by slug, former id, alias or title (`GET /apps/{app}`). Catalogs without
    /// aliases or documents answer from [`Catalog::app`] and [`Catalog::app_auth`].
    fn app_detail(&self, id: &str) -> Option<AppDetail> {
        let a = self.app(id)?;
        let mut auth: Vec<String> = Vec::new();
        for s in self.app_auth(&a.id).map(|x| x.schemes).unwrap_or_default() {
            let l = auth_label(&s.kind).to_owned();
            if !auth.contains(&l) {
                auth.push(l);
            }
        }
        Some(AppDetail {
            id: a.id,
            name: a.name,
            description: a.description,
            aliases: Vec::new(),
            former_ids: Vec::new(),
            categories: a.categories,
            logo_url: None,
            documents: Vec::new(),
            tool_count: a.tool_count,
            auth,
        })
    }

    /// The canonical id of an app named by slug or former id (records written before apps were
    /// grouped into products name their per-document id); `None` for an unknown app.
    fn canonical_app(&self, id: &str) -> Option<String> {
        self.app(id).map(|a| a.id)
    }

    /// The current name of a tool named by its name or one an earlier catalog issued.
    fn canonical_tool(&self, name: &str) -> Option<String> {
        self.tool(name).map(|t| t.name)
    }

    fn tool(&self, name: &str) -> Option<ToolDef>;

    /// Tools for a task in plain words, best first, at most `limit`, optionally within one app.
    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult;

    /// The HTTP operation behind a tool; `None` when the catalog cannot run it.
    fn operation(&self, _tool: &str) -> Option<Operation> {
        None
    }

    /// The app's server URL and credential schemes; `None` for an unknown app.
    fn app_auth(&self, _app: &str) -> Option<AppAuth> {
        None
    }

    /// Every tool of an app with its HTTP method and path where the catalog knows them (triggers
    /// derive their poll events from these). Empty for an unknown app.
    fn tool_outlines(&self, _app: &str) -> Vec<ToolOutline> {
        Vec::new()
    }
}

/// A tool as the trigger deriver sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutline {
    pub name: String,
    pub description: String,
    /// `GET`, `POST`, …; `None` when the catalog does not say.
    pub method: Option<&'static str>,
    /// Path template, e.g. `/v1/customers/{id}`; `None` when the catalog does not say.
    pub path: Option<String>,
}

/// `id` as the catalog names its app now, or `id` itself when the catalog does not know it (an
/// app since removed keeps its stored name).
pub fn canonical_or_same(catalog: &dyn Catalog, id: &str) -> String {
    catalog.canonical_app(id).unwrap_or_else(|| id.to_owned())
}

pub fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect()
}

pub fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("o:{offset}"))
}

pub fn decode_cursor(cursor: &str) -> Result<usize, CatalogError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CatalogError::InvalidCursor)?;
    std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.strip_prefix("o:"))
        .and_then(|n| n.parse().ok())
        .ok_or(CatalogError::InvalidCursor)
}

/// One page of the apps that pass `filter`, in the order given. Every catalog pages through this,
/// so a cursor means the same whichever catalog issued it. `categories` and `text` say how an app
/// is filtered (its categories; the words it is searched by); `summary` how it is listed.
pub(crate) fn page_apps<'a, A: 'a>(
    apps: impl Iterator<Item = &'a A>,
    filter: AppFilter<'_>,
    cursor: Option<&str>,
    limit: usize,
    categories: impl Fn(&A) -> &[String],
    text: impl Fn(&A) -> String,
    summary: impl Fn(&A) -> AppSummary,
) -> Result<Page<AppSummary>, CatalogError> {
    let start = cursor.map(decode_cursor).transpose()?.unwrap_or(0);
    let terms = filter.search.map(words).unwrap_or_default();
    let matching: Vec<&A> = apps
        .filter(|a| {
            filter
                .category
                .is_none_or(|c| categories(a).iter().any(|x| x == c))
        })
        .filter(|a| {
            terms.is_empty() || {
                let words = words(&text(a));
                terms.iter().all(|t| words.contains(t))
            }
        })
        .collect();
    if start > matching.len() {
        return Err(CatalogError::InvalidCursor);
    }
    let end = (start + limit).min(matching.len());
    Ok(Page {
        items: matching[start..end].iter().map(|a| summary(a)).collect(),
        next_cursor: (end < matching.len()).then(|| encode_cursor(end)),
    })
}

/// The catalog in the file at `path`: the built artifact (`*.zst`, from `lambdas/catalog`) is the
/// product catalog, a JSON file the small development/test catalog; without a path the catalog is
/// empty.
pub fn load(path: Option<&std::path::Path>) -> Result<std::sync::Arc<dyn Catalog>, String> {
    let Some(path) = path else {
        return Ok(std::sync::Arc::new(StaticCatalog::empty()));
    };
    if path.extension().is_some_and(|e| e == "zst") {
        catalog_core::Catalog::load(path)
            .map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn Catalog>)
            .map_err(|e| e.to_string())
    } else {
        StaticCatalog::from_path(path)
            .map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn Catalog>)
            .map_err(|e| e.to_string())
    }
}
