//! The platform's OpenAPI document (`lambdas/platform-http/openapi.json`): served at
//! `/api/v1/openapi.json`, and the source of the request-body schemas the router validates
//! against, so the document and the server cannot disagree about what a request may contain.

use bytes::Bytes;
use serde_json::{Value, json};

pub use platform_domain::validation::violations;

/// The document, as shipped.
pub const DOCUMENT: &str = include_str!("../openapi.json");

#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    #[error("openapi.json is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("schema {0} does not compile: {1}")]
    Schema(String, String),
}

/// Compiles `#/components/schemas/<name>` of `doc` into a validator.
pub fn component_validator(doc: &Value, name: &str) -> Result<jsonschema::Validator, OpenApiError> {
    schema_validator(
        doc,
        &json!({"$ref": format!("#/components/schemas/{name}")}),
    )
}

/// Compiles a schema taken from `doc` (a path's request or response schema, say); `$ref`s inside
/// it resolve against the document's components.
pub fn schema_validator(
    doc: &Value,
    schema: &Value,
) -> Result<jsonschema::Validator, OpenApiError> {
    let mut root = match schema {
        Value::Object(m) => m.clone(),
        other => {
            return Err(OpenApiError::Schema(
                other.to_string(),
                "not an object".into(),
            ));
        }
    };
    root.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    root.insert(
        "components".into(),
        doc.get("components").cloned().unwrap_or(Value::Null),
    );
    let root = Value::Object(root);
    jsonschema::validator_for(&root)
        .map_err(|e| OpenApiError::Schema(schema.to_string(), e.to_string()))
}

/// The loaded document and the request validators the router needs.
pub struct OpenApi {
    pub bytes: Bytes,
    pub find_tools_request: jsonschema::Validator,
    pub connect_request: jsonschema::Validator,
    pub create_custom_connector_request: jsonschema::Validator,
    pub run_tool_request: jsonschema::Validator,
    pub create_trigger_request: jsonschema::Validator,
}

impl OpenApi {
    pub fn load() -> Result<Self, OpenApiError> {
        let doc: Value = serde_json::from_str(DOCUMENT)?;
        Ok(Self {
            bytes: Bytes::from_static(DOCUMENT.as_bytes()),
            find_tools_request: component_validator(&doc, "FindToolsRequest")?,
            connect_request: component_validator(&doc, "ConnectRequest")?,
            create_custom_connector_request: component_validator(
                &doc,
                "CreateCustomConnectorRequest",
            )?,
            run_tool_request: component_validator(&doc, "RunToolRequest")?,
            create_trigger_request: component_validator(&doc, "CreateTriggerRequest")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_schema_rejects_unknown_and_wrong_fields() {
        let api = OpenApi::load().unwrap();
        assert!(
            violations(&api.find_tools_request, &json!({"query": "send a message"})).is_empty()
        );
        let errs = violations(
            &api.find_tools_request,
            &json!({"query": "x", "colour": "red"}),
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].detail.contains("colour"), "{errs:?}");
        let errs = violations(
            &api.find_tools_request,
            &json!({"query": "x", "limit": "ten"}),
        );
        assert_eq!(errs[0].pointer, "/limit", "{errs:?}");
        assert!(!violations(&api.find_tools_request, &json!({"app": "slack"})).is_empty());
    }
}
