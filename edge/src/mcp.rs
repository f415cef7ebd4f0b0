//! The MCP server at `POST /mcp`: JSON-RPC 2.0 over Streamable HTTP (JSON responses only, no
//! sessions), serving both the 2025-11-25 handshake era and the stateless 2026-07-28 era on one
//! endpoint. The era is picked per request, so no state is kept between requests and any
//! Worker instance can answer any message.

use crate::config::Config;
use crate::meta::{
    MCP_LEGACY_VERSION as LEGACY_VERSION, MCP_MODERN_VERSION as MODERN_VERSION, SERVER_NAME,
    SERVICE_NAME, VERSION,
};
use crate::reply::Reply;
use crate::request::{Request, host_name};
use crate::tool::{ToolBox, ToolOutcome};
use serde_json::{Map, Value, json};

/// Handshake-era revisions a client may request; the first is preferred.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// What `server/discover` and the unsupported-version error advertise, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[MODERN_VERSION, LEGACY_VERSION];

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// How long a modern client may cache list results (tools change only with a deploy).
const LIST_TTL_MS: u64 = 300_000;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC's implementation-defined server error, for refusals at the HTTP layer.
pub const SERVER_ERROR: i64 = -32000;
pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_VERSION: i64 = -32022;

const INSTRUCTIONS: &str = "Tools for the presence-sensing website: call site_info first, \
    search_pages to find pages by words in their path, read_page to get one as Markdown. To \
    buy: list_products, then create_checkout for one offer id and give the person the \
    continue_url (they pay on the hosted page), then get_checkout to follow it. Never send \
    payment details. Stay under one request per second.";

/// Which protocol era a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

/// A JSON-RPC error on its way to the client, with the HTTP status it travels with.
#[derive(Debug, Clone, PartialEq)]
struct RpcError {
    http: u16,
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(http: u16, code: i64, message: impl Into<String>) -> Self {
        Self {
            http,
            code,
            message: message.into(),
            data: None,
        }
    }
}

fn json_reply(status: u16, body: &Value) -> Reply {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| {
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
            .to_vec()
    });
    Reply::new(status, "application/json", bytes)
}

/// A JSON-RPC error response. An id we could not read is left out (the schema allows a
/// string or an integer, not `null`).
fn error_reply(id: &Value, e: RpcError) -> Reply {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(data) = e.data {
        error["data"] = data;
    }
    let mut body = json!({"jsonrpc": "2.0", "error": error});
    if !id.is_null() {
        body["id"] = id.clone();
    }
    json_reply(e.http, &body)
}

/// A refusal before the message is handled (rate limit, size limit, Host/Origin, method) as a
/// JSON-RPC error with code -32000, carrying the request's id when its body has one and
/// `data.retry_after` when the client should wait.
pub fn refusal(body: &[u8], status: u16, message: &str, retry_after: Option<u64>) -> Reply {
    let id = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|m| m.get("id").filter(|i| i.is_string() || i.is_i64()).cloned())
        .unwrap_or(Value::Null);
    let mut e = RpcError::new(status, SERVER_ERROR, message);
    e.data = retry_after.map(|s| json!({"retry_after": s}));
    error_reply(&id, e)
}

/// Checks `Host` and `Origin` against the allow list (DNS-rebinding protection). A missing
/// `Origin` is fine: non-browser clients do not send one.
pub fn check_origin(req: &Request, cfg: &Config) -> Result<(), Reply> {
    let host = req.header("host").unwrap_or(&req.authority);
    if !cfg.host_allowed(host) {
        let msg = format!("Forbidden: Host {host} is not served here.");
        return Err(refusal(&req.body, 403, &msg, None));
    }
    if let Some(origin) = req.header("origin") {
        let origin_host = origin.split_once("://").map(|(_, rest)| rest).unwrap_or("");
        if host_name(origin_host).is_empty() || !cfg.host_allowed(origin_host) {
            let msg = format!("Forbidden: Origin {origin} may not call this MCP server.");
            return Err(refusal(&req.body, 403, &msg, None));
        }
    }
    Ok(())
}

/// Handles one HTTP request to `/mcp`.
pub async fn handle<T: ToolBox>(req: &Request, cfg: &Config, tools: &T) -> Reply {
    if req.method != "POST" {
        let msg = "Method not allowed: this MCP server answers POST only; it opens no SSE \
                   stream and keeps no session.";
        return refusal(&[], 405, msg, None).with_header("allow", "POST, OPTIONS");
    }
    if let Err(reply) = check_origin(req, cfg) {
        return reply;
    }
    let (id, method, params) = match read_message(&req.body) {
        Ok(Some(call)) => call,
        Ok(None) => return Reply::empty(202),
        Err(reply) => return reply,
    };
    let era = match pick_era(req, &method, &params) {
        Ok(era) => era,
        Err(e) => return error_reply(&id, e),
    };
    match dispatch(era, &method, &params, tools).await {
        Ok(mut result) => {
            if era == Era::Modern
                && let Some(r) = result.as_object_mut()
            {
                r.insert("resultType".into(), json!("complete"));
            }
            json_reply(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        Err(e) => error_reply(&id, e),
    }
}

/// Reads one JSON-RPC message: a request as `(id, method, params)`; `None` for a notification
/// or a response (they get 202 and no body); the error answer for anything malformed.
fn read_message(body: &[u8]) -> Result<Option<(Value, String, Value)>, Reply> {
    let msg: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Err(error_reply(
                &Value::Null,
                RpcError::new(400, PARSE_ERROR, format!("Parse error: {e}")),
            ));
        }
    };
    let Some(obj) = msg.as_object() else {
        return Err(error_reply(
            &Value::Null,
            RpcError::new(
                400,
                INVALID_REQUEST,
                "Expected one JSON-RPC object (no batches)",
            ),
        ));
    };
    let id = obj.get("id").cloned();
    let id_or_null = id.clone().unwrap_or(Value::Null);
    let invalid =
        |message: &str| error_reply(&id_or_null, RpcError::new(400, INVALID_REQUEST, message));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        if obj.contains_key("result") || obj.contains_key("error") {
            // A response to a server request; we send none, so just acknowledge it.
            return Ok(None);
        }
        return Err(invalid("method is required"));
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => return Err(invalid("params must be an object")),
    };
    let Some(id) = id else {
        // Notifications (notifications/initialized, cancelled, ...) need no answer.
        return Ok(None);
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Err(error_reply(
            &Value::Null,
            RpcError::new(400, INVALID_REQUEST, "id must be a string or an integer"),
        ));
    }
    Ok(Some((id, method.to_string(), params)))
}

/// Picks the era of one request and validates its version headers (see the module docs).
fn pick_era(req: &Request, method: &str, params: &Value) -> Result<Era, RpcError> {
    let header = req.header("mcp-protocol-version").map(str::trim);
    let meta = params.get("_meta");
    let meta_version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    // `initialize` starts the handshake era, unless the request speaks the stateless era (which
    // removed it: it is then an unknown method there).
    if method == "initialize" && meta_version.is_none() && header != Some(MODERN_VERSION) {
        return Ok(Era::Legacy);
    }
    if meta_version.is_none() && header != Some(MODERN_VERSION) {
        return match header {
            Some(v) if !LEGACY_VERSIONS.contains(&v) => Err(RpcError::new(
                400,
                INVALID_REQUEST,
                format!("Unsupported MCP-Protocol-Version {v}"),
            )),
            _ => Ok(Era::Legacy),
        };
    }
    let Some(version) = meta_version else {
        return Err(RpcError::new(
            400,
            INVALID_PARAMS,
            format!("params._meta[\"{META_VERSION}\"] is required with protocol {MODERN_VERSION}"),
        ));
    };
    if let Some(h) = header
        && h != version
    {
        return Err(RpcError::new(
            400,
            HEADER_MISMATCH,
            format!("MCP-Protocol-Version header {h} does not match _meta version {version}"),
        ));
    }
    if version != MODERN_VERSION {
        let mut e = RpcError::new(400, UNSUPPORTED_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": SUPPORTED_VERSIONS, "requested": version}));
        return Err(e);
    }
    if meta.and_then(|m| m.get(META_CAPABILITIES)).is_none() {
        return Err(RpcError::new(
            400,
            INVALID_PARAMS,
            format!("params._meta[\"{META_CAPABILITIES}\"] is required"),
        ));
    }
    check_modern_headers(req, method, params)?;
    Ok(Era::Modern)
}

/// The stateless era's routing headers: `Mcp-Method` always, `Mcp-Name` for `tools/call`; each
/// must repeat what the body says.
fn check_modern_headers(req: &Request, method: &str, params: &Value) -> Result<(), RpcError> {
    match req.header("mcp-method") {
        Some(m) if m == method => {}
        Some(m) => {
            return Err(RpcError::new(
                400,
                HEADER_MISMATCH,
                format!("Mcp-Method header {m} does not match method {method}"),
            ));
        }
        None => {
            return Err(RpcError::new(
                400,
                HEADER_MISMATCH,
                "Mcp-Method header is required",
            ));
        }
    }
    if method == "tools/call" {
        let name = params.get("name").and_then(Value::as_str);
        match (req.header("mcp-name"), name) {
            (Some(h), Some(n)) if h == n => {}
            (None, _) => {
                return Err(RpcError::new(
                    400,
                    HEADER_MISMATCH,
                    "Mcp-Name header is required for tools/call",
                ));
            }
            (Some(h), _) => {
                return Err(RpcError::new(
                    400,
                    HEADER_MISMATCH,
                    format!("Mcp-Name header {h} does not match params.name"),
                ));
            }
        }
    }
    Ok(())
}

fn server_info() -> Value {
    json!({
        "name": SERVER_NAME,
        "title": SERVICE_NAME,
        "version": VERSION,
    })
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

async fn dispatch<T: ToolBox>(
    era: Era,
    method: &str,
    params: &Value,
    tools: &T,
) -> Result<Value, RpcError> {
    // The stateless era removed the handshake and the per-connection utilities.
    let removed = matches!(method, "initialize" | "ping" | "logging/setLevel");
    match method {
        _ if era == Era::Modern && removed => Err(RpcError::new(
            404,
            METHOD_NOT_FOUND,
            format!("Method not found: {method} (removed in {MODERN_VERSION})"),
        )),
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let version = requested
                .filter(|v| LEGACY_VERSIONS.contains(v))
                .unwrap_or(LEGACY_VERSION);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }))
        }
        "server/discover" => Ok(json!({
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": capabilities(),
            "instructions": INSTRUCTIONS,
            "_meta": {META_SERVER_INFO: server_info()},
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        })),
        "ping" => Ok(json!({})),
        "tools/list" => {
            let list: Vec<Value> = tools.specs().iter().map(|s| s.to_json()).collect();
            let mut result = json!({"tools": list});
            if era == Era::Modern {
                result["ttlMs"] = json!(LIST_TTL_MS);
                result["cacheScope"] = json!("public");
            }
            Ok(result)
        }
        "tools/call" => call_tool(params, tools).await,
        _ => Err(RpcError::new(
            if era == Era::Modern { 404 } else { 200 },
            METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}

async fn call_tool<T: ToolBox>(params: &Value, tools: &T) -> Result<Value, RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::new(
            200,
            INVALID_PARAMS,
            "params.name (the tool) is required",
        ));
    };
    let empty = Value::Object(Map::new());
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(a @ Value::Object(_)) => a,
        Some(_) => {
            return Err(RpcError::new(
                200,
                INVALID_PARAMS,
                "params.arguments must be an object",
            ));
        }
    };
    match tools.call(name, args).await {
        None => Err(RpcError::new(
            200,
            INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )),
        Some(ToolOutcome::Ok(value)) => {
            let text = serde_json::to_string(&value)
                .map_err(|e| RpcError::new(500, INTERNAL_ERROR, e.to_string()))?;
            Ok(json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": value,
                "isError": false,
            }))
        }
        Some(ToolOutcome::Error(message)) => Ok(json!({
            "content": [{"type": "text", "text": message}],
            "isError": true,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commerce::Offline;
    use crate::registry::Registry;
    use crate::testing::block_on;

    fn cfg() -> Config {
        Config::from_vars(
            Some("https://presence.example".into()),
            Some("localhost,127.0.0.1".into()),
            None,
            None,
        )
    }

    fn post(body: Value) -> Request {
        Request::new("POST", "/mcp")
            .with_header("host", "localhost:8787")
            .with_header("content-type", "application/json")
            .with_body(serde_json::to_vec(&body).expect("json"))
    }

    fn run(req: &Request) -> (u16, Value) {
        let c = cfg();
        let tools = Registry::get().serve("https://presence.example", &c, &Offline);
        let reply = block_on(handle(req, &c, &tools));
        let body = if reply.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&reply.body).expect("json body")
        };
        (reply.status, body)
    }

    fn modern(method: &str, params: Value) -> Request {
        let mut p = params;
        p["_meta"] = json!({META_VERSION: MODERN_VERSION, META_CAPABILITIES: {}});
        post(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": p}))
            .with_header("mcp-protocol-version", MODERN_VERSION)
            .with_header("mcp-method", method)
    }

    #[test]
    fn legacy_handshake() {
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(b["result"]["serverInfo"]["name"], crate::meta::SERVER_NAME);
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"protocolVersion": "1999-01-01"}}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["protocolVersion"], LEGACY_VERSION);
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ));
        assert_eq!((s, b), (202, Value::Null));
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["result"], json!({}));
        assert_eq!(b["id"], "p");
    }

    #[test]
    fn legacy_tools_list_and_call() {
        let (_, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ));
        let names: Vec<_> = b["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            [
                "site_info",
                "search_pages",
                "read_page",
                "list_products",
                "create_checkout",
                "get_checkout"
            ]
        );
        assert!(b["result"].get("resultType").is_none());
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search_pages", "arguments": {"query": "pricing"}}}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["isError"], false);
        assert_eq!(
            b["result"]["structuredContent"]["results"][0]["path"],
            "/pricing"
        );
        let text = b["result"]["content"][0]["text"].as_str().expect("text");
        let copy: Value = serde_json::from_str(text).expect("text is JSON");
        assert_eq!(copy, b["result"]["structuredContent"]);
    }

    #[test]
    fn tool_input_errors_are_results_and_unknown_tools_are_protocol_errors() {
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_page", "arguments": {}}}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["isError"], true);
        let (s, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "nope"}}),
        ));
        assert_eq!(s, 200);
        assert_eq!(b["error"]["code"], INVALID_PARAMS);
        let (_, b) = run(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_page", "arguments": [1]}}),
        ));
        assert_eq!(b["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn protocol_errors() {
        let (s, b) = run(&post(json!(null)).with_body("{nope"));
        assert_eq!((s, b["error"]["code"].as_i64()), (400, Some(PARSE_ERROR)));
        let (s, b) = run(&post(
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        ));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(INVALID_REQUEST))
        );
        let (s, b) = run(&post(json!({"jsonrpc": "1.0", "id": 1, "method": "ping"})));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(INVALID_REQUEST))
        );
        let (s, b) = run(&post(json!({"jsonrpc": "2.0", "id": 1, "method": "nope"})));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (200, Some(METHOD_NOT_FOUND))
        );
        let (s, _) = run(&post(json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
        assert_eq!(s, 202);
        let (s, _) = run(&post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .with_header("mcp-protocol-version", "1999-01-01"));
        assert_eq!(s, 400);
    }

    #[test]
    fn modern_discover_list_and_call() {
        let (s, b) = run(&modern("server/discover", json!({})));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["resultType"], "complete");
        assert_eq!(b["result"]["supportedVersions"], json!(SUPPORTED_VERSIONS));
        assert_eq!(
            b["result"]["_meta"][META_SERVER_INFO]["name"],
            crate::meta::SERVER_NAME
        );
        let (_, b) = run(&modern("tools/list", json!({})));
        assert_eq!(b["result"]["resultType"], "complete");
        assert_eq!(b["result"]["ttlMs"], LIST_TTL_MS);
        let (s, b) = run(&modern("tools/call", json!({"name": "site_info"}))
            .with_header("mcp-name", "site_info"));
        assert_eq!(s, 200);
        assert_eq!(b["result"]["structuredContent"]["name"], "Presence sensing");
        let (s, b) = run(&modern("nope/nope", json!({})));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (404, Some(METHOD_NOT_FOUND))
        );
    }

    #[test]
    fn modern_header_rules() {
        // Mcp-Method disagrees with the body.
        let mut r = modern("tools/list", json!({}));
        r.headers.retain(|(n, _)| n != "mcp-method");
        let (s, b) = run(&r.clone().with_header("mcp-method", "ping"));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(HEADER_MISMATCH))
        );
        // Version header disagrees with _meta.
        let mut r = modern("ping", json!({}));
        r.headers.retain(|(n, _)| n != "mcp-protocol-version");
        let (s, b) = run(&r.with_header("mcp-protocol-version", "2025-11-25"));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(HEADER_MISMATCH))
        );
        // Modern header without _meta.
        let (s, b) = run(&post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .with_header("mcp-protocol-version", MODERN_VERSION));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(INVALID_PARAMS))
        );
        // Unknown version in _meta.
        let r = post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping",
            "params": {"_meta": {META_VERSION: "2099-01-01", META_CAPABILITIES: {}}}}));
        let (s, b) = run(&r);
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(UNSUPPORTED_VERSION))
        );
        assert_eq!(b["error"]["data"]["requested"], "2099-01-01");
        // Mcp-Name must name the tool.
        let (s, b) = run(&modern("tools/call", json!({"name": "site_info"}))
            .with_header("mcp-name", "read_page"));
        assert_eq!(
            (s, b["error"]["code"].as_i64()),
            (400, Some(HEADER_MISMATCH))
        );
    }

    #[test]
    fn http_rules() {
        let r = Request::new("GET", "/mcp").with_header("host", "localhost");
        let c = cfg();
        let reply = block_on(handle(&r, &c, &Registry::get().serve("", &c, &Offline)));
        assert_eq!(reply.status, 405);
        let evil = post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        let mut evil_host = evil.clone();
        evil_host.headers.retain(|(n, _)| n != "host");
        let (s, _) = run(&evil_host.with_header("host", "evil.example.com"));
        assert_eq!(s, 403);
        let (s, _) = run(&evil
            .clone()
            .with_header("origin", "http://evil.example.com"));
        assert_eq!(s, 403);
        let (s, _) = run(&evil.with_header("origin", "http://localhost:8787"));
        assert_eq!(s, 200);
    }
}
