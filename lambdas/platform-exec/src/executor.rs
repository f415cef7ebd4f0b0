//! The tool executor: arguments checked against the tool's input schema, the HTTP request built
//! from the operation, credentials injected per its security scheme, sent through the
//! SSRF-guarded [`Outbound`](crate::outbound::Outbound), and every attempt recorded as a run.
//!
//! It knows nothing of HTTP requests to the platform: REST, MCP and triggers (polling list
//! operations) call [`Executor::execute`]; [`Executor::execute_operation`] runs an operation
//! described elsewhere.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use catalog_core::AuthScheme;
use platform_domain::apps::{AppAuth, Catalog, Operation};
use platform_domain::clock::rfc3339;
use platform_domain::connections::{ConnectError, CredError, Credentials};
use platform_domain::error::UNAVAILABLE_DETAIL;
use platform_domain::runs::{Arguments, NewRun, Run, RunOutput, RunStatus, RunStore};
use platform_domain::validation::{FieldError, check};
use serde_json::Value;

use crate::connections::Connections;
use crate::outbound::OutboundError;
use crate::request::{self, Built, Placement};

/// Who asked for a run (logged; triggers and connectors pass their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrigin {
    Api,
    Mcp,
    Trigger,
    Connector,
}

impl RunOrigin {
    pub fn as_str(self) -> &'static str {
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

    /// What the caller is told, REST (problem detail) and MCP (error result) alike.
    pub fn detail(&self) -> String {
        match self {
            Self::ToolNotFound(t) => {
                format!("No tool {t:?}; POST /tools/find finds tools for a task.")
            }
            Self::InvalidArguments { .. } => "The arguments do not match the tool's input schema \
                 (GET /tools/{tool}); see errors."
                .to_owned(),
            Self::ConnectionRequired { prompt, .. } => format!(
                "{} is not connected. Open connect_url (valid until {}) to connect it, then retry.",
                prompt.app, prompt.expires_at
            ),
            Self::NeedsReauth {
                prompt,
                connection_id,
                ..
            } => format!(
                "The connection {connection_id} to {} expired or was revoked by the app. \
                 Open connect_url to connect it again, then retry.",
                prompt.app
            ),
            Self::ConnectionNotFound(id) => {
                format!("No connection {id:?}; GET /connections lists them.")
            }
            Self::Connect(e) => e.detail(),
            Self::TokenEndpoint { .. } => format!("{self}; the connection is kept, retry later."),
            Self::DestinationRefused { reason, .. } => {
                format!("The platform does not send requests there: {reason}.")
            }
            Self::Upstream { status, .. } => match status {
                Some(s) => format!("The app answered HTTP {s}; see upstream_body."),
                None => "The app could not be reached.".to_owned(),
            },
            Self::RateLimited { retry_after, .. } => {
                format!("The app is rate limiting this account; retry after {retry_after} s.")
            }
            Self::Store => UNAVAILABLE_DETAIL.to_owned(),
            Self::NotRunnable(_)
            | Self::WrongApp { .. }
            | Self::RefreshBusy { .. }
            | Self::Timeout { .. }
            | Self::TooLarge { .. } => self.to_string(),
        }
    }
}

/// Runs tools of the catalog for an account.
pub struct Executor {
    catalog: Arc<dyn Catalog>,
    connections: Arc<Connections>,
    runs: Arc<dyn RunStore>,
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

impl Attempt<'_> {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Executor {
    pub fn new(
        catalog: Arc<dyn Catalog>,
        connections: Arc<Connections>,
        runs: Arc<dyn RunStore>,
    ) -> Self {
        Self {
            catalog,
            connections,
            runs,
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

    /// Runs an operation given directly: validate, pick credentials, build, send, record.
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
        // A tool whose document or operation names its own server goes there (an operator's
        // override for the app still wins in `base_url`).
        let app_auth = match &op.server_url {
            Some(url) => AppAuth {
                base_url: url.clone(),
                ..app_auth
            },
            None => app_auth,
        };
        match check(input_schema, req.arguments) {
            Ok(errors) if !errors.is_empty() => return Err(self.invalid(&attempt, errors).await),
            Ok(_) => {}
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
        let base_url = self.connections.config().base_url(&app_auth, &params);
        let built = match request::build(op, &base_url, input_schema, req.arguments) {
            Ok(b) => b,
            Err(errors) => return Err(self.invalid(&attempt, errors).await),
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
            http_status: Some(status),
            data,
            duration_ms: attempt.elapsed_ms(),
            connection_id,
        })
    }

    /// Records a run refused for its arguments.
    async fn invalid(&self, attempt: &Attempt<'_>, errors: Vec<FieldError>) -> RunError {
        let run_id = self
            .record(attempt, RunStatus::Failed, Some("invalid_arguments".into()))
            .await;
        RunError::InvalidArguments { errors, run_id }
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

    /// The run's answer when its credentials are not available, recorded where the user can act
    /// on it (connect, reconnect, retry).
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

    /// Injects the credentials, sends the request and records the run; the upstream's status,
    /// its data and the run id on success.
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
            for p in request::placements(&op.security, c) {
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
        let Some(rb) = request::assemble(outbound, op.method, url, headers, cookies, built.body)
        else {
            return Err(RunError::NotRunnable(op.tool.clone()));
        };
        let resp = match outbound.send(rb).await {
            Ok(r) => r,
            Err(e) => return Err(self.unreached(op, e, attempt).await),
        };
        let data = request::response_data(&resp.body);
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
                retry_after: request::retry_after(&resp.headers, self.connections.now_ms()).max(1),
                run_id,
            });
        }
        Err(RunError::Upstream {
            status: Some(resp.status),
            body: request::short(data),
            run_id,
        })
    }

    /// Records and answers a request that got no HTTP answer (refused, timed out, too large,
    /// unreachable).
    async fn unreached(&self, op: &Operation, e: OutboundError, attempt: &Attempt<'_>) -> RunError {
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
        match (code, err) {
            (_, Err(reason)) => RunError::DestinationRefused { reason, run_id },
            ("upstream_timeout", _) => RunError::Timeout { run_id },
            ("upstream_too_large", Ok(Some(limit))) => RunError::TooLarge { limit, run_id },
            _ => RunError::Upstream {
                status: None,
                body: Value::Null,
                run_id,
            },
        }
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
            duration_ms: a.elapsed_ms(),
            started_at_ms: a.started_at_ms,
            error,
            arguments: a.arguments.clone(),
            keep_arguments: a.keep,
        });
        match self.runs.record_run(a.account_id, &run).await {
            Ok(()) => Some(run.id),
            Err(e) => {
                tracing::error!(error = %e, tool = %a.tool, "run record lost");
                None
            }
        }
    }
}
