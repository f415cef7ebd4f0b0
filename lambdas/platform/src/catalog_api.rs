//! The seam between the router and the app catalog / tool search.
//!
//! The router needs only these four questions answered. The built catalog artifact (from
//! `lambdas/catalog`) implements [`Catalog`]; until it lands, [`crate::static_catalog`] answers
//! from a small JSON file for development and tests. Everything here is read-only and
//! synchronous: the catalog is loaded once per process and searched in memory.

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

pub trait Catalog: Send + Sync {
    /// Apps matching `filter`, in a stable order, `limit` at most, starting after `cursor`.
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError>;

    fn app(&self, id: &str) -> Option<AppSummary>;

    fn tool(&self, name: &str) -> Option<ToolDef>;

    /// Tools for a task in plain words, best first, at most `limit`, optionally within one app.
    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult;
}
