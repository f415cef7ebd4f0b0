//! The site's read-only MCP tools: `site_info`, `search_pages` and `read_page`.
//!
//! Each tool is a [`SiteTool`]; its spec and its handler are both exhaustive matches on it, so a
//! tool cannot be listed without being callable (or the reverse).

use crate::discovery;
use crate::pages;
use crate::search;
use crate::tool::{ToolOutcome, ToolSpec};
use serde_json::{Value, json};

/// One of the site's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteTool {
    SiteInfo,
    SearchPages,
    ReadPage,
}

impl SiteTool {
    /// Every site tool, in the order `tools/list` shows them.
    pub const ALL: [SiteTool; 3] = [Self::SiteInfo, Self::SearchPages, Self::ReadPage];

    pub fn spec(self) -> ToolSpec {
        match self {
            Self::SiteInfo => ToolSpec {
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
            Self::SearchPages => ToolSpec {
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
                output_schema: search::results_schema(),
                read_only: true,
                open_world: false,
            },
            Self::ReadPage => ToolSpec {
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
        }
    }
}

/// The site tools for one request: `base_url` makes absolute links; `tools` is the whole
/// registry, which `site_info` lists.
pub struct SiteTools<'a> {
    pub base_url: &'a str,
    pub tools: &'a [ToolSpec],
}

impl SiteTools<'_> {
    pub fn run(&self, tool: SiteTool, args: &Value) -> ToolOutcome {
        match tool {
            SiteTool::SiteInfo => ToolOutcome::Ok(discovery::site_info(self.base_url, self.tools)),
            SiteTool::SearchPages => self.search_pages(args),
            SiteTool::ReadPage => self.read_page(args),
        }
    }

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
        match search::search(query, limit, self.base_url) {
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
mod tests {
    use super::*;

    fn specs() -> Vec<ToolSpec> {
        SiteTool::ALL.iter().map(|t| t.spec()).collect()
    }

    fn run(base_url: &str, tool: SiteTool, args: Value) -> ToolOutcome {
        let tools = specs();
        SiteTools {
            base_url,
            tools: &tools,
        }
        .run(tool, &args)
    }

    #[test]
    fn names_are_valid_and_schemas_are_objects() {
        for s in specs() {
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
        match run(
            "https://x.test",
            SiteTool::ReadPage,
            json!({"path": "/pricing"}),
        ) {
            ToolOutcome::Ok(v) => {
                assert_eq!(v["url"], "https://x.test/pricing");
                assert!(
                    v["markdown"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("# Pricing"))
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let missing = run(
            "https://x.test",
            SiteTool::ReadPage,
            json!({"path": "/nope"}),
        );
        assert!(matches!(missing, ToolOutcome::Error(_)));
        let bad = run("https://x.test", SiteTool::ReadPage, json!({"path": 3}));
        assert!(matches!(bad, ToolOutcome::Error(_)));
    }

    #[test]
    fn search_pages_validates_limit() {
        let bad = run(
            "",
            SiteTool::SearchPages,
            json!({"query": "pricing", "limit": 0}),
        );
        assert!(matches!(bad, ToolOutcome::Error(_)));
        let bad = run(
            "",
            SiteTool::SearchPages,
            json!({"query": "pricing", "limit": "2"}),
        );
        assert!(matches!(bad, ToolOutcome::Error(_)));
        let ok = run("", SiteTool::SearchPages, json!({"query": "pricing"}));
        assert!(matches!(ok, ToolOutcome::Ok(v) if v["results"][0]["path"] == "/pricing"));
    }

    #[test]
    fn site_info_lists_the_tools_it_is_given() {
        let ok = run("https://x.test", SiteTool::SiteInfo, json!({}));
        assert!(
            matches!(ok, ToolOutcome::Ok(v) if v["tools"] == json!(["site_info", "search_pages", "read_page"]))
        );
    }
}
