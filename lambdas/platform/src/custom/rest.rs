//! The REST side of custom connectors: tools derived from an OpenAPI 3 document exactly as the
//! catalog derives them ([`crate::derive`]), and a runner for them.
//!
//! Requests are built by the executor's [`crate::exec::prepare_request`], so custom REST tools map
//! their argument groups exactly like catalog tools; credentials are the connector's sealed headers
//! rather than a connection, and `custom::run` records the run.

use std::future::Future;

use serde_json::Value;

use super::{
    Called, CustomError, CustomTool, HttpOp, MAX_DOCUMENT, MAX_TOOLS, RunError, TOOL_PREFIX,
};
use crate::catalog::Method;
use crate::derive::{operation_name, spec, tool_name};
use crate::outbound::Outbound;

/// Fetches an OpenAPI document (JSON) through the guard.
pub async fn fetch_document(outbound: &Outbound, url: &str) -> Result<Value, CustomError> {
    let req = outbound
        .client()
        .get(url)
        .header(http::header::ACCEPT, "application/json");
    let resp = outbound.send(req).await?;
    if !(200..300).contains(&resp.status) {
        return Err(CustomError::Unreachable(format!(
            "fetching the OpenAPI document answered HTTP {}",
            resp.status
        )));
    }
    if resp.body.len() > MAX_DOCUMENT {
        return Err(CustomError::DocumentTooLarge);
    }
    serde_json::from_slice(&resp.body).map_err(|e| {
        CustomError::InvalidOpenApi(format!("the document at the URL is not JSON ({e})"))
    })
}

/// Tools and server URL derived from a document.
pub struct Derived {
    pub base_url: Option<String>,
    pub tools: Vec<CustomTool>,
}

/// Derives the tools of `doc` for connector `connector`. `doc_url` resolves a relative server
/// URL (`"servers": [{"url": "/v1"}]`).
pub fn derive(connector: &str, doc: &Value, doc_url: Option<&str>) -> Result<Derived, CustomError> {
    let Some(obj) = doc.as_object() else {
        return Err(CustomError::InvalidOpenApi(
            "the document is not a JSON object".into(),
        ));
    };
    match obj.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.") => {}
        Some(v) => {
            return Err(CustomError::InvalidOpenApi(format!(
                "version {v:?}; only OpenAPI 3.x is read"
            )));
        }
        None if obj.contains_key("swagger") => {
            return Err(CustomError::InvalidOpenApi(
                "Swagger 2.0; convert it to OpenAPI 3 first".into(),
            ));
        }
        None => {
            return Err(CustomError::InvalidOpenApi(
                "the `openapi` version field is missing".into(),
            ));
        }
    }
    if !obj.get("paths").is_some_and(Value::is_object) {
        return Err(CustomError::InvalidOpenApi(
            "`paths` is missing or not an object".into(),
        ));
    }
    let parsed = spec::parse("custom", None, doc);
    if parsed.ops.is_empty() {
        return Err(CustomError::InvalidOpenApi("it has no operations".into()));
    }
    if parsed.ops.len() > MAX_TOOLS {
        return Err(CustomError::TooManyTools(parsed.ops.len()));
    }
    let base_url = parsed.base_url.clone().or_else(|| {
        let relative = doc.pointer("/servers/0/url").and_then(Value::as_str)?;
        let base = url::Url::parse(doc_url?).ok()?;
        base.join(relative).ok().map(|u| u.to_string())
    });
    let app = format!("{TOOL_PREFIX}{connector}");
    let mut seen = std::collections::HashSet::new();
    let mut tools = Vec::with_capacity(parsed.ops.len());
    for op in parsed.ops {
        let base = operation_name(&op);
        let mut name = tool_name(&app, &base);
        let mut k = 2;
        while !seen.insert(name.clone()) {
            name = tool_name(&app, &format!("{base}_{k}"));
            k += 1;
        }
        let input_schema: Value = serde_json::from_str(&op.input_schema)
            .map_err(|e| CustomError::InvalidOpenApi(format!("a schema is unreadable: {e}")))?;
        let description = if op.description.trim().is_empty() {
            format!("{} {}", op.method.as_str(), op.path)
        } else {
            op.description.clone()
        };
        tools.push(CustomTool {
            name,
            remote: op.operation_id.clone().unwrap_or(base),
            description,
            input_schema,
            http: Some(HttpOp {
                method: op.method,
                path: op.path,
            }),
            summary: format!("{} {}", op.index_summary, op.index_description),
            params: op.params,
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Derived { base_url, tools })
}

/// One REST call of a derived tool: the arguments are grouped like its input schema,
/// `{"path": {..}, "query": {..}, "header": {..}, "body": ..}`.
pub struct RestCall<'a> {
    pub method: Method,
    pub base_url: &'a str,
    pub path: &'a str,
    pub input_schema: &'a Value,
    pub arguments: &'a Value,
    /// The connector's (opened) headers; they win over argument headers.
    pub headers: &'a [(String, String)],
}

/// Executes derived REST tools (a seam for tests).
pub trait RestRunner: Send + Sync {
    fn run(&self, call: RestCall<'_>) -> impl Future<Output = Result<Called, RunError>> + Send;
}

/// The runner over [`Outbound`], with the executor's request mapping.
pub struct SimpleRestRunner<'a> {
    pub outbound: &'a Outbound,
}

impl RestRunner for SimpleRestRunner<'_> {
    async fn run(&self, call: RestCall<'_>) -> Result<Called, RunError> {
        let req = crate::exec::prepare_request(
            self.outbound,
            call.method,
            call.path,
            call.base_url,
            call.input_schema,
            call.arguments,
            call.headers,
        )
        .map_err(RunError::InvalidArguments)?;
        let resp = self.outbound.send(req).await?;
        let data = match serde_json::from_slice::<Value>(&resp.body) {
            Ok(v) => v,
            Err(_) if resp.body.is_empty() => Value::Null,
            Err(_) => Value::String(String::from_utf8_lossy(&resp.body).into_owned()),
        };
        match resp.status {
            200..=299 => Ok(Called {
                http_status: Some(resp.status),
                data,
            }),
            429 => Err(RunError::RateLimited {
                retry_after: resp
                    .headers
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse().ok()),
            }),
            status => Err(RunError::Upstream {
                status: Some(status),
                detail: format!("HTTP {status}: {}", short(&data)),
            }),
        }
    }
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    s.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn petstore() -> Value {
        json!({
            "openapi": "3.0.3",
            "info": {"title": "Pet Store", "version": "1"},
            "servers": [{"url": "https://pets.example.com/v1"}],
            "paths": {
                "/pets/{petId}": {"get": {"operationId": "showPetById", "summary": "Info for a specific pet",
                    "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}]}},
                "/pets": {"post": {"operationId": "createPet", "summary": "Create a pet",
                    "requestBody": {"required": true, "content": {"application/json": {"schema":
                        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}}}
            }
        })
    }

    #[test]
    fn tools_are_derived_like_the_catalogs() {
        let d = derive("pets", &petstore(), None).unwrap();
        assert_eq!(d.base_url.as_deref(), Some("https://pets.example.com/v1"));
        let names: Vec<&str> = d.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["custom.pets.create_pet", "custom.pets.show_pet_by_id"]
        );
        let show = &d.tools[1];
        assert_eq!(
            show.input_schema["properties"]["path"]["required"],
            json!(["petId"])
        );
        assert_eq!(show.http.as_ref().unwrap().path, "/pets/{petId}");
    }

    #[test]
    fn unusable_documents_say_why() {
        for (doc, why) in [
            (json!([1]), "not a JSON object"),
            (json!({"swagger": "2.0", "paths": {}}), "Swagger 2.0"),
            (json!({"openapi": "3.0.0", "info": {}}), "paths"),
            (json!({"openapi": "3.0.0", "paths": {}}), "no operations"),
        ] {
            let e = derive("x", &doc, None).err().unwrap();
            assert!(e.to_string().contains(why), "{e}");
        }
    }

    #[test]
    fn relative_servers_resolve_against_the_document_url() {
        let mut doc = petstore();
        doc["servers"] = json!([{"url": "/api/v2"}]);
        let d = derive("pets", &doc, Some("https://example.com/specs/openapi.json")).unwrap();
        assert_eq!(d.base_url.as_deref(), Some("https://example.com/api/v2"));
    }

    #[test]
    fn urls_substitute_and_encode_path_parameters_and_add_the_query() {
        let outbound = Outbound::new(crate::outbound::OutboundPolicy::default()).unwrap();
        let schema = json!({"properties": {"query": {"properties": {"tag": {}, "limit": {}}}}});
        let args = json!({"path": {"petId": "a b/c"}, "query": {"tag": ["x", "y"], "limit": 5}});
        let prepare = |args: &Value| {
            crate::exec::prepare_request(
                &outbound,
                Method::Get,
                "/pets/{petId}",
                "https://pets.example.com/v1/",
                &schema,
                args,
                &[("X-Api-Key".into(), "k".into())],
            )
        };
        let req = prepare(&args).unwrap().build().unwrap();
        assert_eq!(
            req.url().as_str(),
            "https://pets.example.com/v1/pets/a%20b%2Fc?limit=5&tag=x&tag=y"
        );
        assert_eq!(req.headers()["x-api-key"], "k");
        assert!(
            prepare(&json!({})).is_err(),
            "the path parameter is required"
        );
    }
}
