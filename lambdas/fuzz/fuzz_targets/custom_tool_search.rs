//! Tool search over an account's custom tools, with the catalog's own ranking: any query and
//! app filter is answered (hits, or none with a hint), never a panic.
#![no_main]

use std::sync::LazyLock;

use catalog_core::Catalog;
use libfuzzer_sys::fuzz_target;
use platform_domain::custom::{Connector, Kind, Source, catalog_of, openapi::derive};

/// Two connectors derived from small documents, built once.
static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let doc = |title: &str, paths: serde_json::Value| {
        serde_json::json!({"openapi": "3.0.3", "info": {"title": title, "version": "1"},
                           "servers": [{"url": "https://api.example.com"}], "paths": paths})
    };
    let op = |id: &str, summary: &str| serde_json::json!({"operationId": id, "summary": summary});
    let connectors = [
        ("crm", doc("Tiny CRM", serde_json::json!({
            "/contacts": {"get": op("listContacts", "List contacts"), "post": op("createContact", "Create a contact")},
            "/contacts/{id}": {"delete": op("deleteContact", "Delete a contact")},
        }))),
        ("chat", doc("Tiny chat", serde_json::json!({
            "/messages": {"post": op("sendMessage", "Send a message to a channel")},
        }))),
    ]
    .map(|(name, d)| {
        let tools = derive(name, &d, None).map(|x| x.tools).unwrap_or_default();
        Connector {
            id: format!("cc_{name}"),
            name: name.to_string(),
            kind: Kind::Rest,
            source: Source::Inline,
            url: None,
            base_url: Some("https://api.example.com".into()),
            header_names: Vec::new(),
            headers_sealed: None,
            tools,
            created_at_ms: 0,
            refreshed_at_ms: 0,
        }
    });
    catalog_of(&connectors)
});

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first line is the query, the second (if any) the app filter.
    let mut lines = text.splitn(2, '\n');
    let query = lines.next().unwrap_or_default();
    let app = lines.next();
    let found = CATALOG.find(query, app, 10);
    assert!(found.hits.len() <= 10);
    assert!(found.hits.iter().all(|h| h.score.is_finite()));
    // Only the two connectors' tools exist to be found.
    assert!(
        found
            .hits
            .iter()
            .all(|h| h.tool.starts_with("custom.crm.") || h.tool.starts_with("custom.chat."))
    );
});
