//! Reading one OpenAPI 3.x document (3.0 or 3.1, from the directory or a vendor) into what the
//! catalog keeps.
//!
//! Documents are read as `serde_json::Value`: typed OpenAPI crates reject a few percent of the
//! directory ("sequence where string expected"), and we only need a handful of fields.

use serde_json::{Map, Value, json};

use crate::model::{AuthKind, AuthScheme, Method, OAuthFlow, Server, ServerVariable};

use crate::html::plain_text;

/// Displayed description length (characters).
const DESCRIPTION_MAX: usize = 300;
/// Description characters that feed the search index beyond the summary.
const INDEX_DESCRIPTION_MAX: usize = 400;
const PARAM_DESCRIPTION_MAX: usize = 200;
/// `$ref`s followed per branch when inlining a body schema; deeper ones become a stub.
const REF_DEPTH: usize = 2;
const SCHEMA_DEPTH: usize = 6;
const MAX_PROPERTIES: usize = 80;
const MAX_INDEXED_PARAMS: usize = 40;

/// Parameter names that carry credentials; the platform injects them, so tools never ask.
const CREDENTIAL_PARAMS: &[&str] = &[
    "authorization",
    "token",
    "access_token",
    "oauth_token",
    "api_key",
    "apikey",
    "api-key",
    "x-api-key",
    "key",
];

pub struct Spec {
    pub provider: String,
    pub service: Option<String>,
    pub title: String,
    pub version: String,
    pub description: String,
    pub categories: Vec<String>,
    pub logo_url: Option<String>,
    pub license: Option<String>,
    /// Every absolute server of the document, its paths and its operations, the document's
    /// preferred production server first.
    pub servers: Vec<Server>,
    /// Index into `servers` of the document's own (top-level) server to call, when it has an
    /// absolute one.
    pub default_server: Option<u16>,
    /// Any server URL needs a user-specific host (self-hosted copies such as GHES).
    pub self_hosted: bool,
    pub auth: Vec<AuthScheme>,
    pub ops: Vec<Op>,
}

pub struct Op {
    pub method: Method,
    pub path: String,
    pub operation_id: Option<String>,
    pub description: String,
    /// Summary and tags, for the index.
    pub index_summary: String,
    /// Start of the long description, for the index.
    pub index_description: String,
    pub params: Vec<String>,
    pub input_schema: String,
    /// Alternatives of (scheme name, scopes) lists.
    pub security: Vec<Vec<(String, Vec<String>)>>,
    pub deprecated: bool,
    /// Index into `Spec::servers` of the server this operation is sent to.
    pub server: u16,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

pub fn parse(provider: &str, service: Option<&str>, doc: &Value) -> Spec {
    let info = doc.get("info").cloned().unwrap_or(Value::Null);
    let categories = info
        .get("x-apisguru-categories")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let top = doc.get("servers").and_then(Value::as_array);
    let mut servers = ServerList::default();
    let default_server = top.and_then(|list| servers.add_list(list));
    let self_hosted = top.is_some_and(|s| {
        s.iter().any(|srv| {
            str_at(srv, &["url"])
                .is_some_and(|u| u.contains("{hostname}") || u.contains("HOSTNAME"))
        })
    });
    let components = doc.get("components").cloned().unwrap_or(Value::Null);
    let auth_base = default_server.map(|i| servers.list[i as usize].resolve(&|_| None));
    let auth = parse_auth(&components, auth_base.as_deref());
    let hidden: Vec<String> = auth
        .iter()
        .filter_map(|a| match &a.kind {
            AuthKind::ApiKey { param, .. } => Some(param.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let global_security = doc.get("security").map(parse_security).unwrap_or_default();
    let resolver = Resolver { doc };

    let mut ops = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            let item = resolver.resolve(item);
            let shared = item.get("parameters").and_then(Value::as_array);
            let path_server = item
                .get("servers")
                .and_then(Value::as_array)
                .and_then(|l| servers.add_list(l))
                .or(default_server);
            let Some(item_map) = item.as_object() else {
                continue;
            };
            for (m, op) in item_map {
                let Some(method) = Method::parse(m) else {
                    continue;
                };
                let mut parsed = parse_op(
                    &resolver,
                    method,
                    path,
                    op,
                    shared,
                    &hidden,
                    &global_security,
                );
                let op_server = op
                    .get("servers")
                    .and_then(Value::as_array)
                    .and_then(|l| servers.add_list(l))
                    .or(path_server);
                match op_server {
                    Some(i) => parsed.server = i,
                    // No absolute server anywhere: the operation cannot be called.
                    None => continue,
                }
                ops.push(parsed);
            }
        }
    }
    ops.sort_by(|a, b| {
        a.path
            .cmp(&b.path)
            .then((a.method as u8).cmp(&(b.method as u8)))
    });

    Spec {
        provider: provider.to_string(),
        service: service.map(str::to_string),
        title: str_at(&info, &["title"])
            .unwrap_or(provider)
            .trim()
            .to_string(),
        version: str_at(&info, &["version"]).unwrap_or("").to_string(),
        description: truncate(
            &plain_text(str_at(&info, &["description"]).unwrap_or("")),
            DESCRIPTION_MAX,
        ),
        categories,
        logo_url: str_at(&info, &["x-logo", "url"]).map(str::to_string),
        license: str_at(&info, &["license", "name"])
            .or_else(|| str_at(&info, &["license", "identifier"]))
            .map(str::to_string),
        servers: servers.list,
        default_server,
        self_hosted,
        auth,
        ops,
    }
}

/// The servers met while reading a document, deduplicated, with the index of each.
#[derive(Default)]
struct ServerList {
    list: Vec<Server>,
}

impl ServerList {
    /// Adds a `servers` array and answers the index of the one to call: the first production
    /// server (PayPal lists its sandbox first; Intercom, Mailgun and SendGrid list the US or
    /// global region first, which is the right default). `None` when none is absolute.
    fn add_list(&mut self, list: &[Value]) -> Option<u16> {
        let parsed: Vec<Server> = list.iter().filter_map(parse_server).collect();
        let pick = parsed
            .iter()
            .position(|s| !is_non_production(&s.url))
            .or(if parsed.is_empty() { None } else { Some(0) })?;
        let mut chosen = None;
        for (k, server) in parsed.into_iter().enumerate() {
            let i = match self.list.iter().position(|s| *s == server) {
                Some(i) => i,
                None => {
                    self.list.push(server);
                    self.list.len() - 1
                }
            };
            if k == pick {
                chosen = Some(i as u16);
            }
        }
        chosen
    }
}

fn is_non_production(url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or("");
    [
        "sandbox",
        "staging",
        "test.",
        "-test",
        "mock",
        "localhost",
        "127.0.0.1",
        "example.com",
    ]
    .iter()
    .any(|w| host.contains(w))
}

/// A server of the document: `//host` URLs are `https:` (Postmark, Ticketmaster); relative URLs
/// and URLs with undeclared variables are dropped. Variable defaults that only say "put your
/// domain here" (`subdomain.okta.com`, `{yourOktaDomain}`) are not defaults.
fn parse_server(server: &Value) -> Option<Server> {
    let raw = server.get("url")?.as_str()?.trim();
    let url = match raw.strip_prefix("//") {
        Some(rest) => format!("https://{rest}"),
        None => raw.to_string(),
    };
    let variables: Vec<ServerVariable> = server
        .get("variables")
        .and_then(Value::as_object)
        .map(|vars| {
            vars.iter()
                .filter(|(k, _)| url.contains(&format!("{{{k}}}")))
                .map(|(k, v)| {
                    let default = v.get("default").map(|d| match d {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                    let values = v
                        .get("enum")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    let placeholder = k.to_ascii_lowercase().starts_with("your")
                        || default.as_deref().is_some_and(is_placeholder);
                    ServerVariable {
                        name: k.clone(),
                        default: if placeholder { None } else { default },
                        values,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let server = Server { url, variables };
    // Every `{name}` must be a declared variable, and the scheme must be fixed and absolute.
    let bare = server.resolve(&|_| Some("x".into()));
    let absolute = bare.starts_with("https://") || bare.starts_with("http://");
    (absolute && !bare.contains('{') && !server.url.starts_with('{')).then_some(server)
}

fn is_placeholder(default: &str) -> bool {
    let d = default.to_ascii_lowercase();
    d.contains("your") || d.contains("example") || d.starts_with("subdomain.") || d == "subdomain"
}

/// An OAuth URL: absolute as given, or resolved against the document's server (Okta and
/// Datadog `/oauth2/v1/token`, PayPal `/v1/oauth2/token`).
fn absolute_url(url: Option<&str>, base: Option<&str>) -> Option<String> {
    let url = url?.trim();
    if url.starts_with("https://") || url.starts_with("http://") {
        return Some(url.to_string());
    }
    let base = base?;
    let origin_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| base[start..].find('/').map(|j| start + j))
        .unwrap_or(base.len());
    if url.starts_with('/') {
        Some(format!("{}{url}", &base[..origin_end]))
    } else {
        Some(format!("{}/{url}", base.trim_end_matches('/')))
    }
}

fn parse_auth(components: &Value, base: Option<&str>) -> Vec<AuthScheme> {
    match components.get("securitySchemes").and_then(Value::as_object) {
        Some(schemes) => security_schemes(schemes, base),
        None => Vec::new(),
    }
}

/// OpenAPI `components.securitySchemes` → the catalog's schemes (unknown kinds are skipped);
/// relative OAuth URLs are resolved against `base`, the document's server.
pub fn security_schemes(schemes: &Map<String, Value>, base: Option<&str>) -> Vec<AuthScheme> {
    let mut out = Vec::new();
    for (name, s) in schemes {
        let kind = match str_at(s, &["type"]) {
            Some("apiKey") => AuthKind::ApiKey {
                location: str_at(s, &["in"]).unwrap_or("header").to_string(),
                param: str_at(s, &["name"]).unwrap_or("").to_string(),
                prefix: declared_prefix(str_at(s, &["description"]).unwrap_or("")),
            },
            Some("http") => AuthKind::Http {
                scheme: str_at(s, &["scheme"]).unwrap_or("").to_ascii_lowercase(),
            },
            Some("oauth2") => {
                let flows = s
                    .get("flows")
                    .and_then(Value::as_object)
                    .map(|flows| {
                        flows
                            .iter()
                            .map(|(flow, f)| OAuthFlow {
                                flow: flow.clone(),
                                authorization_url: absolute_url(
                                    str_at(f, &["authorizationUrl"]),
                                    base,
                                ),
                                token_url: absolute_url(str_at(f, &["tokenUrl"]), base),
                                scopes: f
                                    .get("scopes")
                                    .and_then(Value::as_object)
                                    .map(|m| m.keys().cloned().collect())
                                    .unwrap_or_default(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                AuthKind::OAuth2 { flows }
            }
            Some("openIdConnect") => AuthKind::OpenIdConnect {
                url: str_at(s, &["openIdConnectUrl"]).unwrap_or("").to_string(),
            },
            _ => continue,
        };
        out.push(AuthScheme {
            name: name.clone(),
            kind,
        });
    }
    out
}

/// A value prefix the scheme's description asks for: "prefixed with SSWS" (Okta).
fn declared_prefix(description: &str) -> Option<String> {
    let lower = description.to_ascii_lowercase();
    let at = lower.find("prefixed with ")? + "prefixed with ".len();
    let word: String = description[at..]
        .trim_start_matches(['`', '"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!word.is_empty() && word.len() <= 12).then(|| format!("{word} "))
}

fn parse_security(v: &Value) -> Vec<Vec<(String, Vec<String>)>> {
    let Some(alts) = v.as_array() else {
        return Vec::new();
    };
    alts.iter()
        .filter_map(Value::as_object)
        .map(|req| {
            req.iter()
                .map(|(name, scopes)| {
                    let scopes = scopes
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (name.clone(), scopes)
                })
                .collect()
        })
        .collect()
}

fn parse_op(
    resolver: &Resolver,
    method: Method,
    path: &str,
    op: &Value,
    shared: Option<&Vec<Value>>,
    hidden: &[String],
    global_security: &[Vec<(String, Vec<String>)>],
) -> Op {
    let summary = plain_text(str_at(op, &["summary"]).unwrap_or(""));
    let long = plain_text(str_at(op, &["description"]).unwrap_or(""));
    let description = if summary.is_empty() {
        truncate(&long, DESCRIPTION_MAX)
    } else if summary.len() < 40
        && !long.is_empty()
        && !long.starts_with(summary.trim_end_matches('.'))
    {
        truncate(
            &format!(
                "{}. {}",
                summary.trim_end_matches('.'),
                first_sentence(&long)
            ),
            DESCRIPTION_MAX,
        )
    } else {
        truncate(&summary, DESCRIPTION_MAX)
    };
    let tags: Vec<&str> = op
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Without a summary, the description's first sentence is the summary (Stripe: "<p>Create a
    // refund.</p>").
    let lead = if summary.is_empty() {
        first_sentence(&long)
    } else {
        summary.as_str()
    };
    let index_summary = format!("{lead} {}", tags.join(" "));
    let index_description = truncate(&long, INDEX_DESCRIPTION_MAX);

    // Operation parameters override path-item ones with the same name and location.
    let mut params: Vec<Value> = Vec::new();
    let own = op.get("parameters").and_then(Value::as_array);
    for p in own
        .into_iter()
        .flatten()
        .chain(shared.into_iter().flatten())
    {
        let p = resolver.resolve(p).clone();
        let key = (
            str_at(&p, &["name"]).map(str::to_string),
            str_at(&p, &["in"]).map(str::to_string),
        );
        if params.iter().any(|q| {
            (
                str_at(q, &["name"]).map(str::to_string),
                str_at(q, &["in"]).map(str::to_string),
            ) == key
        }) {
            continue;
        }
        params.push(p);
    }

    let mut groups: Vec<(&str, Map<String, Value>, Vec<Value>)> = ["path", "query", "header"]
        .into_iter()
        .map(|l| (l, Map::new(), Vec::new()))
        .collect();
    let mut names = Vec::new();
    for p in &params {
        let (Some(name), Some(loc)) = (str_at(p, &["name"]), str_at(p, &["in"])) else {
            continue;
        };
        let lname = name.to_ascii_lowercase();
        if loc != "path" && (CREDENTIAL_PARAMS.contains(&lname.as_str()) || hidden.contains(&lname))
        {
            continue;
        }
        let Some(group) = groups.iter_mut().find(|g| g.0 == loc) else {
            continue; // cookies: not part of the tool input
        };
        let mut schema = p
            .get("schema")
            .or_else(|| {
                p.get("content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.values().next())
                    .and_then(|m| m.get("schema"))
            })
            .map(|s| resolver.compact(s, 0, 0))
            .unwrap_or_else(|| json!({"type": "string"}));
        if let (Some(d), Some(obj)) = (str_at(p, &["description"]), schema.as_object_mut()) {
            let d = truncate(&plain_text(d), PARAM_DESCRIPTION_MAX);
            if !d.is_empty() {
                obj.insert("description".into(), Value::String(d));
            }
        }
        if loc == "path" || p.get("required").and_then(Value::as_bool) == Some(true) {
            group.2.push(Value::String(name.to_string()));
        }
        group.1.insert(name.to_string(), schema);
        names.push(name.to_string());
    }

    let mut properties = Map::new();
    let mut required = Vec::new();
    for (loc, props, req) in groups {
        if props.is_empty() {
            continue;
        }
        if !req.is_empty() {
            required.push(Value::String(loc.to_string()));
        }
        let mut g = json!({"type": "object", "properties": props});
        if !req.is_empty() {
            g["required"] = Value::Array(req);
        }
        properties.insert(loc.to_string(), g);
    }
    if let Some(body) = op.get("requestBody").map(|b| resolver.resolve(b))
        && let Some((media, schema)) = body_schema(body)
    {
        let mut s = resolver.compact(schema, 0, 0);
        if let Some(obj) = s.as_object_mut() {
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                names.extend(props.keys().take(MAX_INDEXED_PARAMS).cloned());
            }
            if media != "application/json" {
                obj.insert("x-content-type".into(), Value::String(media.to_string()));
            }
        }
        if body.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(Value::String("body".into()));
        }
        properties.insert("body".into(), s);
    }
    let mut input = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        input["required"] = Value::Array(required);
    }
    names.truncate(MAX_INDEXED_PARAMS);

    let security = match op.get("security") {
        Some(s) => parse_security(s),
        None => global_security.to_vec(),
    };
    Op {
        method,
        path: path.to_string(),
        operation_id: str_at(op, &["operationId"]).map(str::to_string),
        description,
        index_summary,
        index_description,
        params: names,
        input_schema: input.to_string(),
        security,
        deprecated: op.get("deprecated").and_then(Value::as_bool) == Some(true),
        server: 0,
    }
}

/// The request body's media type and schema; JSON preferred, then forms, then whatever is first.
fn body_schema(body: &Value) -> Option<(&str, &Value)> {
    let content = body.get("content")?.as_object()?;
    let rank = |m: &str| {
        if m == "application/json" {
            0
        } else if m.contains("json") {
            1
        } else if m == "application/x-www-form-urlencoded" {
            2
        } else if m == "multipart/form-data" {
            3
        } else {
            4
        }
    };
    content
        .iter()
        .filter_map(|(m, v)| Some((m.as_str(), v.get("schema")?)))
        .min_by_key(|(m, _)| rank(m))
}

struct Resolver<'a> {
    doc: &'a Value,
}

impl Resolver<'_> {
    fn lookup(&self, r: &str) -> Option<&Value> {
        let pointer = r.strip_prefix('#')?;
        self.doc.pointer(pointer)
    }

    /// Follows `$ref`s (bounded, cycles end at the bound).
    fn resolve<'b>(&'b self, mut v: &'b Value) -> &'b Value {
        for _ in 0..8 {
            match v
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| self.lookup(r))
            {
                Some(next) => v = next,
                None => break,
            }
        }
        v
    }

    /// A copy of a schema small enough to ship: `$ref`s inlined up to `REF_DEPTH`, nesting cut
    /// at `SCHEMA_DEPTH`, documentation-only keywords dropped, descriptions shortened.
    fn compact(&self, v: &Value, refs: usize, depth: usize) -> Value {
        let Some(obj) = v.as_object() else {
            return v.clone();
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r);
            return match self.lookup(r) {
                Some(target) if refs < REF_DEPTH => self.compact(target, refs + 1, depth),
                _ => {
                    json!({"type": "object", "description": format!("{name} (see the API documentation)")})
                }
            };
        }
        if depth >= SCHEMA_DEPTH {
            let ty = obj
                .get("type")
                .cloned()
                .unwrap_or(Value::String("object".into()));
            return json!({"type": ty});
        }
        let mut out = Map::new();
        for (k, val) in obj {
            match k.as_str() {
                "example" | "examples" | "xml" | "externalDocs" | "discriminator" | "readOnly"
                | "writeOnly" | "title" => {}
                _ if k.starts_with("x-") => {}
                "description" => {
                    if let Some(d) = val.as_str() {
                        let d = truncate(&plain_text(d), PARAM_DESCRIPTION_MAX);
                        if !d.is_empty() {
                            out.insert(k.clone(), Value::String(d));
                        }
                    }
                }
                "properties" => {
                    let Some(props) = val.as_object() else {
                        continue;
                    };
                    let mut p = Map::new();
                    for (name, s) in props.iter() {
                        // Server-set fields are not input.
                        if self.resolve(s).get("readOnly").and_then(Value::as_bool) == Some(true) {
                            continue;
                        }
                        if p.len() == MAX_PROPERTIES {
                            break;
                        }
                        p.insert(name.clone(), self.compact(s, refs, depth + 1));
                    }
                    out.insert(k.clone(), Value::Object(p));
                }
                "items" | "additionalProperties" | "not" => {
                    out.insert(k.clone(), self.compact(val, refs, depth + 1));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let arr = val
                        .as_array()
                        .map(|a| a.iter().map(|s| self.compact(s, refs, depth + 1)).collect())
                        .unwrap_or_default();
                    out.insert(k.clone(), Value::Array(arr));
                }
                _ => {
                    out.insert(k.clone(), val.clone());
                }
            }
        }
        Value::Object(out)
    }
}

/// Cuts at a word boundary, adding "…" when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..i + 1],
        None => s,
    }
}
