//! The OpenAPI 3.1 document of the agent API (`/openapi.json`).

use super::site::site_info_schema;
use crate::meta::{ACP_VERSIONS, SERVICE_NAME, SUMMARY, UCP_VERSION, VERSION};
use crate::search;
use crate::tool::ToolSpec;
use serde_json::{Value, json};

fn problem_schema() -> Value {
    json!({
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string"},
            "request_id": {"type": "string"}
        }
    })
}

/// An error answer of one operation: a problem+json body.
fn problem(desc: &str) -> Value {
    json!({"description": desc, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
}

/// An error answer of one operation in a protocol's own shape (`AcpError`, `UcpError`,
/// `JsonRpcResponse`).
fn shaped(desc: &str, schema: &str) -> Value {
    json!({"description": desc, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}})
}

/// The answer every operation gives above the rate limit.
fn too_many() -> Value {
    json!({
        "description": "More than one request per second from this client.",
        "headers": {
            "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."},
            "RateLimit": {"schema": {"type": "string"}, "description": "draft-ietf-httpapi-ratelimit-headers"},
            "RateLimit-Policy": {"schema": {"type": "string"}}
        },
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    })
}

/// OpenAPI 3.1 document of the agent API; `tools` is the tool registry, whose `list_products`
/// output schema is the offer list's schema.
pub fn openapi(base: &str, tools: &[ToolSpec]) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{SERVICE_NAME} agent API"),
            "version": VERSION,
            "summary": SUMMARY,
            "description": "Anonymous API for AI agents; buying ends on Stripe's hosted checkout page. Limit: one request per second per client (HTTP 429 with Retry-After above it). Optional Web Bot Auth signatures give a signed agent its own limit.",
            "contact": {"url": format!("{base}/support")}
        },
        "servers": [{"url": base}],
        "paths": paths(),
        "components": {"schemas": schemas(tools)},
    })
}

/// Every path, by the part of the site that serves it.
fn paths() -> Value {
    let mut paths = site_paths();
    for more in [commerce_paths(), mcp_paths()] {
        if let (Some(all), Value::Object(more)) = (paths.as_object_mut(), more) {
            all.extend(more);
        }
    }
    paths
}

fn site_paths() -> Value {
    let too_many = too_many();
    json!({
        "/agent/site.json": {"get": {
            "operationId": "getSiteInfo",
            "summary": "Describe the service and link every discovery document.",
            "responses": {
                "200": {"description": "Service description.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SiteInfo"}}}},
                "429": too_many
            }
        }},
        "/agent/search": {"get": {
            "operationId": "searchPages",
            "summary": "Find pages whose path contains the given words (titles break ties).",
            "parameters": [
                {"name": "q", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}, "example": "away alerts"},
                {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT, "default": search::DEFAULT_LIMIT}}
            ],
            "responses": {
                "200": {"description": "Matching pages, best first.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SearchResults"}}}},
                "400": problem("No words in q, or limit out of range."),
                "429": too_many
            }
        }},
        "/agent/read": {"get": {
            "operationId": "readPage",
            "summary": "One site page as Markdown.",
            "parameters": [
                {"name": "path", "in": "query", "required": true, "schema": {"type": "string", "pattern": "^/"}, "example": "/pricing"}
            ],
            "responses": {
                "200": {"description": "The page.", "content": {"text/markdown": {"schema": {"type": "string"}}}},
                "400": problem("path missing."),
                "404": problem("No such page."),
                "429": too_many
            }
        }}
    })
}

fn commerce_paths() -> Value {
    let too_many = too_many();
    json!({
        "/agent/commerce/products": {"get": {
            "operationId": "listProducts",
            "summary": "Plans and hardware for sale, read live from Stripe (cached at most 60 s).",
            "responses": {
                "200": {"description": "The offers.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Products"}}}},
                "429": too_many,
                "503": problem("Stripe is unavailable; see Retry-After.")
            }
        }},
        "/agent/commerce/ucp/checkout-sessions": {"post": {
            "operationId": "ucpCreateCheckout",
            "summary": "UCP checkout (2026-04-08, or 2026-01-23 when the UCP-Agent profile says so) for one offer; answers requires_escalation with continue_url (pay on Stripe's hosted page). Also GET/PUT /{id}, POST /{id}/complete, POST /{id}/cancel.",
            "externalDocs": {"url": format!("https://ucp.dev/{}/specification/checkout", UCP_VERSION)},
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "maxLength": 255}},
                {"name": "UCP-Agent", "in": "header", "required": false, "description": "profile=\"https://…\": the platform's UCP profile; its ucp.version (2026-04-08 or 2026-01-23) picks the version answered.", "schema": {"type": "string"}}
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
            "responses": {
                "201": {"description": "UCP checkout object.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Checkout"}}}},
                "200": shaped("A business outcome without a checkout (unknown offer or checkout, out of stock, bad input, payment data sent): UCP's error response, ucp.status \"error\" and messages with code and severity.", "UcpErrorResponse"),
                "400": shaped("Body is not a JSON object, a malformed Idempotency-Key, or invalid_profile_url.", "UcpError"),
                "404": shaped("No such endpoint under the binding.", "UcpError"),
                "405": shaped("Method not allowed here (Allow header).", "UcpError"),
                "409": shaped("Idempotency-Key reused with another body, or still in flight.", "UcpError"),
                "413": shaped("Body over 256 KiB.", "UcpError"),
                "422": shaped("The UCP-Agent profile is malformed or speaks another UCP version (version_unsupported).", "UcpError"),
                "424": shaped("The UCP-Agent profile could not be fetched (profile_unreachable).", "UcpError"),
                "429": shaped("More than one request per second from this client (Retry-After).", "UcpError"),
                "502": shaped("Stripe refused the request.", "UcpError"),
                "503": shaped("Stripe is unavailable; see Retry-After.", "UcpError")
            }
        }},
        "/agent/commerce/acp/checkout_sessions": {"post": {
            "operationId": "acpCreateCheckout",
            "summary": "ACP checkout session (API-Version 2025-09-29 to 2026-04-17). Also GET/POST /{id}, POST /{id}/complete, POST /{id}/cancel.",
            "externalDocs": {"url": "https://www.agenticcommerce.dev/"},
            "parameters": [
                {"name": "API-Version", "in": "header", "required": true, "schema": {"enum": ACP_VERSIONS}},
                {"name": "Idempotency-Key", "in": "header", "required": true, "schema": {"type": "string", "maxLength": 255}}
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
            "responses": {
                "201": {"description": "ACP checkout session.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Checkout"}}}},
                "400": shaped("Missing or unsupported API-Version (with supported_versions), missing Idempotency-Key, malformed body, or payment credentials.", "AcpError"),
                "404": shaped("No such checkout session or endpoint.", "AcpError"),
                "405": shaped("Method not allowed, or cancel of a final session (Allow header).", "AcpError"),
                "409": shaped("Offer out of stock, items changed on update, completing a canceled session, or a request with this key is in flight.", "AcpError"),
                "413": shaped("Body over 256 KiB.", "AcpError"),
                "422": shaped("Unknown offer id, or Idempotency-Key reused with another body.", "AcpError"),
                "429": shaped("More than one request per second from this client (Retry-After).", "AcpError"),
                "502": shaped("Stripe refused the request.", "AcpError"),
                "503": shaped("Stripe is unavailable; see Retry-After.", "AcpError")
            }
        }}
    })
}

fn mcp_paths() -> Value {
    json!({
        "/mcp": {"post": {
            "operationId": "mcp",
            "summary": "MCP over Streamable HTTP (JSON-RPC 2.0; protocol 2025-11-25 and 2026-07-28).",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcRequest"}}}},
            "responses": {
                "200": {"description": "JSON-RPC response.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
                "202": {"description": "Notification accepted."},
                "400": {"description": "Protocol error (JSON-RPC error body).", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
                "403": shaped("Host or Origin not allowed (JSON-RPC error -32000).", "JsonRpcResponse"),
                "404": shaped("A method the stateless era removed or does not know (-32601).", "JsonRpcResponse"),
                "405": shaped("Only POST is supported (JSON-RPC error -32000).", "JsonRpcResponse"),
                "429": shaped("More than one request per second (JSON-RPC error -32000, data.retry_after).", "JsonRpcResponse")
            }
        }}
    })
}

fn schemas(tools: &[ToolSpec]) -> Value {
    json!({
        "Problem": problem_schema(),
        "SiteInfo": site_info_schema(),
        "SearchResults": search::results_schema(),
        "Products": tools
            .iter()
            .find(|t| t.name == "list_products")
            .map(|t| t.output_schema.clone())
            .unwrap_or_else(|| json!({"type": "object"})),
        "CheckoutRequest": {
            "type": "object",
            "description": "One offer, in any protocol's form: line_items or items, each {id, quantity?} or {item: {id}, quantity}.",
            "properties": {
                "line_items": {"type": "array", "minItems": 1, "maxItems": 1},
                "items": {"type": "array", "minItems": 1, "maxItems": 1},
                "buyer": {"type": "object", "properties": {"email": {"type": "string"}}},
                "currency": {"type": "string"}
            }
        },
        "Checkout": {
            "type": "object",
            "required": ["id", "status", "currency", "line_items", "totals", "links"],
            "properties": {
                "id": {"type": "string", "pattern": "^cs_"},
                "status": {"enum": ["requires_escalation", "not_ready_for_payment", "completed", "canceled", "expired"]},
                "continue_url": {"type": "string", "format": "uri"},
                "currency": {"type": "string"},
                "line_items": {"type": "array"},
                "totals": {"type": "array"},
                "messages": {"type": "array"},
                "links": {"type": "array"},
                "expires_at": {"type": "string"},
                "order": {"type": "object"}
            }
        },
        "AcpError": {
            "type": "object",
            "description": "ACP's flat Error object (the published schema per API version is authoritative).",
            "required": ["type", "code", "message"],
            "properties": {
                "type": {"enum": ["invalid_request", "processing_error", "service_unavailable"]},
                "code": {"type": "string"}, "message": {"type": "string"},
                "param": {"type": "string", "description": "RFC 9535 JSONPath"},
                "supported_versions": {"type": "array", "items": {"type": "string"}}
            }
        },
        "UcpError": {
            "type": "object",
            "description": "UCP 2026-04-08 protocol error {code, content}; under 2026-01-23 every failure is {status: requires_escalation, messages}.",
            "anyOf": [{"required": ["code", "content"]}, {"required": ["status", "messages"]}],
            "properties": {"code": {"type": "string"}, "content": {"type": "string"}, "continue_url": {"type": "string"}, "status": {"const": "requires_escalation"}, "messages": {"type": "array", "minItems": 1}}
        },
        "UcpErrorResponse": {
            "type": "object",
            "description": "UCP error response (schemas/shopping/types/error_response.json).",
            "required": ["ucp", "messages"],
            "properties": {
                "ucp": {"type": "object", "required": ["version", "status"], "properties": {"status": {"const": "error"}}},
                "messages": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["type", "code", "content", "severity"]}},
                "continue_url": {"type": "string"}
            }
        },
        "JsonRpcRequest": {
            "type": "object",
            "required": ["jsonrpc", "method"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": ["string", "integer"]},
                "method": {"type": "string"},
                "params": {"type": "object"}
            }
        },
        "JsonRpcResponse": {
            "type": "object",
            "required": ["jsonrpc"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": ["string", "integer"]},
                "result": {"type": "object"},
                "error": {"type": "object", "required": ["code", "message"], "properties": {
                    "code": {"type": "integer"}, "message": {"type": "string"}, "data": {}
                }}
            }
        }
    })
}
