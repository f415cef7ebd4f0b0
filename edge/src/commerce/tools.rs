//! The commerce MCP tools: `list_products`, `create_checkout` and `get_checkout`.
//!
//! Each tool is a [`CommerceTool`]; its spec and its handler are both exhaustive matches on it,
//! so a tool cannot be listed without being callable (or the reverse).

use super::backend::Backend;
use super::failure::Failure;
use super::service::{catalog, create, read};
use crate::checkout::{self, Protocol};
use crate::config::Config;
use crate::tool::{ToolOutcome, ToolSpec};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One of the commerce tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommerceTool {
    ListProducts,
    CreateCheckout,
    GetCheckout,
}

/// The commerce tools' schemas, as JSON text: parsed at run time, they cost a few hundred bytes
/// of code instead of the many kilobytes `json!` expands to (the Worker has a size budget).
const SPECS_JSON: &str = include_str!("tools.json");

#[derive(serde::Deserialize)]
struct SpecText {
    input: Value,
    output: Value,
}

impl CommerceTool {
    /// Every commerce tool, in the order `tools/list` shows them.
    pub const ALL: [CommerceTool; 3] =
        [Self::ListProducts, Self::CreateCheckout, Self::GetCheckout];

    /// Each tool with its spec (the schemas parsed once for all three).
    pub fn specs() -> Vec<(CommerceTool, ToolSpec)> {
        let schemas: BTreeMap<String, SpecText> =
            serde_json::from_str(SPECS_JSON).unwrap_or_default();
        Self::ALL.iter().map(|&t| (t, t.spec(&schemas))).collect()
    }

    fn spec(self, schemas: &BTreeMap<String, SpecText>) -> ToolSpec {
        let (name, title, description, read_only) = match self {
            Self::ListProducts => (
                "list_products",
                "List products",
                "Lists the plans (subscriptions, some with a free trial) and sensor \
                 hardware for sale, with live prices from the payment processor. Use \
                 an offer's id with create_checkout; offer only what is available.",
                true,
            ),
            Self::CreateCheckout => (
                "create_checkout",
                "Start a checkout",
                "Starts a checkout for one offer and returns its id and a continue_url. \
                 Give the person the continue_url: they pay (and enter email and, for \
                 hardware, a shipping address) on the payment processor's hosted page. \
                 Never send card numbers or payment tokens.",
                false,
            ),
            Self::GetCheckout => (
                "get_checkout",
                "Read a checkout",
                "Reads a checkout by the id create_checkout returned: status \
                 (requires_escalation while the person has not paid, completed, \
                 canceled), total, and the continue_url while it is open.",
                true,
            ),
        };
        let (input_schema, output_schema) = schemas
            .get(name)
            .map(|s| (s.input.clone(), s.output.clone()))
            .unwrap_or_else(|| (json!({"type": "object"}), json!({"type": "object"})));
        ToolSpec {
            name,
            title,
            description,
            input_schema,
            output_schema,
            read_only,
            open_world: true,
        }
    }
}

/// The commerce tools for one request.
pub struct CommerceTools<'a, B> {
    pub cfg: &'a Config,
    /// The site's origin, for the checkout's return URLs.
    pub base: &'a str,
    pub backend: &'a B,
}

impl<B: Backend> CommerceTools<'_, B> {
    pub async fn run(&self, tool: CommerceTool, args: &Value) -> ToolOutcome {
        if let Some(found) = checkout::payment_in_body(args) {
            return ToolOutcome::Error(format!(
                "Payment credentials were sent ({found}). {}",
                checkout::PAYMENT_PATH
            ));
        }
        match tool {
            CommerceTool::ListProducts => self.list_products().await,
            CommerceTool::CreateCheckout => self.create_checkout(args).await,
            CommerceTool::GetCheckout => self.get_checkout(args).await,
        }
    }

    async fn list_products(&self) -> ToolOutcome {
        match catalog(self.cfg, self.backend).await {
            Ok(c) => ToolOutcome::Ok(c.to_json()),
            Err(e) => self.fail("list_products", Failure::stripe(&e)),
        }
    }

    async fn create_checkout(&self, args: &Value) -> ToolOutcome {
        let Some(offer) = args.get("offer_id").and_then(Value::as_str) else {
            return ToolOutcome::Error("`offer_id` (an id from list_products) is required".into());
        };
        let body = json!({"line_items": [{"id": offer, "quantity": args.get("quantity")}]});
        match create(
            self.cfg,
            self.backend,
            self.base,
            &body,
            Protocol::Mcp,
            None,
        )
        .await
        {
            Ok(c) => match c.continue_url {
                Some(url) => ToolOutcome::Ok(json!({"id": c.id, "continue_url": url})),
                None => ToolOutcome::Error(format!(
                    "checkout {} has no payment link; create a new one",
                    c.id
                )),
            },
            Err(e) => self.fail("create_checkout", e.failure()),
        }
    }

    async fn get_checkout(&self, args: &Value) -> ToolOutcome {
        let Some(id) = args.get("id").and_then(Value::as_str) else {
            return ToolOutcome::Error(
                "`id` (the checkout id from create_checkout) is required".into(),
            );
        };
        match read(self.cfg, self.backend, id).await {
            Ok(c) => ToolOutcome::Ok(c.to_tool()),
            Err(f) => self.fail("get_checkout", f),
        }
    }

    /// A business failure as a tool result the model can read (and a log line for a 5xx).
    fn fail(&self, tool: &str, f: Failure) -> ToolOutcome {
        f.log(self.backend, &format!("tool {tool}"));
        ToolOutcome::Error(f.detail)
    }
}
