//! The built catalog artifact (`lambdas/catalog`, read by `catalog-core`) behind the
//! [`Catalog`] port.
//!
//! Every question goes to `catalog_core`, so REST and MCP answer from the same code the catalog
//! builder and its evaluation test: apps by slug or any former per-document id (the answer names
//! the canonical app), tools by name or by a name an earlier catalog issued, tool search, app
//! search ranked by relevance, and per-tool servers and credential schemes for the executor.
//! App listings without a search run in the artifact's order (sorted by slug), so cursors stay
//! valid across cold starts of the same catalog version.

use catalog_core as core;
use catalog_core::AuthScheme;

use super::{
    AppAuth, AppDetail, AppDocument, AppFilter, AppSummary, Catalog, CatalogError, FindResult, Hit,
    Operation, Page, ToolAuth, ToolDef, ToolOutline, decode_cursor, encode_cursor, page_apps,
};

/// A server URL with the variables that have defaults filled in; the others stay `{name}`
/// templates for the connection's parameters.
fn server_url(s: &core::Server) -> String {
    s.resolve(&|_| None)
}

fn summary(c: &core::Catalog, app: &core::App) -> AppSummary {
    AppSummary {
        id: app.slug.clone(),
        name: app.title.clone(),
        description: app.description.clone(),
        categories: app.categories.clone(),
        tool_count: c.tools_of(app).len(),
    }
}

/// The app whose title or one of whose aliases is `name` (case, spacing and punctuation
/// ignored); of several, the one people ask for most (highest prior).
fn by_name<'a>(c: &'a core::Catalog, name: &str) -> Option<&'a core::App> {
    let wanted = core::model::normalise(name);
    if wanted.is_empty() {
        return None;
    }
    c.apps
        .iter()
        .filter(|a| {
            core::model::normalise(&a.title) == wanted
                || a.aliases
                    .iter()
                    .any(|x| core::model::normalise(x) == wanted)
        })
        .max_by(|a, b| a.prior.total_cmp(&b.prior))
}

impl Catalog for core::Catalog {
    fn apps(
        &self,
        filter: AppFilter<'_>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AppSummary>, CatalogError> {
        let Some(query) = filter.search.filter(|q| !q.trim().is_empty()) else {
            return page_apps(
                self.apps.iter(),
                filter,
                cursor,
                limit,
                |a| &a.categories,
                |_| String::new(),
                |a| summary(self, a),
            );
        };
        // A search ranks by relevance (exact name, then prefix, then words and typos, with the
        // app's prior); the ranking is deterministic, so an offset cursor pages through it.
        let start = cursor.map(decode_cursor).transpose()?.unwrap_or(0);
        let ranked: Vec<&core::App> = self
            .search_apps(query, self.apps.len())
            .into_iter()
            .filter_map(|h| self.apps.get(h.app as usize))
            .filter(|a| {
                filter
                    .category
                    .is_none_or(|c| a.categories.iter().any(|x| x == c))
            })
            .collect();
        if start > ranked.len() {
            return Err(CatalogError::InvalidCursor);
        }
        let end = (start + limit).min(ranked.len());
        Ok(Page {
            items: ranked[start..end]
                .iter()
                .map(|a| summary(self, a))
                .collect(),
            next_cursor: (end < ranked.len()).then(|| encode_cursor(end)),
        })
    }

    fn app(&self, id: &str) -> Option<AppSummary> {
        core::Catalog::app(self, id).map(|a| summary(self, a))
    }

    fn app_detail(&self, id: &str) -> Option<AppDetail> {
        let app = core::Catalog::app(self, id).or_else(|| by_name(self, id))?;
        let docs: Vec<&core::Doc> = app
            .docs
            .iter()
            .filter_map(|d| self.docs.get(*d as usize))
            .collect();
        let mut auth: Vec<String> = Vec::new();
        for s in docs.iter().flat_map(|d| d.auth.iter()) {
            let l = s.kind.label().to_owned();
            if !auth.contains(&l) {
                auth.push(l);
            }
        }
        Some(AppDetail {
            id: app.slug.clone(),
            name: app.title.clone(),
            description: app.description.clone(),
            aliases: app.aliases.clone(),
            former_ids: app.former_ids.clone(),
            categories: app.categories.clone(),
            logo_url: app.logo_url.clone(),
            documents: docs
                .iter()
                .map(|d| AppDocument {
                    id: d.id.clone(),
                    title: d.title.clone(),
                    version: d.version.clone(),
                    origin: d.origin.clone(),
                    license: d.license.clone(),
                })
                .collect(),
            tool_count: self.tools_of(app).len(),
            auth,
        })
    }

    fn canonical_app(&self, id: &str) -> Option<String> {
        core::Catalog::app(self, id).map(|a| a.slug.clone())
    }

    fn canonical_tool(&self, name: &str) -> Option<String> {
        // The name index only: no input schema is decompressed.
        core::Catalog::tool(self, name).map(|t| t.name.clone())
    }

    fn tool(&self, name: &str) -> Option<ToolDef> {
        let tool = core::Catalog::tool(self, name)?;
        let app = self.app_of(tool);
        // The schema and the example the builder made from it come from one chunk.
        let (input_schema, example_input) = match self.input(&tool.name) {
            Ok(input) => (input.schema, Some(input.example).filter(|e| e.is_object())),
            Err(e) => {
                // A damaged schema block must not hide the tool; say so in the log.
                tracing::error!(tool = name, error = %e, "tool input schema unreadable");
                (serde_json::json!({"type": "object"}), None)
            }
        };
        let auth = self
            .security_of(tool)
            .into_iter()
            .map(|alt| {
                ToolAuth::of(
                    alt.into_iter()
                        .map(|(s, scopes)| (s.kind.label(), s.name.as_str(), scopes)),
                )
            })
            .collect();
        Some(ToolDef {
            name: tool.name.clone(),
            app: app.slug.clone(),
            description: tool.description.clone(),
            input_schema,
            method: Some(tool.method.as_str().to_owned()),
            path: Some(tool.path.clone()),
            server_url: self.server_of(tool).map(server_url),
            auth,
            example_input,
        })
    }

    fn operation(&self, name: &str) -> Option<Operation> {
        let t = core::Catalog::tool(self, name)?;
        let security = self
            .security_of(t)
            .into_iter()
            .map(|alt| alt.into_iter().map(|(s, _)| s.clone()).collect())
            .collect();
        Some(Operation {
            tool: t.name.clone(),
            app: self.app_of(t).slug.clone(),
            method: t.method,
            path: t.path.clone(),
            security,
            server_url: self.server_of(t).map(server_url),
        })
    }

    fn app_auth(&self, id: &str) -> Option<AppAuth> {
        let app = core::Catalog::app(self, id)?;
        // The product's first document's production server; a tool's own server (which may
        // differ per document or operation) comes with its `Operation`.
        let docs: Vec<&core::Doc> = app
            .docs
            .iter()
            .filter_map(|d| self.docs.get(*d as usize))
            .collect();
        let base_url = docs
            .iter()
            .find_map(|d| d.servers.first())
            .map(server_url)
            .unwrap_or_default();
        let mut schemes: Vec<AuthScheme> = Vec::new();
        for s in docs.iter().flat_map(|d| d.auth.iter()).cloned() {
            if !schemes.contains(&s) {
                schemes.push(s);
            }
        }
        Some(AppAuth {
            app: app.slug.clone(),
            base_url,
            schemes,
        })
    }

    fn find_tools(&self, query: &str, app: Option<&str>, limit: usize) -> FindResult {
        // A former per-document id narrows to the product it now belongs to.
        let app = app.map(|a| core::Catalog::app(self, a).map_or(a, |x| x.slug.as_str()));
        let found = self.find(query, app, limit);
        FindResult {
            hits: found.hits.into_iter().map(Hit::from).collect(),
            hint: found.hint,
        }
    }

    fn tool_outlines(&self, app: &str) -> Vec<ToolOutline> {
        match core::Catalog::app(self, app) {
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
