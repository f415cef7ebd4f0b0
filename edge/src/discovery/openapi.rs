//! The OpenAPI 3.1 document of the agent API (`/openapi.json`).
//!
//! The document is `openapi.json` beside this file, compiled in and parsed per request: as a
//! `json!` literal it was ~9 KB of the Worker's gzipped size budget, as text ~3.4 KB (see the
//! README's Performance section). What other modules own is filled in here from its source, so
//! it cannot drift: the service's name, version and summary, the origin, the search limits,
//! the protocol versions and the schemas of site.json, search results and the offer list.

use super::site::site_info_schema;
use crate::meta::{ACP_VERSIONS, SERVICE_NAME, SUMMARY, UCP_VERSION, VERSION};
use crate::search;
use crate::tool::ToolSpec;
use serde_json::{Value, json};

const TEMPLATE: &str = include_str!("openapi.json");

/// The members [`openapi`] fills in, by JSON pointer (a test checks each exists in the file).
const SEARCH_LIMIT: &str = "/paths/~1agent~1search/get/parameters/1/schema";
const UCP_DOCS: &str = "/paths/~1agent~1commerce~1ucp~1checkout-sessions/post/externalDocs/url";
const ACP_VERSION: &str =
    "/paths/~1agent~1commerce~1acp~1checkout_sessions/post/parameters/0/schema/enum";
const SCHEMAS: &str = "/components/schemas";

/// OpenAPI 3.1 document of the agent API; `tools` is the tool registry, whose `list_products`
/// output schema is the offer list's schema.
pub fn openapi(base: &str, tools: &[ToolSpec]) -> Value {
    let mut doc: Value = serde_json::from_str(TEMPLATE).unwrap_or_default();
    doc["info"]["title"] = json!(format!("{SERVICE_NAME} agent API"));
    doc["info"]["version"] = json!(VERSION);
    doc["info"]["summary"] = json!(SUMMARY);
    doc["info"]["contact"]["url"] = json!(format!("{base}/support"));
    doc["servers"] = json!([{"url": base}]);
    let products = tools
        .iter()
        .find(|t| t.name == "list_products")
        .map(|t| t.output_schema.clone())
        .unwrap_or_else(|| json!({"type": "object"}));
    for (pointer, value) in [
        (
            SEARCH_LIMIT,
            json!({"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT,
                "default": search::DEFAULT_LIMIT}),
        ),
        (
            UCP_DOCS,
            json!(format!(
                "https://ucp.dev/{UCP_VERSION}/specification/checkout"
            )),
        ),
        (ACP_VERSION, json!(ACP_VERSIONS)),
    ] {
        if let Some(slot) = doc.pointer_mut(pointer) {
            *slot = value;
        }
    }
    if let Some(schemas) = doc.pointer_mut(SCHEMAS) {
        schemas["SiteInfo"] = site_info_schema();
        schemas["SearchResults"] = search::results_schema();
        schemas["Products"] = products;
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_has_every_member_filled_in() {
        let doc: Value = serde_json::from_str(TEMPLATE).expect("openapi.json is JSON");
        assert_eq!(doc["openapi"], "3.1.0");
        for p in [SEARCH_LIMIT, UCP_DOCS, ACP_VERSION, SCHEMAS] {
            assert!(doc.pointer(p).is_some(), "{p}");
        }
        let spec = ToolSpec {
            name: "list_products",
            title: "",
            description: "",
            input_schema: json!({}),
            output_schema: json!({"title": "offers"}),
            read_only: true,
            open_world: true,
        };
        let out = openapi("https://x.test", &[spec]);
        assert_eq!(out["servers"][0]["url"], "https://x.test");
        assert_eq!(out["info"]["contact"]["url"], "https://x.test/support");
        assert_eq!(out["info"]["version"], VERSION);
        assert_eq!(out.pointer(ACP_VERSION), Some(&json!(ACP_VERSIONS)));
        assert_eq!(
            out.pointer(&format!("{SEARCH_LIMIT}/maximum")),
            Some(&json!(search::MAX_LIMIT))
        );
        assert_eq!(out["components"]["schemas"]["Products"]["title"], "offers");
        assert_eq!(out["components"]["schemas"]["SiteInfo"], site_info_schema());
        assert!(!out.to_string().contains("{base}"));
    }
}
