//! The MCP tool registry and the site's read-only tools (`site_info`, `search_pages`,
//! `read_page`).
//!
//! A [`ToolBox`] lists tool specs and runs calls. The MCP layer only sees that trait, so the
//! commerce tools (`list_products`, `create_checkout`, `get_checkout`, which call Stripe and are
//! therefore async) arrive as a second `ToolBox` combined with this one through [`Chain`],
//! without touching the protocol code.

use crate::{discovery, pages, search};
use serde_json::{Value, json};

/// The public description of one tool (the `tools/list` entry, also used in server cards).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    /// Root must be an object schema (MCP 2025-11-25).
    pub output_schema: Value,
    pub read_only: bool,
    /// True when the tool reaches systems outside this site (Stripe, for commerce).
    pub open_world: bool,
}

impl ToolSpec {
    /// The `tools/list` entry.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": false,
                "idempotentHint": self.read_only,
                "openWorldHint": self.open_world,
            },
        })
    }
}

/// What a tool call produced. A bad argument or a business failure is an `Error` (an MCP tool
/// result with `isError: true`), never a protocol error, so the model can read it and retry.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// Structured content matching the tool's output schema.
    Ok(Value),
    /// A message for the caller.
    Error(String),
}

/// A set of tools the MCP server exposes.
pub trait ToolBox {
    fn specs(&self) -> Vec<ToolSpec>;
    /// Runs `name`; `None` when this box has no such tool.
    fn call(
        &self,
        name: &str,
        args: &Value,
    ) -> impl std::future::Future<Output = Option<ToolOutcome>>;
}

/// Two tool boxes as one; the first wins on a name clash.
pub struct Chain<A, B>(pub A, pub B);

impl<A: ToolBox, B: ToolBox> ToolBox for Chain<A, B> {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.0.specs();
        for s in self.1.specs() {
            if !specs.iter().any(|t| t.name == s.name) {
                specs.push(s);
            }
        }
        specs
    }

    async fn call(&self, name: &str, args: &Value) -> Option<ToolOutcome> {
        match self.0.call(name, args).await {
            Some(out) => Some(out),
            None => self.1.call(name, args).await,
        }
    }
}

/// The site's read-only tools; `base_url` makes absolute links.
pub struct SiteTools {
    pub base_url: String,
}

impl SiteTools {
    pub fn new(base_url: &str) -> Self {
        Self {
            base_url: base_url.to_string(),
        }
    }
}

fn hit_schema() -> Value {
    json!({
        "type": "object",
        "required": ["path", "title", "url", "score"],
        "properties": {
            "path": {"type": "string"},
            "title": {"type": "string"},
            "url": {"type": "string", "format": "uri"},
            "score": {"type": "number"}
        }
    })
}

/// JSON Schema of the search response, shared by the tool and the OpenAPI document.
pub fn search_results_schema() -> Value {
    json!({
        "type": "object",
        "required": ["query", "results"],
        "properties": {
            "query": {"type": "string"},
            "results": {"type": "array", "items": hit_schema()}
        }
    })
}

/// The three site tools, in the order `tools/list` shows them.
pub fn site_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "site_info",
            title: "Site information",
            description: "Describes this presence-sensing service: what it does, its pages, \
                          discovery documents, rate limit and the tools available here. Call \
                          it first to orient yourself.",
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            output_schema: discovery::site_info_schema(),
            read_only: true,
            open_world: false,
        },
        ToolSpec {
            name: "search_pages",
            title: "Search site pages",
            description: "Finds site pages whose path contains the given words (for example \
                          'pricing', 'away alerts', 'engine api'); page titles break ties. \
                          Returns paths to pass to read_page.",
            input_schema: json!({
                "type": "object",
                "required": ["query"],
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "Words to match against page paths."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT, "default": search::DEFAULT_LIMIT}
                },
                "additionalProperties": false
            }),
            output_schema: search_results_schema(),
            read_only: true,
            open_world: false,
        },
        ToolSpec {
            name: "read_page",
            title: "Read a site page",
            description: "Returns one site page as Markdown, by its path (for example \
                          '/pricing' or '/docs/local-engine-api'). Use search_pages or \
                          site_info to find paths.",
            input_schema: json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "pattern": "^/", "description": "Page path starting with '/'."}
                },
                "additionalProperties": false
            }),
            output_schema: json!({
                "type": "object",
                "required": ["path", "title", "description", "url", "markdown"],
                "properties": {
                    "path": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "url": {"type": "string", "format": "uri"},
                    "markdown": {"type": "string"}
                }
            }),
            read_only: true,
            open_world: false,
        },
    ]
}

/// Every tool `/mcp` serves: the site's and the commerce ones.
pub fn all_specs() -> Vec<ToolSpec> {
    let mut specs = site_specs();
    specs.extend(crate::commerce::commerce_specs());
    specs
}

impl ToolBox for SiteTools {
    fn specs(&self) -> Vec<ToolSpec> {
        site_specs()
    }

    async fn call(&self, name: &str, args: &Value) -> Option<ToolOutcome> {
        Some(match name {
            "site_info" => ToolOutcome::Ok(discovery::site_info(&self.base_url)),
            "search_pages" => self.search_pages(args),
            "read_page" => self.read_page(args),
            _ => return None,
        })
    }
}

impl SiteTools {
    fn search_pages(&self, args: &Value) -> ToolOutcome {
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return ToolOutcome::Error("`query` (a string of words) is required".into());
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => search::DEFAULT_LIMIT,
            Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => n,
                None => return ToolOutcome::Error(search::SearchError::BadLimit.to_string()),
            },
        };
        match search::search(query, limit, &self.base_url) {
            Ok(results) => match serde_json::to_value(results) {
                Ok(v) => ToolOutcome::Ok(v),
                Err(e) => ToolOutcome::Error(format!("could not encode results: {e}")),
            },
            Err(e) => ToolOutcome::Error(e.to_string()),
        }
    }

    fn read_page(&self, args: &Value) -> ToolOutcome {
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return ToolOutcome::Error("`path` (a page path such as /pricing) is required".into());
        };
        match pages::find(path) {
            Some(page) => ToolOutcome::Ok(json!({
                "path": page.path,
                "title": page.title,
                "description": page.description,
                "url": format!("{}{}", self.base_url, page.path),
                "markdown": page.markdown,
            })),
            None => ToolOutcome::Error(format!(
                "no page at {path}; call search_pages or site_info for the list of pages"
            )),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs a future that never waits on I/O (all host-side futures here) to completion.
    pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[test]
    fn names_are_valid_and_schemas_are_objects() {
        for s in site_specs() {
            assert!(s.name.len() <= 128);
            assert!(
                s.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            );
            assert_eq!(s.input_schema["type"], "object");
            assert_eq!(s.output_schema["type"], "object");
            assert!(!s.description.is_empty());
        }
    }

    #[test]
    fn read_page_returns_markdown_or_a_tool_error() {
        let t = SiteTools::new("https://x.test");
        let ok = block_on(t.call("read_page", &json!({"path": "/pricing"})));
        match ok {
            Some(ToolOutcome::Ok(v)) => {
                assert_eq!(v["url"], "https://x.test/pricing");
                assert!(
                    v["markdown"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("# Pricing"))
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let missing = block_on(t.call("read_page", &json!({"path": "/nope"})));
        assert!(matches!(missing, Some(ToolOutcome::Error(_))));
        let bad = block_on(t.call("read_page", &json!({"path": 3})));
        assert!(matches!(bad, Some(ToolOutcome::Error(_))));
        assert!(block_on(t.call("list_products", &json!({}))).is_none());
    }

    #[test]
    fn search_pages_validates_limit() {
        let t = SiteTools::new("");
        let bad = block_on(t.call("search_pages", &json!({"query": "pricing", "limit": 0})));
        assert!(matches!(bad, Some(ToolOutcome::Error(_))));
        let bad = block_on(t.call("search_pages", &json!({"query": "pricing", "limit": "2"})));
        assert!(matches!(bad, Some(ToolOutcome::Error(_))));
        let ok = block_on(t.call("search_pages", &json!({"query": "pricing"})));
        assert!(matches!(ok, Some(ToolOutcome::Ok(v)) if v["results"][0]["path"] == "/pricing"));
    }

    struct Extra;
    impl ToolBox for Extra {
        fn specs(&self) -> Vec<ToolSpec> {
            let mut s = site_specs().remove(0);
            s.name = "list_products";
            vec![s, site_specs().remove(0)]
        }
        async fn call(&self, name: &str, _args: &Value) -> Option<ToolOutcome> {
            (name == "list_products" || name == "site_info")
                .then(|| ToolOutcome::Ok(json!({"extra": true})))
        }
    }

    #[test]
    fn chain_adds_tools_and_the_first_box_wins() {
        let c = Chain(SiteTools::new(""), Extra);
        let names: Vec<_> = c.specs().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["site_info", "search_pages", "read_page", "list_products"]
        );
        let info = block_on(c.call("site_info", &json!({})));
        assert!(matches!(info, Some(ToolOutcome::Ok(v)) if v.get("extra").is_none()));
        let extra = block_on(c.call("list_products", &json!({})));
        assert!(matches!(extra, Some(ToolOutcome::Ok(v)) if v["extra"] == true));
    }
}
