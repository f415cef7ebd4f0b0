//! An in-memory catalog read from a small JSON file, for development (`CATALOG_PATH`) and tests.
//!
//! It is not the product catalog: that is the artifact built by `lambdas/catalog`, with its own
//! search. The search here is a plain count of matched query words, enough to exercise the router.
//!
//! File shape: `{"apps": [{"id", "name", "description", "categories": [..],
//! "tools": [{"name", "description", "input_schema"}]}]}`.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog_api::{
    AppFilter, AppSummary, Catalog, CatalogError, FindResult, Hit, Page, ToolDef,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileApp {
    id: String,
    name: String,
    description: String,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    tools: Vec<FileTool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTool {
    name: String,
    description: String,
    #[serde(default = "empty_object_schema")]
    input_schema: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    apps: Vec<FileApp>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the catalog file: {0}")]
    Io(#[from] std::io::Error),
    #[error("the catalog file is not valid: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Debug, Default)]
pub struct StaticCatalog {
    /// Sorted by id: the listing order and the cursor's meaning.
    apps: Vec<AppSummary>,
    tools: BTreeMap<String, ToolDef>,
}

impl StaticCatalog {
    /// A catalog with no apps.
    pub fn empty() -> Self {
        Self::default()
    }

    pub fn from_path(path: &Path) -> Result<Self, LoadError> {
        Self::from_json(&std::fs::read(path)?)
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, LoadError> {
        let file: File = serde_json::from_slice(bytes)?;
        let mut apps = Vec::new();
        let mut tools = BTreeMap::new();
        for a in file.apps {
            apps.push(AppSummary {
                id: a.id.clone(),
                name: a.name,
                description: a.description,
                categories: a.categories,
                tool_count: a.tools.len(),
            });
            for t in a.tools {
                tools.insert(
                    t.name.clone(),
                    ToolDef {
                        name: t.name,
                        app: a.id.clone(),
                        description: t.description,
                        input_schema: t.input_schema,
                    },
                );
            }
        }
        apps.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Self { apps, tools })
    }
}

pub(crate) fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect()
}

pub(crate) fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("o:{offset}"))
}

pub(crate) fn decode_cursor(cursor: &str) -> Result<usize, CatalogError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CatalogError::InvalidCursor)?;
    std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.strip_prefix("o:"))
        .and_then(|n| n.parse().ok())
        .ok_or(CatalogError::InvalidCursor)
}

impl Catalog for StaticCatalog {
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError> {
        let start = cursor.map(decode_cursor).transpose()?.unwrap_or(0);
        let terms = filter.search.map(words).unwrap_or_default();
        let matching: Vec<&AppSummary> = self
            .apps
            .iter()
            .filter(|a| {
                filter
                    .category
                    .is_none_or(|c| a.categories.iter().any(|x| x == c))
            })
            .filter(|a| {
                let text = words(&format!("{} {} {}", a.id, a.name, a.description));
                terms.iter().all(|t| text.contains(t))
            })
            .collect();
        if start > matching.len() {
            return Err(CatalogError::InvalidCursor);
        }
        let end = (start + limit).min(matching.len());
        Ok(Page {
            items: matching[start..end].iter().map(|a| (*a).clone()).collect(),
            next_cursor: (end < matching.len()).then(|| encode_cursor(end)),
        })
    }

    fn app(&self, id: &str) -> Option<AppSummary> {
        self.apps.iter().find(|a| a.id == id).cloned()
    }

    fn tool(&self, name: &str) -> Option<ToolDef> {
        self.tools.get(name).cloned()
    }

    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult {
        let terms = words(query);
        let mut hits: Vec<Hit> = self
            .tools
            .values()
            .filter(|t| app.is_none_or(|a| t.app == a))
            .filter_map(|t| {
                let text = words(&format!("{} {} {}", t.app, t.name, t.description));
                let matched: Vec<String> =
                    terms.iter().filter(|w| text.contains(w)).cloned().collect();
                (!matched.is_empty()).then(|| Hit {
                    tool: t.name.clone(),
                    app: t.app.clone(),
                    score: matched.len() as f64 / terms.len() as f64,
                    matched_terms: matched,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits.truncate(limit);
        let hint = hits
            .is_empty()
            .then(|| "No tool matched; describe the task with the app's name and a verb.".into());
        FindResult { hits, hint }
    }
}
