//! The HTTP request a tool run sends: its argument groups mapped onto the operation's path,
//! query, headers and body, and the connection's credentials injected the way the operation's
//! security schemes ask. Catalog tools (through the [`crate::executor::Executor`]) and custom
//! REST connectors ([`prepare_request`]) share it, so both map arguments identically.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use catalog_core::{AuthKind, AuthScheme, Method};
use platform_domain::apps::Operation;
use platform_domain::connections::{AuthMethod, Credentials};
use platform_domain::validation::FieldError;
use serde_json::{Map, Value};

use crate::outbound::Outbound;

/// Upstream error bodies are passed back up to this many characters.
const MAX_UPSTREAM_BODY: usize = 2000;
/// `retry_after` when a rate-limited upstream does not say.
pub(crate) const DEFAULT_RETRY_AFTER: u64 = 60;
/// Headers a tool's arguments may never set: credentials and transport framing are ours.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
];

/// Percent-encodes a path segment (RFC 3986 unreserved characters stay).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Bracket notation for nested values (`metadata[plan]=pro`, `items[0][price]=x`), as form
/// bodies of Stripe-style APIs and deepObject query parameters expect.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, inner) in m {
                flatten(&format!("{prefix}[{k}]"), inner, out);
            }
        }
        Value::Array(a) => {
            for (i, inner) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), inner, out);
            }
        }
        Value::Null => {}
        other => out.push((prefix.to_owned(), scalar(other))),
    }
}

/// The HTTP request a run sends, before credentials.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) url: url::Url,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<(String, Vec<u8>)>,
}

fn invalid(pointer: &str, detail: impl Into<String>) -> FieldError {
    FieldError::new(pointer, detail)
}

/// Names declared in one group (`path`, `query`, `header`) of the input schema.
fn declared<'a>(schema: &'a Value, group: &str) -> Option<&'a Map<String, Value>> {
    schema
        .pointer(&format!("/properties/{group}/properties"))
        .and_then(Value::as_object)
}

/// The HTTP request: method, URL, the platform's `Accept` and `User-Agent`, then `headers`,
/// cookies and body. `None` for a method `http` cannot express.
pub(crate) fn assemble(
    outbound: &Outbound,
    method: Method,
    url: url::Url,
    headers: Vec<(String, String)>,
    cookies: Vec<String>,
    body: Option<(String, Vec<u8>)>,
) -> Option<reqwest::RequestBuilder> {
    let method = http::Method::from_bytes(method.as_str().as_bytes()).ok()?;
    let mut rb = outbound
        .client()
        .request(method, url.as_str())
        .header(http::header::ACCEPT, "application/json")
        .header(
            http::header::USER_AGENT,
            concat!("companion-platform/", env!("CARGO_PKG_VERSION")),
        );
    for (k, v) in headers {
        rb = rb.header(k, v);
    }
    if !cookies.is_empty() {
        rb = rb.header(http::header::COOKIE, cookies.join("; "));
    }
    if let Some((media, bytes)) = body {
        rb = rb.header(http::header::CONTENT_TYPE, media).body(bytes);
    }
    Some(rb)
}

/// The request for an operation called without a connection: custom REST connectors, whose
/// own (opened) `fixed_headers` carry their credentials and win over argument headers. The same
/// mapping of argument groups to path, query, headers and body as catalog tools.
pub fn prepare_request(
    outbound: &Outbound,
    method: Method,
    path: &str,
    base_url: &str,
    schema: &Value,
    args: &Value,
    fixed_headers: &[(String, String)],
) -> Result<reqwest::RequestBuilder, Vec<FieldError>> {
    let op = Operation {
        tool: String::new(),
        app: String::new(),
        method,
        path: path.to_owned(),
        security: Vec::new(),
        server_url: None,
    };
    let built = build(&op, base_url, schema, args)?;
    let mut headers = built.headers;
    headers.retain(|(k, _)| !fixed_headers.iter().any(|(f, _)| f.eq_ignore_ascii_case(k)));
    headers.extend(fixed_headers.iter().cloned());
    assemble(outbound, method, built.url, headers, Vec::new(), built.body)
        .ok_or_else(|| vec![invalid("", "the operation's HTTP method is not supported")])
}

/// The request for `op` with `args` (grouped as in its input `schema`) against `base_url`, or
/// every problem with the arguments.
pub(crate) fn build(
    op: &Operation,
    base_url: &str,
    schema: &Value,
    args: &Value,
) -> Result<Built, Vec<FieldError>> {
    let mut errors = Vec::new();
    let path = build_path(&op.path, args, &mut errors);
    let joined = format!("{}{}", base_url.trim_end_matches('/'), path);
    let mut url = match url::Url::parse(&joined) {
        Ok(u) => u,
        Err(e) => {
            errors.push(invalid("/path", format!("the request URL is invalid: {e}")));
            return Err(errors);
        }
    };
    let pairs = build_query(schema, args);
    if !pairs.is_empty() {
        url.query_pairs_mut().extend_pairs(pairs);
    }
    let headers = build_headers(schema, args, &mut errors);
    let body = build_body(op.method, schema, args, &mut errors);
    if errors.is_empty() {
        Ok(Built { url, headers, body })
    } else {
        Err(errors)
    }
}

/// Every `{name}` of the path template, from `arguments.path`, percent-encoded.
fn build_path(template: &str, args: &Value, errors: &mut Vec<FieldError>) -> String {
    let values = args.get("path").and_then(Value::as_object);
    let mut path = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        path.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            break;
        };
        let name = &after[..end];
        match values.and_then(|g| g.get(name)) {
            Some(v) if !scalar(v).is_empty() => path.push_str(&encode_segment(&scalar(v))),
            _ => errors.push(invalid(
                &format!("/path/{name}"),
                format!("the path parameter {name:?} is required"),
            )),
        }
        rest = &after[end + 1..];
    }
    path.push_str(rest);
    path
}

/// Query pairs: only parameters the operation declares; arrays repeat the name, objects use
/// brackets.
fn build_query(schema: &Value, args: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let (Some(q), Some(names)) = (
        args.get("query").and_then(Value::as_object),
        declared(schema, "query"),
    ) else {
        return pairs;
    };
    for (k, v) in q {
        if !names.contains_key(k) {
            continue;
        }
        match v {
            Value::Array(items) => {
                for item in items {
                    pairs.push((k.clone(), scalar(item)));
                }
            }
            Value::Object(_) => flatten(k, v, &mut pairs),
            Value::Null => {}
            other => pairs.push((k.clone(), scalar(other))),
        }
    }
    pairs
}

/// Headers the operation declares, except those the platform sets itself.
fn build_headers(
    schema: &Value,
    args: &Value,
    errors: &mut Vec<FieldError>,
) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    let (Some(h), Some(names)) = (
        args.get("header").and_then(Value::as_object),
        declared(schema, "header"),
    ) else {
        return headers;
    };
    for (k, v) in h {
        if !names.contains_key(k) {
            continue;
        }
        let lower = k.to_ascii_lowercase();
        if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("proxy-") {
            errors.push(invalid(
                &format!("/header/{k}"),
                "this header is set by the platform",
            ));
            continue;
        }
        let value = scalar(v);
        if http::HeaderValue::from_str(&value).is_err() {
            errors.push(invalid(
                &format!("/header/{k}"),
                "not a valid header value (control characters?)",
            ));
            continue;
        }
        headers.push((k.clone(), value));
    }
    headers
}

/// The body in the operation's media type: JSON, a form (with brackets for nesting), or text.
fn build_body(
    method: Method,
    schema: &Value,
    args: &Value,
    errors: &mut Vec<FieldError>,
) -> Option<(String, Vec<u8>)> {
    let b = match args.get("body") {
        None | Some(Value::Null) => return None,
        // Specs such as Stripe's give GETs an (empty) body schema; nothing is sent.
        Some(_) if matches!(method, Method::Get | Method::Head) => return None,
        Some(b) => b,
    };
    let media = schema
        .pointer("/properties/body/x-content-type")
        .and_then(Value::as_str)
        .unwrap_or("application/json");
    if media == "application/x-www-form-urlencoded" {
        let mut pairs = Vec::new();
        match b {
            Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        Value::Object(_) | Value::Array(_) => flatten(k, v, &mut pairs),
                        Value::Null => {}
                        other => pairs.push((k.clone(), scalar(other))),
                    }
                }
            }
            _ => errors.push(invalid("/body", "a form body must be an object")),
        }
        let encoded = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        (!encoded.is_empty()).then(|| (media.to_owned(), encoded.into_bytes()))
    } else if media.contains("json") {
        Some((media.to_owned(), b.to_string().into_bytes()))
    } else if let Value::String(text) = b {
        Some((media.to_owned(), text.clone().into_bytes()))
    } else {
        errors.push(invalid(
            "/body",
            format!("this operation takes {media}; give the body as a string"),
        ));
        None
    }
}

/// How a credential satisfies one scheme.
pub(crate) enum Placement {
    Header(String, String),
    Query(String, String),
    Cookie(String, String),
}

fn place(scheme: &AuthScheme, creds: &Credentials, key_as_user: bool) -> Option<Placement> {
    let secret = &creds.secret;
    let token = secret.access_token.as_deref().or(secret.api_key.as_deref());
    let bearer = |t: &str| Placement::Header("authorization".into(), format!("Bearer {t}"));
    match (&scheme.kind, creds.connection.auth) {
        (
            AuthKind::ApiKey {
                location,
                param,
                prefix,
            },
            AuthMethod::ApiKey | AuthMethod::OAuth2,
        ) => {
            let t = format!("{}{}", prefix.as_deref().unwrap_or(""), token?);
            Some(match location.as_str() {
                "query" => Placement::Query(param.clone(), t),
                "cookie" => Placement::Cookie(param.clone(), t),
                _ => Placement::Header(param.clone(), t),
            })
        }
        (AuthKind::Http { scheme }, AuthMethod::Basic) if scheme == "basic" => {
            let pair = format!(
                "{}:{}",
                secret.username.as_deref().unwrap_or(""),
                secret.password.as_deref().unwrap_or("")
            );
            Some(Placement::Header(
                "authorization".into(),
                format!("Basic {}", STANDARD.encode(pair)),
            ))
        }
        // A pasted key doubles as the Basic user name (Stripe's documented form).
        (AuthKind::Http { scheme }, AuthMethod::ApiKey) if scheme == "basic" && key_as_user => {
            Some(Placement::Header(
                "authorization".into(),
                format!("Basic {}", STANDARD.encode(format!("{}:", token?))),
            ))
        }
        (AuthKind::Http { scheme }, AuthMethod::ApiKey | AuthMethod::OAuth2)
            if scheme != "basic" =>
        {
            token.map(bearer)
        }
        (
            AuthKind::OAuth2 { .. } | AuthKind::OpenIdConnect { .. },
            AuthMethod::OAuth2 | AuthMethod::ApiKey,
        ) => token.map(bearer),
        _ => None,
    }
}

/// The placements of the first security alternative the connection satisfies completely
/// (a pasted key goes as a bearer token or named key before it goes as a Basic user name);
/// failing that, of the schemes it satisfies at all; failing that, a bearer token.
pub(crate) fn placements(security: &[Vec<AuthScheme>], creds: &Credentials) -> Vec<Placement> {
    for key_as_user in [false, true] {
        for alt in security {
            let placed: Option<Vec<Placement>> =
                alt.iter().map(|s| place(s, creds, key_as_user)).collect();
            if let Some(p) = placed
                && !p.is_empty()
            {
                return p;
            }
        }
    }
    for alt in security {
        let placed: Vec<Placement> = alt.iter().filter_map(|s| place(s, creds, true)).collect();
        if !placed.is_empty() {
            return placed;
        }
    }
    match creds
        .secret
        .access_token
        .as_deref()
        .or(creds.secret.api_key.as_deref())
    {
        Some(t) => vec![Placement::Header(
            "authorization".into(),
            format!("Bearer {t}"),
        )],
        None => Vec::new(),
    }
}

pub(crate) fn retry_after(headers: &http::HeaderMap, now_ms: i64) -> u64 {
    let Some(v) = headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
    else {
        return DEFAULT_RETRY_AFTER;
    };
    if let Ok(s) = v.trim().parse::<u64>() {
        return s;
    }
    // An HTTP date.
    jiff::fmt::rfc2822::parse(v.trim())
        .ok()
        .map(|z| z.timestamp().as_millisecond())
        .map(|at| u64::try_from((at - now_ms).max(0) / 1000).unwrap_or(0))
        .unwrap_or(DEFAULT_RETRY_AFTER)
}

pub(crate) fn response_data(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

pub(crate) fn short(v: Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > MAX_UPSTREAM_BODY => {
            Value::String(s.chars().take(MAX_UPSTREAM_BODY).collect())
        }
        v if v.to_string().len() > MAX_UPSTREAM_BODY => {
            Value::String(v.to_string().chars().take(MAX_UPSTREAM_BODY).collect())
        }
        v => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(path: &str) -> Operation {
        Operation {
            tool: "t".into(),
            app: "a".into(),
            method: Method::Post,
            path: path.into(),
            security: Vec::new(),
            server_url: None,
        }
    }

    #[test]
    fn arguments_map_to_path_query_header_and_form_body() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "object", "properties": {"id": {"type": "string"}}},
            "query": {"type": "object", "properties": {"expand": {"type": "array"}, "limit": {"type": "integer"}}},
            "header": {"type": "object", "properties": {"Idempotency-Key": {"type": "string"}}},
            "body": {"type": "object", "x-content-type": "application/x-www-form-urlencoded"}}});
        let args = json!({
            "path": {"id": "a b/c"},
            "query": {"expand": ["x", "y"], "limit": 3, "undeclared": 1},
            "header": {"Idempotency-Key": "k1"},
            "body": {"mode": "payment", "line_items": [{"price": "p1", "quantity": 2}],
                     "metadata": {"plan": "pro"}}});
        let b = build(
            &op("/v1/things/{id}"),
            "https://api.example.com/",
            &schema,
            &args,
        )
        .unwrap();
        assert_eq!(
            b.url.as_str(),
            "https://api.example.com/v1/things/a%20b%2Fc?expand=x&expand=y&limit=3"
        );
        assert_eq!(
            b.headers,
            vec![("Idempotency-Key".to_owned(), "k1".to_owned())]
        );
        let (media, body) = b.body.unwrap();
        assert_eq!(media, "application/x-www-form-urlencoded");
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "line_items%5B0%5D%5Bprice%5D=p1&line_items%5B0%5D%5Bquantity%5D=2&metadata%5Bplan%5D=pro&mode=payment"
        );
    }

    #[test]
    fn missing_path_values_and_reserved_headers_are_argument_errors() {
        let schema = json!({"type": "object", "properties": {
            "header": {"type": "object", "properties": {"Authorization": {"type": "string"}}}}});
        let errs = build(
            &op("/x/{id}"),
            "https://api.example.com",
            &schema,
            &json!({"header": {"Authorization": "Bearer stolen"}}),
        )
        .unwrap_err();
        let pointers: Vec<&str> = errs.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(pointers, ["/path/id", "/header/Authorization"]);
    }

    #[test]
    fn retry_after_reads_seconds_or_a_date() {
        let mut h = http::HeaderMap::new();
        assert_eq!(retry_after(&h, 0), DEFAULT_RETRY_AFTER);
        h.insert(http::header::RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&h, 0), 7);
        h.insert(
            http::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h, 1_445_412_470_000), 10);
    }
}
