//! Finding apps and tools for an account: the one implementation behind REST (`GET /apps`,
//! `POST /tools/find`, `GET /tools/{name}`) and MCP (`search_apps`, `find_tools`, `get_tool`).
//!
//! It joins three sources: the catalog, the account's custom connectors (their tools are found,
//! merged and shown like the catalog's) and the account's connections (each app and tool says
//! whether the caller can run it now).

use std::collections::HashSet;
use std::sync::Arc;

use crate::apps::{AppDetail, AppFilter, AppSummary, Catalog, CatalogError, Page, ToolDef};
use crate::connections::ConnectionStore;
use crate::custom::{self, ConnectorStore};
use crate::error::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error("no app {0:?}")]
    AppNotFound(String),
    #[error("no tool {0:?}")]
    ToolNotFound(String),
    #[error("the cursor is not one this API issued")]
    InvalidCursor,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CatalogError> for ToolsError {
    fn from(e: CatalogError) -> Self {
        match e {
            CatalogError::InvalidCursor => ToolsError::InvalidCursor,
        }
    }
}

/// One tool found for a task.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolHit {
    pub name: String,
    pub app: String,
    pub description: String,
    pub score: f64,
    pub matched_terms: Vec<String>,
    /// The caller can run it now: its app is connected, or it is a custom tool (a custom
    /// connector carries its own credentials).
    pub connected: bool,
}

/// The tools found for a task, best first; `hint` explains an empty result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FoundTools {
    pub tools: Vec<ToolHit>,
    pub hint: Option<String>,
}

/// The catalog joined with an account's custom connectors and connections.
#[derive(Clone)]
pub struct Toolbox {
    pub catalog: Arc<dyn Catalog>,
    connectors: Arc<dyn ConnectorStore>,
    connections: Arc<dyn ConnectionStore>,
}

impl Toolbox {
    pub fn new(
        catalog: Arc<dyn Catalog>,
        connectors: Arc<dyn ConnectorStore>,
        connections: Arc<dyn ConnectionStore>,
    ) -> Self {
        Self {
            catalog,
            connectors,
            connections,
        }
    }

    /// Ids of the apps the account has an active connection to, as the catalog names them now
    /// (a connection stored under a former per-document id counts for its product app).
    pub async fn connected_apps(&self, account: &str) -> Result<HashSet<String>, StoreError> {
        let stored = self.connections.connected_apps(account).await?;
        Ok(stored
            .iter()
            .map(|a| crate::apps::canonical_or_same(self.catalog.as_ref(), a))
            .collect())
    }

    /// One app by slug, alias, title or former id, with whether the account has connected it.
    pub async fn get_app(&self, account: &str, app: &str) -> Result<(AppDetail, bool), ToolsError> {
        let Some(detail) = self.catalog.app_detail(app) else {
            return Err(ToolsError::AppNotFound(app.to_owned()));
        };
        let connected = self.connected_apps(account).await?.contains(&detail.id);
        Ok((detail, connected))
    }

    /// Catalog apps matching `filter`, each with whether the account has connected it.
    pub async fn search_apps(
        &self,
        account: &str,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<(AppSummary, bool)>, ToolsError> {
        let page = self.catalog.apps(filter, cursor, limit)?;
        let connected = self.connected_apps(account).await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|a| {
                    let c = connected.contains(&a.id);
                    (a, c)
                })
                .collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// Tools for a task in plain words, from the catalog and the account's custom connectors,
    /// best first. `app` narrows the search to one catalog app or one `custom.<connector>`.
    pub async fn find_tools(
        &self,
        account: &str,
        query: &str,
        app: Option<&str>,
        limit: usize,
    ) -> Result<FoundTools, ToolsError> {
        let custom_app = app.filter(|a| custom::is_custom(a));
        let known = match (app, custom_app) {
            (None, _) => true,
            (Some(_), Some(c)) => custom::app_exists(self.connectors.as_ref(), account, c).await?,
            (Some(a), None) => self.catalog.app(a).is_some(),
        };
        if let (Some(app), false) = (app, known) {
            return Err(ToolsError::AppNotFound(app.to_owned()));
        }
        let found = match custom_app {
            Some(_) => Default::default(),
            None => self.catalog.find_tools(query, app, limit),
        };
        let own = match (app, custom_app) {
            (Some(_), None) => custom::Found::default(),
            _ => custom::find(self.connectors.as_ref(), account, query, custom_app, limit).await?,
        };
        let hint = found.hint.or(own.hint);
        let hits = custom::merge(found.hits, own.hits, limit);
        let connected = self.connected_apps(account).await?;
        let tools: Vec<ToolHit> = hits
            .into_iter()
            .map(|h| {
                let custom_tool = own.descriptions.get(&h.tool);
                let description = match custom_tool {
                    Some(d) => d.clone(),
                    None => self
                        .catalog
                        .tool(&h.tool)
                        .map(|t| t.description)
                        .unwrap_or_default(),
                };
                ToolHit {
                    connected: custom_tool.is_some() || connected.contains(&h.app),
                    name: h.tool,
                    app: h.app,
                    description,
                    score: h.score,
                    matched_terms: h.matched_terms,
                }
            })
            .collect();
        let hint = if tools.is_empty() { hint } else { None };
        Ok(FoundTools { tools, hint })
    }

    /// One tool by name (a catalog tool, or one of the account's custom tools) with whether the
    /// caller can run it now.
    pub async fn get_tool(&self, account: &str, name: &str) -> Result<(ToolDef, bool), ToolsError> {
        if custom::is_custom(name) {
            return match custom::tool_def(self.connectors.as_ref(), account, name).await? {
                Some(t) => Ok((t, true)),
                None => Err(ToolsError::ToolNotFound(name.to_owned())),
            };
        }
        let Some(tool) = self.catalog.tool(name) else {
            return Err(ToolsError::ToolNotFound(name.to_owned()));
        };
        let connected = self.connected_apps(account).await?;
        let c = connected.contains(&tool.app);
        Ok((tool, c))
    }
}
