//! One example input per tool, made from its input schema at build time: the document's own
//! `example`/`default`/first `enum` value where the schema has one, else a value of the right
//! type named after the field. Required fields only, so the example is the smallest valid call.

use serde_json::{Map, Value, json};

const MAX_DEPTH: usize = 5;

/// An example for `schema`; `name` is the field it is for (used to make strings readable).
pub fn example(schema: &Value) -> Value {
    value_for(schema, "value", 0)
}

fn value_for(schema: &Value, name: &str, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    for key in ["example", "default"] {
        if let Some(v) = obj.get(key)
            && !v.is_null()
        {
            return v.clone();
        }
    }
    if let Some(v) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = obj.get("const") {
        return v.clone();
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(first) = obj
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            if key == "allOf" {
                // allOf: the union of the parts' required fields.
                let mut merged = Map::new();
                for part in obj[key].as_array().into_iter().flatten() {
                    if let Value::Object(m) = value_for(part, name, depth + 1) {
                        merged.extend(m);
                    }
                }
                if !merged.is_empty() {
                    return Value::Object(merged);
                }
            }
            return value_for(first, name, depth + 1);
        }
    }
    // OpenAPI 3.1 allows a list of types (`["string", "null"]`): take the first real one.
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            if depth >= MAX_DEPTH {
                return json!({});
            }
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    if required.contains(&k.as_str()) {
                        out.insert(k.clone(), value_for(v, k, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            if depth >= MAX_DEPTH {
                return json!([]);
            }
            match obj.get("items") {
                Some(items) => json!([value_for(items, name, depth + 1)]),
                None => json!([]),
            }
        }
        "integer" => json!(1),
        "number" => json!(1.0),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => Value::String(string_for(obj, name)),
    }
}

fn string_for(obj: &Map<String, Value>, name: &str) -> String {
    match obj.get("format").and_then(Value::as_str) {
        Some("date-time") => "2026-01-01T00:00:00Z".into(),
        Some("date") => "2026-01-01".into(),
        Some("email") => "user@example.com".into(),
        Some("uri" | "url") => "https://example.com".into(),
        Some("uuid") => "00000000-0000-0000-0000-000000000000".into(),
        _ => format!("<{name}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_fill_required_fields_with_typed_values() {
        let schema = json!({
            "type": "object",
            "required": ["path", "body"],
            "properties": {
                "path": {"type": "object", "required": ["owner"], "properties": {
                    "owner": {"type": "string"}, "page": {"type": "integer"}}},
                "body": {"type": "object", "required": ["title", "labels", "state"], "properties": {
                    "title": {"type": "string", "example": "Found a bug"},
                    "labels": {"type": "array", "items": {"type": "string"}},
                    "state": {"type": ["string", "null"], "enum": ["open", "closed"]},
                    "due": {"type": "string", "format": "date"}}}
            }
        });
        assert_eq!(
            example(&schema),
            json!({"path": {"owner": "<owner>"},
                   "body": {"title": "Found a bug", "labels": ["<labels>"], "state": "open"}})
        );
    }
}
