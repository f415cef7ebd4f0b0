//! Search over an account's custom tools with the catalog's own ranking (`catalog_core`'s
//! BM25F, lexical only: custom tools have no embedding vectors), over a catalog built for just
//! these tools, and the merge of its hits with the catalog's.

use std::collections::HashMap;

use catalog_core::search::{AppText, DocText, Index};
use catalog_core::text::{self, Verb};
use catalog_core::{App, Catalog, Doc, Method, Tool};

use super::{Connector, ConnectorStore, CustomTool, TOOL_PREFIX};
use crate::apps::Hit;
use crate::error::StoreError;

/// The account's custom tools found for a query.
#[derive(Debug, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub descriptions: HashMap<String, String>,
    pub hint: Option<String>,
}

/// Whether the account has a connector `custom.<name>` (for the `app` filter).
pub async fn app_exists(
    store: &dyn ConnectorStore,
    account: &str,
    app: &str,
) -> Result<bool, StoreError> {
    let Some(name) = app.strip_prefix(TOOL_PREFIX) else {
        return Ok(false);
    };
    Ok(store.connector_by_name(account, name).await?.is_some())
}

/// Searches the account's custom tools with the catalog's ranking, over a catalog built for
/// just these tools.
pub async fn find(
    store: &dyn ConnectorStore,
    account: &str,
    query: &str,
    app: Option<&str>,
    limit: usize,
) -> Result<Found, StoreError> {
    let connectors = store.list_connectors(account).await?;
    if connectors.is_empty() {
        return Ok(Found::default());
    }
    let cat = catalog_of(&connectors);
    let found = cat.find(query, app, limit);
    let descriptions = found
        .hits
        .iter()
        .filter_map(|h| {
            cat.tool(&h.tool)
                .map(|t| (h.tool.clone(), t.description.clone()))
        })
        .collect();
    Ok(Found {
        hits: found.hits.into_iter().map(Hit::from).collect(),
        descriptions,
        hint: found.hint,
    })
}

/// An in-memory catalog of the connectors (apps, one document each) and their tools, with its
/// search index. Public for the fuzz targets (`lambdas/fuzz`).
pub fn catalog_of(connectors: &[Connector]) -> Catalog {
    let mut sorted: Vec<&Connector> = connectors.iter().collect();
    sorted.sort_by_key(|c| c.app());
    let mut apps = Vec::new();
    let mut docs = Vec::new();
    let mut tools: Vec<(Tool, &CustomTool)> = Vec::new();
    for (i, c) in sorted.iter().enumerate() {
        let start = tools.len() as u32;
        let mut own: Vec<&CustomTool> = c.tools.iter().collect();
        own.sort_by(|a, b| a.name.cmp(&b.name));
        for t in own {
            let (method, path) = match &t.http {
                Some(h) => (h.method, h.path.clone()),
                // An MCP tool's verb stands in for a method, so the method prior treats
                // "list_items" like a GET and "create_item" like a POST.
                None => (mcp_method(&t.remote), String::new()),
            };
            tools.push((
                Tool {
                    name: t.name.clone(),
                    app: i as u32,
                    doc: i as u32,
                    server: 0,
                    method,
                    path,
                    operation_id: Some(t.remote.clone()),
                    description: t.description.clone(),
                    security: Vec::new(),
                    deprecated: false,
                },
                t,
            ));
        }
        let title = c.name.replace('_', " ");
        docs.push(Doc {
            id: c.app(),
            title: title.clone(),
            version: String::new(),
            license: None,
            origin: "custom".into(),
            servers: Vec::new(),
            auth: Vec::new(),
        });
        apps.push(App {
            slug: c.app(),
            title,
            description: String::new(),
            aliases: Vec::new(),
            former_ids: Vec::new(),
            categories: Vec::new(),
            logo_url: None,
            docs: vec![i as u32],
            tools: (start, tools.len() as u32),
            prior: 0.5,
        });
    }
    let index = index_over(&apps, &tools);
    Catalog::in_memory(
        "custom",
        apps,
        docs,
        tools.into_iter().map(|(t, _)| t).collect(),
        index,
    )
}

/// The BM25F index over the connectors' tools, read the way the catalog's are.
fn index_over(apps: &[App], tools: &[(Tool, &CustomTool)]) -> Index {
    let app_texts: Vec<AppText> = apps
        .iter()
        .map(|a| AppText {
            id: &a.slug,
            title: &a.title,
            provider: "",
            service: None,
            family: &[],
            extra: &[],
        })
        .collect();
    let docs: Vec<DocText> = tools
        .iter()
        .map(|(tool, t)| DocText {
            app: tool.app,
            name: &t.remote,
            summary: if t.summary.is_empty() {
                &t.description
            } else {
                &t.summary
            },
            description: &t.description,
            path: &tool.path,
            params: &t.params,
            verb: match &t.http {
                Some(h) => Verb::of_operation(h.method, &h.path),
                None => None,
            },
            doc_title: "",
        })
        .collect();
    Index::build(&app_texts, &docs)
}

fn mcp_method(remote: &str) -> Method {
    let first = text::words(remote)
        .into_iter()
        .next()
        .map(|w| text::stem(&w));
    match first.as_deref().and_then(Verb::of_term) {
        Some(Verb::Get | Verb::List) => Method::Get,
        Some(Verb::Update) => Method::Patch,
        Some(Verb::Delete) => Method::Delete,
        _ => Method::Post,
    }
}

/// Merges catalog and custom hits, keeping each list's own order: the head that matched more
/// query words goes first, and on a tie the one scoring higher relative to its own list's best
/// (BM25 scores of two corpora are not comparable as numbers).
pub fn merge(catalog: Vec<Hit>, custom: Vec<Hit>, limit: usize) -> Vec<Hit> {
    if custom.is_empty() {
        return catalog;
    }
    let top = |v: &[Hit]| v.first().map_or(1.0, |h| h.score.max(f64::MIN_POSITIVE));
    let (ca, cu) = (top(&catalog), top(&custom));
    let mut a = catalog.into_iter().peekable();
    let mut b = custom.into_iter().peekable();
    let mut out = Vec::new();
    while out.len() < limit {
        let take_custom = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(x), Some(y)) => (y.matched_terms.len(), y.score / cu)
                .partial_cmp(&(x.matched_terms.len(), x.score / ca))
                .is_some_and(|o| o.is_ge()),
        };
        let next = if take_custom { b.next() } else { a.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom::{Kind, Source, openapi::derive};

    /// The answer for a service the product catalog lacks recommends a custom connector; an
    /// account that added one finds its tools, whatever the connector is called.
    #[test]
    fn a_custom_connector_for_a_service_the_catalog_lacks_is_found() {
        let doc = serde_json::json!({
            "openapi": "3.0.3",
            "info": {"title": "Shopify Admin", "version": "1"},
            "servers": [{"url": "https://shop.example.com/admin/api"}],
            "paths": {"/orders": {"post": {"operationId": "createOrder", "summary": "Create an order"}}}
        });
        let tools = derive("my_store", &doc, None).unwrap().tools;
        let connector = Connector {
            id: "cc_1".into(),
            name: "my_store".into(),
            kind: Kind::Rest,
            source: Source::Inline,
            url: None,
            base_url: Some("https://shop.example.com/admin/api".into()),
            header_names: Vec::new(),
            headers_sealed: None,
            tools,
            created_at_ms: 0,
            refreshed_at_ms: 0,
        };
        let found = catalog_of(&[connector]).find("create an order in shopify", None, 5);
        assert_eq!(
            found.hits.first().map(|h| h.tool.as_str()),
            Some("custom.my_store.create_order"),
            "{found:?}"
        );
    }
}
