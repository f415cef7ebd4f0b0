//! The vocabulary of MCP tools: a tool's public description ([`ToolSpec`]), what a call produced
//! ([`ToolOutcome`]) and what the MCP server needs from a set of tools ([`ToolBox`]).
//!
//! The tools themselves live with what they serve (`site_tools`, `commerce::tools`); the one
//! list of them is [`crate::registry`].

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

/// The tools an MCP server exposes.
pub trait ToolBox {
    /// Every tool, in `tools/list` order.
    fn specs(&self) -> &[ToolSpec];
    /// Runs `name`; `None` when there is no such tool.
    fn call(
        &self,
        name: &str,
        args: &Value,
    ) -> impl std::future::Future<Output = Option<ToolOutcome>>;
}
