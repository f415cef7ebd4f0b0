//! The one list of MCP tools this Worker serves, built once per isolate and handed to MCP
//! (`tools/list`, `tools/call`), the discovery documents (server card, OpenAPI, llms.txt,
//! site.json) and the site's own `site_info` tool.
//!
//! Every entry pairs a spec with the typed tool that answers it ([`SiteTool`] or
//! [`CommerceTool`], each an exhaustive match for both its spec and its handler), so what is
//! listed and what can be called are the same set by construction.

use crate::commerce::{Backend, CommerceTool, CommerceTools};
use crate::config::Config;
use crate::site_tools::{SiteTool, SiteTools};
use crate::tool::{ToolBox, ToolOutcome, ToolSpec};
use serde_json::Value;
use std::sync::OnceLock;

/// Which code answers a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handler {
    Site(SiteTool),
    Commerce(CommerceTool),
}

/// Every tool, in `tools/list` order: the site's, then the shop's.
#[derive(Debug)]
pub struct Registry {
    specs: Vec<ToolSpec>,
    /// `handlers[i]` answers `specs[i]`.
    handlers: Vec<Handler>,
}

impl Registry {
    fn build() -> Self {
        let site = SiteTool::ALL.iter().map(|&t| (t.spec(), Handler::Site(t)));
        let commerce = CommerceTool::specs()
            .into_iter()
            .map(|(t, spec)| (spec, Handler::Commerce(t)));
        let (specs, handlers) = site.chain(commerce).unzip();
        Self { specs, handlers }
    }

    /// The registry, built on first use (the specs are static; building them parses the commerce
    /// schemas, so it is done once per isolate).
    pub fn get() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(Self::build)
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The tools for one request: `base` is the site's origin (absolute links, checkout return
    /// URLs); commerce tools reach Stripe through `backend`.
    pub fn serve<'a, B: Backend>(
        &'a self,
        base: &'a str,
        cfg: &'a Config,
        backend: &'a B,
    ) -> Tools<'a, B> {
        Tools {
            registry: self,
            site: SiteTools {
                base_url: base,
                tools: &self.specs,
            },
            commerce: CommerceTools { cfg, base, backend },
        }
    }
}

/// The registry bound to one request: what `/mcp` serves.
pub struct Tools<'a, B> {
    registry: &'a Registry,
    site: SiteTools<'a>,
    commerce: CommerceTools<'a, B>,
}

impl<B: Backend> ToolBox for Tools<'_, B> {
    fn specs(&self) -> &[ToolSpec] {
        self.registry.specs()
    }

    async fn call(&self, name: &str, args: &Value) -> Option<ToolOutcome> {
        let i = self.registry.specs.iter().position(|s| s.name == name)?;
        Some(match self.registry.handlers[i] {
            Handler::Site(t) => self.site.run(t, args),
            Handler::Commerce(t) => self.commerce.run(t, args).await,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commerce::Offline;
    use crate::testing::block_on;
    use serde_json::json;

    /// The tools `/mcp` serves, in order. Changing this list is a change to the public API: the
    /// e2e suites and the site's pages name these tools too.
    const TOOLS: [&str; 6] = [
        "site_info",
        "search_pages",
        "read_page",
        "list_products",
        "create_checkout",
        "get_checkout",
    ];

    #[test]
    fn the_registry_lists_each_tool_once_in_order() {
        let r = Registry::get();
        let names: Vec<_> = r.specs().iter().map(|s| s.name).collect();
        assert_eq!(names, TOOLS);
        assert_eq!(r.handlers.len(), r.specs.len());
        assert_eq!(SiteTool::ALL.len() + CommerceTool::ALL.len(), TOOLS.len());
    }

    #[test]
    fn every_listed_tool_is_answered_by_its_own_handler() {
        let r = Registry::get();
        for (spec, handler) in r.specs.iter().zip(&r.handlers) {
            let expected = match handler {
                Handler::Site(t) => t.spec(),
                Handler::Commerce(t) => CommerceTool::specs()
                    .into_iter()
                    .find(|(c, _)| c == t)
                    .map(|(_, s)| s)
                    .expect("every commerce tool has a spec"),
            };
            assert_eq!(*spec, expected, "{}", spec.name);
        }
    }

    #[test]
    fn calls_reach_the_right_tool_and_unknown_names_are_none() {
        let cfg = Config::default();
        let tools = Registry::get().serve("https://x.test", &cfg, &Offline);
        let info = block_on(tools.call("site_info", &json!({})));
        assert!(matches!(info, Some(ToolOutcome::Ok(v)) if v["tools"] == json!(TOOLS)));
        // No Stripe key: the commerce tool answers, with a tool error rather than "unknown".
        let products = block_on(tools.call("list_products", &json!({})));
        assert!(matches!(products, Some(ToolOutcome::Error(m)) if m.contains("not configured")));
        for name in TOOLS {
            assert!(block_on(tools.call(name, &json!({}))).is_some(), "{name}");
        }
        assert!(block_on(tools.call("nope", &json!({}))).is_none());
    }
}
