//! The MCP tools the platform offers: names, descriptions and input schemas (also used to
//! validate arguments before a call reaches its handler).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Value, json};

pub(crate) const MAX_RESULTS: usize = 50;

/// The tools, with their input schemas (also used to validate arguments).
fn tool_specs() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "search_apps",
            "Search the app catalog by name or purpose. Each app says whether the caller has \
             connected it (connection_status).",
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"query": {"type": "string", "maxLength": 200},
                                  "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}}}),
        ),
        (
            "connect_app",
            "Connect an app (its catalog id) to the caller's account: returns a single-use link \
             (30 minutes) for the user to open. Connecting again adds another connection \
             (e.g. a second account); label tells them apart.",
            json!({"type": "object", "additionalProperties": false, "required": ["app"],
                   "properties": {"app": {"type": "string", "minLength": 1},
                                  "label": {"type": "string", "minLength": 1, "maxLength": 100}}}),
        ),
        (
            "list_connections",
            "List the caller's connections (id, app, label, identity, status, default).",
            json!({"type": "object", "additionalProperties": false, "properties": {}}),
        ),
        (
            "find_tools",
            "Find tools for a task described in plain words, best first. Optionally only within \
             one app (its catalog id). An empty result comes with a hint.",
            json!({"type": "object", "additionalProperties": false, "required": ["query"],
                   "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 500},
                                  "app": {"type": "string", "minLength": 1},
                                  "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}}}),
        ),
        (
            "get_tool",
            "Get one tool by name: what a run does (HTTP method, path template, server URL, auth \
             kinds and scopes), the JSON Schema of its arguments and an example input. A name an \
             earlier catalog issued answers with the tool under its current name.",
            json!({"type": "object", "additionalProperties": false, "required": ["name"],
                   "properties": {"name": {"type": "string", "minLength": 1}}}),
        ),
        (
            "run_tool",
            "Run a tool with arguments matching its input schema (see get_tool), through the \
             app's default connection or the given connection_id. If the app is not connected \
             the result has status connection_required and a connect_url to show the user.",
            json!({"type": "object", "additionalProperties": false, "required": ["tool", "arguments"],
                   "properties": {"tool": {"type": "string", "minLength": 1},
                                  "arguments": {"type": "object"},
                                  "connection_id": {"type": "string", "minLength": 1}}}),
        ),
    ]
}

pub(crate) struct Tools {
    pub list: Vec<Tool>,
    pub validators: HashMap<&'static str, jsonschema::Validator>,
}

pub(crate) fn build_tools() -> Result<Tools, String> {
    let mut list = Vec::new();
    let mut validators = HashMap::new();
    for (name, description, schema) in tool_specs() {
        let validator = jsonschema::validator_for(&schema).map_err(|e| format!("{name}: {e}"))?;
        validators.insert(name, validator);
        let Value::Object(obj) = schema else {
            return Err(format!("{name}: schema is not an object"));
        };
        list.push(Tool::new(name, description, Arc::new(obj)));
    }
    Ok(Tools { list, validators })
}
