//! The tool executor: arguments checked against the tool's input schema, the HTTP request built
//! from the operation, credentials injected per its security scheme, sent through the
//! SSRF-guarded [`Outbound`](crate::outbound::Outbound), and every attempt recorded as a run.
//!
//! It knows nothing of HTTP requests to the platform: REST, MCP, triggers (polling list
//! operations) and custom REST connectors all call [`Executor::execute`] or
//! [`Executor::execute_operation`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::catalog::AuthKind;
use crate::catalog::AuthScheme;
use crate::catalog_api::{Catalog, Operation};
use crate::clock::rfc3339;
use crate::connections::{AuthMethod, ConnectError, Connections, CredError, Credentials};
use crate::openapi::violations;
use crate::outbound::OutboundError;
use crate::problem::{FieldError, Problem};
use crate::runs::{Arguments, NewRun, Run, RunStatus};
use crate::store::Store;

/// Upstream error bodies are passed back up to this many characters.
const MAX_UPSTREAM_BODY: usize = 2000;
/// `retry_after` when a rate-limited upstream does not say.
const DEFAULT_RETRY_AFTER: u64 = 60;
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

/// Who asked for a run (logged; triggers and connectors pass their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrigin {
    Api,
    Mcp,
    Trigger,
    Connector,
}

impl RunOrigin {
    fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Mcp => "mcp",
            Self::Trigger => "trigger",
            Self::Connector => "connector",
        }
    }
}

/// A request to run one tool.
#[derive(Debug, Clone)]
pub struct RunRequest<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub connection_id: Option<&'a str>,
    pub origin: RunOrigin,
    pub keep_arguments: Arguments,
}

/// A successful run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub run_id: String,
    pub tool: String,
    pub app: String,
    pub http_status: u16,
    pub data: Value,
    pub duration_ms: u64,
    pub connection_id: Option<String>,
}

impl RunOutput {
    pub fn to_json(&self) -> Value {
        json!({
            "run_id": self.run_id,
            "tool": self.tool,
            "app": self.app,
            "status": "succeeded",
            "http_status": self.http_status,
            "data": self.data,
            "duration_ms": self.duration_ms,
            "connection_id": self.connection_id,
        })
    }
}

/// A link the user must open before the run can succeed.
#[derive(Debug, Clone)]
pub struct ConnectPrompt {
    pub app: String,
    pub connect_url: String,
    pub expires_at: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("no tool {0:?}")]
    ToolNotFound(String),
    #[error("{0} cannot be run: the catalog has no HTTP operation or server URL for it")]
    NotRunnable(String),
    #[error("the arguments do not match the tool's input schema")]
    InvalidArguments {
        errors: Vec<FieldError>,
        run_id: Option<String>,
    },
    #[error("{} must be connected first", .prompt.app)]
    ConnectionRequired {
        prompt: ConnectPrompt,
        run_id: Option<String>,
    },
    #[error("connection {connection_id} must be reconnected")]
    NeedsReauth {
        prompt: ConnectPrompt,
        connection_id: String,
        run_id: Option<String>,
    },
    #[error("no connection {0}")]
    ConnectionNotFound(String),
    #[error("connection {connection_id} belongs to {actual}, not {app}")]
    WrongApp {
        connection_id: String,
        app: String,
        actual: String,
    },
    #[error("cannot create a connect link: {0}")]
    Connect(#[from] ConnectError),
    #[error("another refresh of the connection's token is in progress; retry shortly")]
    RefreshBusy { run_id: Option<String> },
    #[error("the app's token endpoint failed: {detail}")]
    TokenEndpoint {
        detail: String,
        run_id: Option<String>,
    },
    #[error("the destination is not allowed: {reason}")]
    DestinationRefused { reason: String, run_id: String },
    #[error("the app answered with an error (HTTP {status:?})")]
    Upstream {
        status: Option<u16>,
        body: Value,
        run_id: String,
    },
    #[error("the app is rate limiting; retry after {retry_after} s")]
    RateLimited { retry_after: u64, run_id: String },
    #[error("the app did not answer in time")]
    Timeout { run_id: String },
    #[error("the app's answer is larger than {limit} bytes")]
    TooLarge { limit: usize, run_id: String },
    #[error("the platform's storage failed")]
    Store,
}

impl RunError {
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Self::InvalidArguments { run_id, .. }
            | Self::ConnectionRequired { run_id, .. }
            | Self::NeedsReauth { run_id, .. }
            | Self::RefreshBusy { run_id }
            | Self::TokenEndpoint { run_id, .. } => run_id.as_deref(),
            Self::DestinationRefused { run_id, .. }
            | Self::Upstream { run_id, .. }
            | Self::RateLimited { run_id, .. }
            | Self::Timeout { run_id }
            | Self::TooLarge { run_id, .. } => Some(run_id),
            _ => None,
        }
    }

    /// The REST answer (RFC 9457 problem with the plan's codes).
    pub fn to_problem(&self) -> Problem {
        let p = match self {
            Self::ToolNotFound(t) => Problem::not_found(
                "tool_not_found",
                format!("No tool {t:?}; POST /tools/find finds tools for a task."),
            ),
            Self::NotRunnable(_) => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "tool_not_runnable",
                self.to_string(),
            ),
            Self::InvalidArguments { errors, .. } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_arguments",
                "The arguments do not match the tool's input schema (GET /tools/{tool}); see errors.",
            )
            .with_errors(errors.clone()),
            Self::ConnectionRequired { prompt, .. } => Problem::new(
                StatusCode::CONFLICT,
                "connection_required",
                format!(
                    "{} is not connected. Open connect_url (valid until {}) to connect it, then retry.",
                    prompt.app, prompt.expires_at
                ),
            )
            .with("app", prompt.app.clone())
            .with("connect_url", prompt.connect_url.clone())
            .with("expires_at", prompt.expires_at.clone()),
            Self::NeedsReauth {
                prompt,
                connection_id,
                ..
            } => Problem::new(
                StatusCode::CONFLICT,
                "needs_reauth",
                format!(
                    "The connection {connection_id} to {} expired or was revoked by the app. \
                     Open connect_url to connect it again, then retry.",
                    prompt.app
                ),
            )
            .with("app", prompt.app.clone())
            .with("connection_id", connection_id.clone())
            .with("connect_url", prompt.connect_url.clone())
            .with("expires_at", prompt.expires_at.clone()),
            Self::ConnectionNotFound(id) => Problem::not_found(
                "connection_not_found",
                format!("No connection {id:?}; GET /connections lists them."),
            ),
            Self::WrongApp { .. } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "connection_app_mismatch",
                self.to_string(),
            ),
            Self::Connect(e) => connect_problem(e),
            Self::RefreshBusy { .. } => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "refresh_in_progress",
                self.to_string(),
            )
            .with_retry_after(1),
            Self::TokenEndpoint { .. } => Problem::new(
                StatusCode::BAD_GATEWAY,
                "token_refresh_failed",
                format!("{self}; the connection is kept, retry later."),
            ),
            Self::DestinationRefused { reason, .. } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "destination_refused",
                format!("The platform does not send requests there: {reason}."),
            ),
            Self::Upstream { status, body, .. } => Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                match status {
                    Some(s) => format!("The app answered HTTP {s}; see upstream_body."),
                    None => "The app could not be reached.".to_owned(),
                },
            )
            .with("upstream_status", status.map_or(Value::Null, Value::from))
            .with("upstream_body", body.clone()),
            Self::RateLimited { retry_after, .. } => Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_rate_limited",
                format!("The app is rate limiting this account; retry after {retry_after} s."),
            )
            .with_retry_after(*retry_after)
            .with("upstream_status", 429),
            Self::Timeout { .. } => Problem::new(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                self.to_string(),
            ),
            Self::TooLarge { .. } => Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_too_large",
                self.to_string(),
            ),
            Self::Store => Problem::unavailable(),
        };
        match self.run_id() {
            Some(id) => p.with("run_id", id),
            None => p,
        }
    }
}

/// The problem for a failed `POST /apps/{app}/connect`.
pub fn connect_problem(e: &ConnectError) -> Problem {
    match e {
        ConnectError::AppNotFound(app) => Problem::not_found(
            "app_not_found",
            format!("No app {app:?} in the catalog; GET /apps?search= finds app ids."),
        ),
        ConnectError::OAuthNotConfigured(_) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "oauth_not_configured",
            format!("{e}; the operator adds it to the OAUTH_APPS file."),
        ),
        ConnectError::NotConnectable(_) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "app_not_connectable",
            e.to_string(),
        ),
        ConnectError::Invalid(why) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            why.clone(),
        ),
        ConnectError::Store(s) => {
            tracing::error!(error = %s, "store failure creating a link");
            Problem::unavailable()
        }
    }
}

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
struct Built {
    url: url::Url,
    headers: Vec<(String, String)>,
    body: Option<(String, Vec<u8>)>,
}

fn invalid(pointer: &str, detail: impl Into<String>) -> FieldError {
    FieldError {
        pointer: pointer.to_owned(),
        detail: detail.into(),
    }
}

/// Names declared in one group (`path`, `query`, `header`) of the input schema.
fn declared<'a>(schema: &'a Value, group: &str) -> Option<&'a Map<String, Value>> {
    schema
        .pointer(&format!("/properties/{group}/properties"))
        .and_then(Value::as_object)
}

fn build(
    op: &Operation,
    base_url: &str,
    schema: &Value,
    args: &Value,
) -> Result<Built, Vec<FieldError>> {
    let mut errors = Vec::new();
    let group = |name: &str| args.get(name).and_then(Value::as_object);

    // Path: every `{name}` of the template, from arguments.path.
    let mut path = String::new();
    let mut rest = op.path.as_str();
    while let Some(start) = rest.find('{') {
        path.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            break;
        };
        let name = &after[..end];
        match group("path").and_then(|g| g.get(name)) {
            Some(v) if !scalar(v).is_empty() => path.push_str(&encode_segment(&scalar(v))),
            _ => errors.push(invalid(
                &format!("/path/{name}"),
                format!("the path parameter {name:?} is required"),
            )),
        }
        rest = &after[end + 1..];
    }
    path.push_str(rest);

    let joined = format!("{}{}", base_url.trim_end_matches('/'), path);
    let mut url = match url::Url::parse(&joined) {
        Ok(u) => u,
        Err(e) => {
            errors.push(invalid("/path", format!("the request URL is invalid: {e}")));
            return Err(errors);
        }
    };

    // Query: only parameters the operation declares.
    if let (Some(q), Some(names)) = (group("query"), declared(schema, "query")) {
        let mut pairs = Vec::new();
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
        if !pairs.is_empty() {
            url.query_pairs_mut().extend_pairs(pairs);
        }
    }

    let mut headers = Vec::new();
    if let (Some(h), Some(names)) = (group("header"), declared(schema, "header")) {
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
    }

    let bodiless = matches!(
        op.method,
        crate::catalog::Method::Get | crate::catalog::Method::Head
    );
    let body = match args.get("body") {
        None | Some(Value::Null) => None,
        // Specs such as Stripe's give GETs an (empty) body schema; nothing is sent.
        Some(_) if bodiless => None,
        Some(b) => {
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
    };
    if errors.is_empty() {
        Ok(Built { url, headers, body })
    } else {
        Err(errors)
    }
}

/// How a credential satisfies one scheme.
enum Placement {
    Header(String, String),
    Query(String, String),
    Cookie(String, String),
}

fn place(scheme: &AuthScheme, creds: &Credentials, key_as_user: bool) -> Option<Placement> {
    let secret = &creds.secret;
    let token = secret.access_token.as_deref().or(secret.api_key.as_deref());
    let bearer = |t: &str| Placement::Header("authorization".into(), format!("Bearer {t}"));
    match (&scheme.kind, creds.connection.auth) {
        (AuthKind::ApiKey { location, param }, AuthMethod::ApiKey | AuthMethod::OAuth2) => {
            let t = token?.to_owned();
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
fn placements(security: &[Vec<AuthScheme>], creds: &Credentials) -> Vec<Placement> {
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

fn retry_after(headers: &http::HeaderMap, now_ms: i64) -> u64 {
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

fn response_data(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn short(v: Value) -> Value {
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

/// Runs tools of the catalog for an account.
pub struct Executor {
    catalog: Arc<dyn Catalog>,
    connections: Arc<Connections>,
}

/// What one run has settled so far, for its record.
struct Attempt<'a> {
    account_id: &'a str,
    tool: &'a str,
    app: &'a str,
    arguments: &'a Value,
    keep: Arguments,
    started_at_ms: i64,
    started: Instant,
}

impl Executor {
    pub fn new(catalog: Arc<dyn Catalog>, connections: Arc<Connections>) -> Self {
        Self {
            catalog,
            connections,
        }
    }

    pub fn connections(&self) -> &Arc<Connections> {
        &self.connections
    }

    /// Runs a catalog tool.
    pub async fn execute(
        &self,
        account_id: &str,
        req: RunRequest<'_>,
    ) -> Result<RunOutput, RunError> {
        let tool = self
            .catalog
            .tool(req.tool)
            .ok_or_else(|| RunError::ToolNotFound(req.tool.to_owned()))?;
        let op = self
            .catalog
            .operation(req.tool)
            .ok_or_else(|| RunError::NotRunnable(req.tool.to_owned()))?;
        self.execute_operation(account_id, &op, &tool.input_schema, req)
            .await
    }

    /// Runs an operation given directly (custom REST connectors hold their own).
    pub async fn execute_operation(
        &self,
        account_id: &str,
        op: &Operation,
        input_schema: &Value,
        req: RunRequest<'_>,
    ) -> Result<RunOutput, RunError> {
        let attempt = Attempt {
            account_id,
            tool: &op.tool,
            app: &op.app,
            arguments: req.arguments,
            keep: req.keep_arguments,
            started_at_ms: self.connections.now_ms(),
            started: Instant::now(),
        };
        let app_auth = self
            .catalog
            .app_auth(&op.app)
            .ok_or_else(|| RunError::NotRunnable(op.tool.clone()))?;

        match jsonschema::validator_for(input_schema) {
            Ok(v) => {
                let errors = violations(&v, req.arguments);
                if !errors.is_empty() {
                    let run_id = self
                        .record(
                            &attempt,
                            RunStatus::Failed,
                            Some("invalid_arguments".into()),
                        )
                        .await;
                    return Err(RunError::InvalidArguments { errors, run_id });
                }
            }
            // The upstream API still validates; a schema we cannot compile must not block it.
            Err(e) => tracing::warn!(tool = %op.tool, error = %e, "input schema does not compile"),
        }

        let creds = match self
            .credentials(account_id, &op.app, &op.security, req.connection_id)
            .await
        {
            Ok(c) => c,
            Err(e) => return Err(self.cred_failure(&attempt, e).await),
        };
        let params = creds
            .as_ref()
            .map(|c| c.connection.params.clone())
            .unwrap_or_default();
        let base_url = self.connections.base_url(&app_auth, &params);
        let built = match build(op, &base_url, input_schema, req.arguments) {
            Ok(b) => b,
            Err(errors) => {
                let run_id = self
                    .record(
                        &attempt,
                        RunStatus::Failed,
                        Some("invalid_arguments".into()),
                    )
                    .await;
                return Err(RunError::InvalidArguments { errors, run_id });
            }
        };
        let connection_id = creds.as_ref().map(|c| c.connection.id.clone());
        let result = self.send(op, built, creds.as_ref(), &attempt).await;
        tracing::info!(
            account = %account_id,
            tool = %op.tool,
            origin = req.origin.as_str(),
            connection = connection_id.as_deref().unwrap_or("-"),
            ok = result.is_ok(),
            "tool run"
        );
        result.map(|(status, data, run_id)| RunOutput {
            run_id,
            tool: op.tool.clone(),
            app: op.app.clone(),
            http_status: status,
            data,
            duration_ms: u64::try_from(attempt.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            connection_id,
        })
    }

    /// Credentials when the operation needs them (or a connection was named, or the app has
    /// one though the operation does not say it needs it).
    async fn credentials(
        &self,
        account_id: &str,
        app: &str,
        security: &[Vec<AuthScheme>],
        connection_id: Option<&str>,
    ) -> Result<Option<Credentials>, CredError> {
        let needed = security.iter().any(|alt| !alt.is_empty());
        match self
            .connections
            .credentials(account_id, app, connection_id)
            .await
        {
            Ok(c) => Ok(Some(c)),
            Err(CredError::ConnectionRequired { .. }) if !needed => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn prompt(&self, account_id: &str, app: &str) -> Result<ConnectPrompt, RunError> {
        let link = self
            .connections
            .create_link(account_id, app, None, None, BTreeMap::new())
            .await?;
        Ok(ConnectPrompt {
            app: app.to_owned(),
            connect_url: link.url,
            expires_at: rfc3339(link.expires_at_ms),
        })
    }

    async fn cred_failure(&self, attempt: &Attempt<'_>, e: CredError) -> RunError {
        match e {
            CredError::ConnectionRequired { app } => {
                match self.prompt(attempt.account_id, &app).await {
                    Ok(prompt) => {
                        let run_id = self
                            .record(attempt, RunStatus::ConnectionRequired, None)
                            .await;
                        RunError::ConnectionRequired { prompt, run_id }
                    }
                    Err(e) => e,
                }
            }
            CredError::NeedsReauth { app, connection_id } => {
                match self.prompt(attempt.account_id, &app).await {
                    Ok(prompt) => {
                        let run_id = self
                            .record(
                                attempt,
                                RunStatus::ConnectionRequired,
                                Some("needs_reauth".into()),
                            )
                            .await;
                        RunError::NeedsReauth {
                            prompt,
                            connection_id,
                            run_id,
                        }
                    }
                    Err(e) => e,
                }
            }
            CredError::NotFound(id) => RunError::ConnectionNotFound(id),
            CredError::WrongApp {
                connection_id,
                app,
                actual,
            } => RunError::WrongApp {
                connection_id,
                app,
                actual,
            },
            CredError::LockTimeout(_) => {
                let run_id = self
                    .record(
                        attempt,
                        RunStatus::Failed,
                        Some("refresh_in_progress".into()),
                    )
                    .await;
                RunError::RefreshBusy { run_id }
            }
            CredError::Provider(detail) => {
                let run_id = self
                    .record(
                        attempt,
                        RunStatus::Failed,
                        Some("token_refresh_failed".into()),
                    )
                    .await;
                RunError::TokenEndpoint { detail, run_id }
            }
            CredError::Seal | CredError::Store(_) => {
                tracing::error!(error = %e, "credentials unavailable");
                RunError::Store
            }
        }
    }

    async fn send(
        &self,
        op: &Operation,
        built: Built,
        creds: Option<&Credentials>,
        attempt: &Attempt<'_>,
    ) -> Result<(u16, Value, String), RunError> {
        let outbound = self.connections.outbound();
        let mut url = built.url;
        let mut headers = built.headers;
        let mut cookies = Vec::new();
        if let Some(c) = creds {
            for p in placements(&op.security, c) {
                match p {
                    Placement::Header(k, v) => {
                        headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&k));
                        headers.push((k, v));
                    }
                    Placement::Query(k, v) => {
                        url.query_pairs_mut().append_pair(&k, &v);
                    }
                    Placement::Cookie(k, v) => cookies.push(format!("{k}={v}")),
                }
            }
        }
        let method = match http::Method::from_bytes(op.method.as_str().as_bytes()) {
            Ok(m) => m,
            Err(_) => return Err(RunError::NotRunnable(op.tool.clone())),
        };
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
        if let Some((media, bytes)) = built.body {
            rb = rb.header(http::header::CONTENT_TYPE, media).body(bytes);
        }
        let outcome = outbound.send(rb).await;
        let resp = match outcome {
            Ok(r) => r,
            Err(e) => {
                let (code, err) = match e {
                    OutboundError::Refused { reason, .. } => ("destination_refused", Err(reason)),
                    OutboundError::InvalidUrl(why) => ("destination_refused", Err(why)),
                    OutboundError::Timeout => ("upstream_timeout", Ok(None)),
                    OutboundError::TooLarge { limit } => ("upstream_too_large", Ok(Some(limit))),
                    OutboundError::Network(why) => {
                        tracing::warn!(tool = %op.tool, error = %why, "upstream unreachable");
                        ("upstream_error", Ok(None))
                    }
                };
                let detail = match &err {
                    Err(reason) => format!("{code}: {reason}"),
                    Ok(_) => code.to_owned(),
                };
                let run_id = self
                    .record(attempt, RunStatus::Failed, Some(detail))
                    .await
                    .unwrap_or_default();
                return Err(match (code, err) {
                    (_, Err(reason)) => RunError::DestinationRefused { reason, run_id },
                    ("upstream_timeout", _) => RunError::Timeout { run_id },
                    ("upstream_too_large", Ok(Some(limit))) => RunError::TooLarge { limit, run_id },
                    _ => RunError::Upstream {
                        status: None,
                        body: Value::Null,
                        run_id,
                    },
                });
            }
        };
        let data = response_data(&resp.body);
        if (200..300).contains(&resp.status) {
            let run_id = self
                .record(attempt, RunStatus::Succeeded, None)
                .await
                .unwrap_or_default();
            return Ok((resp.status, data, run_id));
        }
        let run_id = self
            .record(
                attempt,
                RunStatus::Failed,
                Some(format!("upstream HTTP {}", resp.status)),
            )
            .await
            .unwrap_or_default();
        if resp.status == 429 {
            return Err(RunError::RateLimited {
                retry_after: retry_after(&resp.headers, self.connections.now_ms()).max(1),
                run_id,
            });
        }
        Err(RunError::Upstream {
            status: Some(resp.status),
            body: short(data),
            run_id,
        })
    }

    /// Records a run; a storage failure is logged, not allowed to hide the run's own outcome.
    async fn record(
        &self,
        a: &Attempt<'_>,
        status: RunStatus,
        error: Option<String>,
    ) -> Option<String> {
        let run = Run::from_new(NewRun {
            tool: a.tool.to_owned(),
            app: a.app.to_owned(),
            status,
            duration_ms: u64::try_from(a.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            started_at_ms: a.started_at_ms,
            error,
            arguments: a.arguments.clone(),
            keep_arguments: a.keep,
        });
        match self
            .connections
            .store()
            .record_run(a.account_id, &run)
            .await
        {
            Ok(()) => Some(run.id),
            Err(e) => {
                tracing::error!(error = %e, tool = %a.tool, "run record lost");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Method;

    fn op(path: &str) -> Operation {
        Operation {
            tool: "t".into(),
            app: "a".into(),
            method: Method::Post,
            path: path.into(),
            security: Vec::new(),
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
