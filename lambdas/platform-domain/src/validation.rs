//! JSON Schema checks of inputs (tool arguments, request bodies), reported as JSON-pointer field
//! errors that REST puts in a problem's `errors[]` and MCP in a tool result.

use serde::Serialize;
use serde_json::Value;

/// One invalid member of an input, pointed to by a JSON Pointer (RFC 6901).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldError {
    pub pointer: String,
    pub detail: String,
}

impl FieldError {
    pub fn new(pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            detail: detail.into(),
        }
    }
}

/// Every violation of `validator` by `instance`, as field errors.
pub fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<FieldError> {
    validator
        .iter_errors(instance)
        .map(|e| FieldError {
            pointer: e.instance_path().to_string(),
            detail: e.to_string(),
        })
        .collect()
}

/// The violations of `schema` by `instance`; `Err` with the reason when the schema itself does
/// not compile (the caller decides whether that blocks anything).
pub fn check(schema: &Value, instance: &Value) -> Result<Vec<FieldError>, String> {
    jsonschema::validator_for(schema)
        .map(|v| violations(&v, instance))
        .map_err(|e| e.to_string())
}
