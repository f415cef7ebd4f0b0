//! The tools of a REST connector, derived from its OpenAPI 3 document exactly as the catalog
//! derives its own (`catalog_core::openapi` and `catalog_core::naming`), so a custom connector's tools look like the
//! catalog's and map their argument groups the same way when run.

use serde_json::Value;

use super::{CustomError, CustomTool, HttpOp, MAX_TOOLS, TOOL_PREFIX};
use catalog_core::naming::{operation_name, tool_name};
use catalog_core::openapi as spec;

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
    let mut parsed = spec::parse("custom", None, doc);
    // A connector has one base URL: the document's preferred server with its variables at their
    // defaults, else its relative server resolved against where the document came from.
    let base_url = parsed
        .default_server
        .and_then(|i| parsed.servers.get(usize::from(i)))
        .map(|s| s.resolve(&|_| None))
        .or_else(|| {
            let relative = doc.pointer("/servers/0/url").and_then(Value::as_str)?;
            let base = url::Url::parse(doc_url?).ok()?;
            base.join(relative).ok().map(|u| u.to_string())
        });
    if parsed.default_server.is_none() {
        // The catalog skips operations no absolute server can reach; a connector's go to the
        // base URL above or the one the caller passes, so read them as if a server were declared.
        let mut declared = doc.clone();
        declared["servers"] = serde_json::json!([{"url": "https://connector.invalid"}]);
        parsed = spec::parse("custom", None, &declared);
    }
    if parsed.ops.is_empty() {
        return Err(CustomError::InvalidOpenApi("it has no operations".into()));
    }
    if parsed.ops.len() > MAX_TOOLS {
        return Err(CustomError::TooManyTools(parsed.ops.len()));
    }
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
    fn a_sandbox_listed_first_is_passed_over_as_the_catalog_does() {
        let mut doc = petstore();
        doc["servers"] = json!([
            {"url": "https://api-m.sandbox.pets.io/v1"},
            {"url": "https://api-m.pets.io/v1"}
        ]);
        let d = derive("pets", &doc, None).unwrap();
        assert_eq!(d.base_url.as_deref(), Some("https://api-m.pets.io/v1"));
    }

    #[test]
    fn without_any_server_the_operations_are_still_read() {
        let mut doc = petstore();
        doc.as_object_mut().unwrap().remove("servers");
        let d = derive("pets", &doc, None).unwrap();
        assert_eq!(d.base_url, None, "the caller must pass base_url");
        assert_eq!(d.tools.len(), 2);
    }

    #[test]
    fn relative_servers_resolve_against_the_document_url() {
        let mut doc = petstore();
        doc["servers"] = json!([{"url": "/api/v2"}]);
        let d = derive("pets", &doc, Some("https://example.com/specs/openapi.json")).unwrap();
        assert_eq!(d.base_url.as_deref(), Some("https://example.com/api/v2"));
    }

    /// Every node of a real-looking document replaced, one at a time and in pairs, by values of
    /// the wrong shape (the fuzz target `custom_openapi` searches further): always tools or a
    /// typed error, and the tools well formed.
    #[test]
    fn any_node_of_the_wrong_shape_is_answered_not_a_panic() {
        fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
            out.push(at.clone());
            match v {
                Value::Object(m) => m.iter().for_each(|(k, x)| {
                    pointers(
                        x,
                        format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    )
                }),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| pointers(x, format!("{at}/{i}"), out)),
                _ => {}
            }
        }
        let wrong = [
            json!(null),
            json!(-1),
            json!(1e308),
            json!("{"),
            json!(""),
            json!([]),
            json!({}),
            json!([[[[[[[[[[]]]]]]]]]]),
            json!({"$ref": "#/components/schemas/Nope"}),
            json!({"$ref": "#"}),
            json!("x".repeat(10_000)),
        ];
        let base = petstore();
        let mut all = Vec::new();
        pointers(&base, String::new(), &mut all);
        let check = |doc: &Value| {
            if let Ok(d) = derive("pets", doc, Some("https://example.com/openapi.json")) {
                assert!(d.tools.len() <= MAX_TOOLS);
                assert!(d.tools.iter().all(|t| t.name.starts_with("custom.pets.")));
                let names: std::collections::HashSet<&str> =
                    d.tools.iter().map(|t| t.name.as_str()).collect();
                assert_eq!(names.len(), d.tools.len(), "tool names are unique");
            }
        };
        // A small deterministic generator picks the pairs.
        let mut seed = 0x2545_f491_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as usize
        };
        for p in all.iter().skip(1) {
            for w in &wrong {
                let mut doc = base.clone();
                *doc.pointer_mut(p).unwrap() = w.clone();
                check(&doc);
                let q = &all[1 + next() % (all.len() - 1)];
                if let Some(node) = doc.pointer_mut(q) {
                    *node = wrong[next() % wrong.len()].clone();
                }
                check(&doc);
            }
        }
    }
}
