//! An in-memory catalog read from a small JSON file, for development (`CATALOG_PATH`) and tests.
//!
//! It is not the product catalog: that is the artifact built by `lambdas/catalog`, with its own
//! search. The search here is a plain count of matched query words, enough to exercise the router.
//!
//! File shape: `{"apps": [{"id", "name", "description", "categories": [..],
//! "tools": [{"name", "description", "input_schema"}]}]}`.
//!
//! To make tools runnable, an app may add `base_url` and `security_schemes` (OpenAPI
//! `components.securitySchemes`, verbatim) and `security` (OpenAPI security requirements, the
//! default of its tools); a tool adds `method`, `path` and optionally its own `security`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use catalog_core::openapi::security_schemes;
use catalog_core::{AuthScheme, Method};

use super::{
    AppAuth, AppFilter, AppSummary, Catalog, CatalogError, FindResult, Hit, Operation, Page,
    ToolAuth, ToolDef, ToolOutline, auth_label, page_apps, words,
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
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    security_schemes: serde_json::Map<String, Value>,
    #[serde(default)]
    security: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTool {
    name: String,
    description: String,
    #[serde(default = "empty_object_schema")]
    input_schema: Value,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    security: Option<Value>,
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
    auth: BTreeMap<String, AppAuth>,
    operations: BTreeMap<String, Operation>,
}

/// OpenAPI security requirements → alternatives of schemes (unknown names are dropped).
fn security_from_openapi(req: &Value, schemes: &[AuthScheme]) -> Vec<Vec<AuthScheme>> {
    req.as_array()
        .map(|alts| {
            alts.iter()
                .filter_map(Value::as_object)
                .map(|alt| {
                    alt.keys()
                        .filter_map(|k| schemes.iter().find(|s| &s.name == k).cloned())
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// OpenAPI security requirements → what tool detail shows: each alternative's kind, scopes and
/// scheme names (unknown names are dropped, as for runs).
fn auth_from_openapi(req: &Value, schemes: &[AuthScheme]) -> Vec<ToolAuth> {
    req.as_array()
        .map(|alts| {
            alts.iter()
                .filter_map(Value::as_object)
                .map(|alt| {
                    let used: Vec<(&AuthScheme, Vec<String>)> = alt
                        .iter()
                        .filter_map(|(k, scopes)| {
                            let s = schemes.iter().find(|s| &s.name == k)?;
                            let scopes = scopes
                                .as_array()
                                .map(|a| {
                                    a.iter()
                                        .filter_map(Value::as_str)
                                        .map(str::to_owned)
                                        .collect()
                                })
                                .unwrap_or_default();
                            Some((s, scopes))
                        })
                        .collect();
                    ToolAuth::of(
                        used.iter()
                            .map(|(s, sc)| (auth_label(&s.kind), s.name.as_str(), sc.as_slice())),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
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
        let mut auth = BTreeMap::new();
        let mut operations = BTreeMap::new();
        for a in file.apps {
            let schemes = security_schemes(&a.security_schemes, a.base_url.as_deref());
            if let Some(base_url) = &a.base_url {
                auth.insert(
                    a.id.clone(),
                    AppAuth {
                        app: a.id.clone(),
                        base_url: base_url.clone(),
                        schemes: schemes.clone(),
                    },
                );
            }
            for t in &a.tools {
                let (Some(method), Some(path)) = (&t.method, &t.path) else {
                    continue;
                };
                let Some(method) = Method::parse(&method.to_ascii_lowercase()) else {
                    continue;
                };
                let security = t
                    .security
                    .as_ref()
                    .or(a.security.as_ref())
                    .map(|r| security_from_openapi(r, &schemes))
                    .unwrap_or_default();
                operations.insert(
                    t.name.clone(),
                    Operation {
                        tool: t.name.clone(),
                        app: a.id.clone(),
                        method,
                        path: path.clone(),
                        security,
                        server_url: None,
                    },
                );
            }
            apps.push(AppSummary {
                id: a.id.clone(),
                name: a.name,
                description: a.description,
                categories: a.categories,
                tool_count: a.tools.len(),
            });
            for t in a.tools {
                let op = operations.get(&t.name);
                let auth = match op {
                    Some(_) => t
                        .security
                        .as_ref()
                        .or(a.security.as_ref())
                        .map(|r| auth_from_openapi(r, &schemes))
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                tools.insert(
                    t.name.clone(),
                    ToolDef {
                        example_input: crate::apps::example_input(&t.input_schema),
                        name: t.name,
                        app: a.id.clone(),
                        description: t.description,
                        input_schema: t.input_schema,
                        method: op.map(|o| o.method.as_str().to_owned()),
                        path: op.map(|o| o.path.clone()),
                        server_url: op.and(a.base_url.clone()),
                        auth,
                    },
                );
            }
        }
        apps.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Self {
            apps,
            tools,
            auth,
            operations,
        })
    }
}

impl Catalog for StaticCatalog {
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError> {
        page_apps(
            self.apps.iter(),
            filter,
            cursor,
            limit,
            |a| &a.categories,
            |a| format!("{} {} {}", a.id, a.name, a.description),
            AppSummary::clone,
        )
    }

    fn app(&self, id: &str) -> Option<AppSummary> {
        self.apps.iter().find(|a| a.id == id).cloned()
    }

    fn tool(&self, name: &str) -> Option<ToolDef> {
        self.tools.get(name).cloned()
    }

    fn operation(&self, tool: &str) -> Option<Operation> {
        self.operations.get(tool).cloned()
    }

    fn app_auth(&self, app: &str) -> Option<AppAuth> {
        self.auth.get(app).cloned()
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

    fn tool_outlines(&self, app: &str) -> Vec<ToolOutline> {
        self.tools
            .values()
            .filter(|t| t.app == app)
            .map(|t| ToolOutline {
                name: t.name.clone(),
                description: t.description.clone(),
                method: None,
                path: None,
            })
            .collect()
    }
}
