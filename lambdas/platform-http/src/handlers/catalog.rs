//! The catalog and the account's view of it: health, the OpenAPI document, `GET /catalog`
//! (public), `GET /apps`, `POST /tools/find`, `GET /tools/{name}`.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue};
use http::{Request, StatusCode};
use platform_domain::apps::{AppFilter, CatalogError};
use serde_json::{Value, json};

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{self, Query};
use crate::problem::Problem;
use crate::reply::Reply;

const DEFAULT_TOOLS: usize = 10;

/// `connection_status` of an app or tool.
pub(crate) fn connection_status(connected: bool) -> &'static str {
    if connected {
        "connected"
    } else {
        "not_connected"
    }
}

pub(super) fn health() -> Reply {
    Reply::json(&json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

impl Ctx<'_> {
    pub(super) fn openapi_document(&self) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: HeaderValue::from_static("application/json"),
            extra: HeaderMap::new(),
            body: self.openapi.bytes.clone(),
        }
    }

    /// `GET /catalog`: apps by category, without an account.
    pub(super) fn catalog_page(&self, req: &Request<Bytes>) -> Result<Reply, Problem> {
        let q = Query::of(req, &["category", "cursor", "limit"])?;
        let limit = q.page_limit()?;
        let filter = AppFilter {
            category: q.get("category"),
            search: None,
        };
        let page = self
            .services
            .toolbox
            .catalog
            .apps(filter, q.get("cursor"), limit)
            .map_err(|e| match e {
                CatalogError::InvalidCursor => errors::invalid_cursor(),
            })?;
        Ok(Reply::json(
            &json!({"apps": page.items, "next_cursor": page.next_cursor}),
        ))
    }

    /// `GET /apps`: apps by search, each with the account's connection status.
    pub(super) async fn apps(&self, req: &Request<Bytes>, account: &str) -> Result<Reply, Problem> {
        let q = Query::of(req, &["search", "cursor", "limit"])?;
        let limit = q.page_limit()?;
        let filter = AppFilter {
            category: None,
            search: q.get("search").filter(|s| !s.trim().is_empty()),
        };
        let page = self
            .services
            .toolbox
            .search_apps(account, filter, q.get("cursor"), limit)
            .await?;
        let apps: Vec<Value> = page.items.iter().map(|(a, c)| app_json(a, *c)).collect();
        Ok(Reply::json(
            &json!({"apps": apps, "next_cursor": page.next_cursor}),
        ))
    }

    /// `GET /apps/{app}`: one app by slug, alias, title or former per-document id; the answer
    /// names the canonical app.
    pub(super) async fn app(
        &self,
        req: &Request<Bytes>,
        app: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        // An alias or title may hold spaces (`google%20sheets`); a segment that does not
        // decode to UTF-8 simply names no app.
        let app = percent_encoding::percent_decode_str(app).decode_utf8_lossy();
        let (detail, connected) = self.services.toolbox.get_app(account, &app).await?;
        let mut v = json!(detail);
        v["connection_status"] = connection_status(connected).into();
        Ok(Reply::json(&v))
    }

    /// `POST /tools/find`.
    pub(super) async fn find_tools(
        &self,
        req: &Request<Bytes>,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let body = extract::json(req, &self.openapi.find_tools_request)?;
        // The schema guarantees the shapes below.
        let query = body["query"].as_str().unwrap_or_default();
        let app = body.get("app").and_then(Value::as_str);
        let limit = body
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_TOOLS, |n| n as usize);
        let found = self
            .services
            .toolbox
            .find_tools(account, query, app, limit)
            .await?;
        Ok(Reply::json(&found_json(&found)))
    }

    /// `GET /tools/{name}`.
    pub(super) async fn tool(&self, name: &str, account: &str) -> Result<Reply, Problem> {
        let (tool, connected) = self.services.toolbox.get_tool(account, name).await?;
        Ok(Reply::json(&tool_json(&tool, connected)))
    }
}

/// An app as `GET /apps` and MCP `search_apps` show it.
pub(crate) fn app_json(app: &platform_domain::apps::AppSummary, connected: bool) -> Value {
    let mut v = json!(app);
    v["connection_status"] = connection_status(connected).into();
    v
}

/// A tool as `GET /tools/{name}` and MCP `get_tool` show it.
pub(crate) fn tool_json(tool: &platform_domain::apps::ToolDef, connected: bool) -> Value {
    let mut v = json!(tool);
    v["connection_status"] = connection_status(connected).into();
    v
}

/// `{"tools": [...], "hint"}` as `POST /tools/find` and MCP `find_tools` answer.
pub(crate) fn found_json(found: &platform_domain::tools::FoundTools) -> Value {
    let tools: Vec<Value> = found
        .tools
        .iter()
        .map(|h| {
            json!({
                "name": h.name,
                "app": h.app,
                "description": h.description,
                "score": h.score,
                "matched_terms": h.matched_terms,
                "connection_status": connection_status(h.connected),
            })
        })
        .collect();
    json!({"tools": tools, "hint": found.hint})
}
