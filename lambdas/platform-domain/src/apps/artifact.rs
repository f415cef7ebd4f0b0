//! The built catalog artifact (`lambdas/catalog`) behind the [`Catalog`] port.
//!
//! Apps list in the artifact's order (sorted by id), so cursors stay valid across cold starts of
//! the same catalog version; search goes to the BM25F index.

use platform_search::catalog;

use super::{
    AppAuth, AppFilter, AppSummary, Catalog, CatalogError, FindResult, Hit, Operation, Page,
    ToolDef, ToolOutline, page_apps,
};

impl From<platform_search::search::Hit> for Hit {
    fn from(h: platform_search::search::Hit) -> Self {
        Hit {
            tool: h.tool,
            app: h.app,
            score: f64::from(h.score),
            matched_terms: h.matched_terms,
        }
    }
}

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
        page_apps(
            self.apps.iter(),
            filter,
            cursor,
            limit,
            |a| &a.categories,
            |a| format!("{} {} {} {}", a.id, a.title, a.provider, a.description),
            |a| summary(self, a),
        )
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

    fn operation(&self, tool: &str) -> Option<Operation> {
        let t = catalog::Catalog::tool(self, tool)?;
        let app = self.apps.get(t.app as usize)?;
        let security = t
            .security
            .iter()
            .map(|alt| {
                alt.iter()
                    .filter_map(|u| app.auth.get(usize::from(u.scheme)).cloned())
                    .collect()
            })
            .collect();
        Some(Operation {
            tool: t.name.clone(),
            app: app.id.clone(),
            method: t.method,
            path: t.path.clone(),
            security,
        })
    }

    fn app_auth(&self, id: &str) -> Option<AppAuth> {
        let app = catalog::Catalog::app(self, id)?;
        Some(AppAuth {
            app: app.id.clone(),
            base_url: app.base_url.clone(),
            schemes: app.auth.clone(),
        })
    }

    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult {
        let found = self.find(query, app, limit);
        FindResult {
            hits: found.hits.into_iter().map(Hit::from).collect(),
            hint: found.hint,
        }
    }

    fn tool_outlines(&self, app: &str) -> Vec<ToolOutline> {
        match catalog::Catalog::app(self, app) {
            Some(a) => self
                .tools_of(a)
                .iter()
                .map(|t| ToolOutline {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    method: Some(t.method.as_str()),
                    path: Some(t.path.clone()),
                })
                .collect(),
            None => Vec::new(),
        }
    }
}
