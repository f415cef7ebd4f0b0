//! The built catalog artifact (`lambdas/catalog`) behind the router's [`Catalog`] seam.
//!
//! Apps list in the artifact's order (sorted by id), so cursors stay valid across cold starts of
//! the same catalog version; search goes to the BM25F index.

use crate::catalog;
use crate::catalog_api::{
    AppFilter, AppSummary, Catalog, CatalogError, FindResult, Hit, Page, ToolDef,
};
use crate::static_catalog::{decode_cursor, encode_cursor, words};

fn summary(c: &catalog::Catalog, app: &catalog::App) -> AppSummary {
    AppSummary {
        id: app.id.clone(),
        name: app.title.clone(),
        description: app.description.clone(),
        categories: app.categories.clone(),
        tool_count: c.tools_of(app).len(),
    }
}

impl Catalog for catalog::Catalog {
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError> {
        let start = cursor.map(decode_cursor).transpose()?.unwrap_or(0);
        let terms = filter.search.map(words).unwrap_or_default();
        let matching: Vec<&catalog::App> = self
            .apps
            .iter()
            .filter(|a| {
                filter
                    .category
                    .is_none_or(|c| a.categories.iter().any(|x| x == c))
            })
            .filter(|a| {
                terms.is_empty() || {
                    let text = words(&format!(
                        "{} {} {} {}",
                        a.id, a.title, a.provider, a.description
                    ));
                    terms.iter().all(|t| text.contains(t))
                }
            })
            .collect();
        if start > matching.len() {
            return Err(CatalogError::InvalidCursor);
        }
        let end = (start + limit).min(matching.len());
        Ok(Page {
            items: matching[start..end]
                .iter()
                .map(|a| summary(self, a))
                .collect(),
            next_cursor: (end < matching.len()).then(|| encode_cursor(end)),
        })
    }

    fn app(&self, id: &str) -> Option<AppSummary> {
        catalog::Catalog::app(self, id).map(|a| summary(self, a))
    }

    fn tool(&self, name: &str) -> Option<ToolDef> {
        let tool = catalog::Catalog::tool(self, name)?;
        let app = self.apps.get(tool.app as usize)?;
        let input_schema = match self.input_schema(name) {
            Ok(schema) => schema,
            Err(e) => {
                // A damaged schema block must not hide the tool; say so in the log.
                tracing::error!(tool = name, error = %e, "tool input schema unreadable");
                serde_json::json!({"type": "object"})
            }
        };
        Some(ToolDef {
            name: tool.name.clone(),
            app: app.id.clone(),
            description: tool.description.clone(),
            input_schema,
        })
    }

    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult {
        let found = self.find(query, app, limit);
        FindResult {
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
            hint: found.hint,
        }
    }
}
