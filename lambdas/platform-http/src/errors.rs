//! Every typed error of the domain and of `platform-exec` as an RFC 9457 problem: status, the
//! stable `code` (CONTRACTS.md), a detail for people and the extension members. The one place
//! where errors become HTTP; MCP turns the same problems into error results.

use http::StatusCode;
use platform_domain::StoreError;
use platform_domain::connections::ConnectError;
use platform_domain::custom::{CustomError, RunError as CustomRunError};
use platform_domain::tools::ToolsError;
use platform_domain::triggers::TriggerError;
use platform_exec::executor::RunError;
use platform_exec::triggers::TriggersError;
use serde_json::{Value, json};

use crate::problem::{FieldError, Problem};

/// A store failure: logged with the SDK's message, answered with none of it.
pub fn store(e: &StoreError) -> Problem {
    tracing::error!(error = %e, "store failure");
    Problem::unavailable()
}

pub fn invalid_cursor() -> Problem {
    Problem::bad_request(
        "invalid_cursor",
        "The cursor is not one this API issued; start again without it.",
    )
}

pub fn tool_not_found(name: &str) -> Problem {
    Problem::not_found(
        "tool_not_found",
        format!("No tool {name:?}; POST /tools/find finds tools for a task."),
    )
}

pub fn app_not_found(app: &str) -> Problem {
    Problem::not_found(
        "app_not_found",
        format!("No app {app:?} in the catalog; GET /apps?search= finds app ids."),
    )
}

/// `GET /apps`, `POST /tools/find`, `GET /tools/{name}`.
pub fn tools(e: &ToolsError) -> Problem {
    match e {
        ToolsError::AppNotFound(app) => app_not_found(app),
        ToolsError::ToolNotFound(name) => tool_not_found(name),
        ToolsError::InvalidCursor => invalid_cursor(),
        ToolsError::Store(s) => store(s),
    }
}

/// A failed `POST /apps/{app}/connect`.
pub fn connect(e: &ConnectError) -> Problem {
    let status = match e {
        ConnectError::AppNotFound(_) => StatusCode::NOT_FOUND,
        ConnectError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let code = match e {
        ConnectError::AppNotFound(_) => "app_not_found",
        ConnectError::OAuthNotConfigured(_) => "oauth_not_configured",
        ConnectError::NotConnectable(_) => "app_not_connectable",
        ConnectError::Invalid(_) => "invalid_request",
        ConnectError::Store(_) => "store_unavailable",
    };
    Problem::new(status, code, e.detail())
}

/// A failed run of a catalog tool (RFC 9457 problem with the plan's codes).
pub fn run(e: &RunError) -> Problem {
    let p = match e {
        RunError::Connect(c) => connect(c),
        RunError::Store => Problem::unavailable(),
        _ => {
            let (status, code) = run_status(e);
            Problem::new(status, code, e.detail())
        }
    };
    let p = match e {
        RunError::InvalidArguments { errors, .. } => p.with_errors(errors.clone()),
        RunError::ConnectionRequired { prompt, .. } => p
            .with("app", prompt.app.clone())
            .with("connect_url", prompt.connect_url.clone())
            .with("expires_at", prompt.expires_at.clone()),
        RunError::NeedsReauth {
            prompt,
            connection_id,
            ..
        } => p
            .with("app", prompt.app.clone())
            .with("connection_id", connection_id.clone())
            .with("connect_url", prompt.connect_url.clone())
            .with("expires_at", prompt.expires_at.clone()),
        RunError::RefreshBusy { .. } => p.with_retry_after(1),
        RunError::Upstream { status, body, .. } => p
            .with("upstream_status", status.map_or(Value::Null, Value::from))
            .with("upstream_body", body.clone()),
        RunError::RateLimited { retry_after, .. } => p
            .with_retry_after(*retry_after)
            .with("upstream_status", 429),
        _ => p,
    };
    match e.run_id() {
        Some(id) => p.with("run_id", id),
        None => p,
    }
}

fn run_status(e: &RunError) -> (StatusCode, &'static str) {
    match e {
        RunError::ToolNotFound(_) => (StatusCode::NOT_FOUND, "tool_not_found"),
        RunError::NotRunnable(_) => (StatusCode::UNPROCESSABLE_ENTITY, "tool_not_runnable"),
        RunError::InvalidArguments { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_arguments")
        }
        RunError::ConnectionRequired { .. } => (StatusCode::CONFLICT, "connection_required"),
        RunError::NeedsReauth { .. } => (StatusCode::CONFLICT, "needs_reauth"),
        RunError::ConnectionNotFound(_) => (StatusCode::NOT_FOUND, "connection_not_found"),
        RunError::WrongApp { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "connection_app_mismatch"),
        RunError::RefreshBusy { .. } => (StatusCode::SERVICE_UNAVAILABLE, "refresh_in_progress"),
        RunError::TokenEndpoint { .. } => (StatusCode::BAD_GATEWAY, "token_refresh_failed"),
        RunError::DestinationRefused { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "destination_refused")
        }
        RunError::Upstream { .. } => (StatusCode::BAD_GATEWAY, "upstream_error"),
        RunError::RateLimited { .. } => (StatusCode::BAD_GATEWAY, "upstream_rate_limited"),
        RunError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "upstream_timeout"),
        RunError::TooLarge { .. } => (StatusCode::BAD_GATEWAY, "upstream_too_large"),
        RunError::Connect(_) | RunError::Store => {
            (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable")
        }
    }
}

/// A failed custom connector request.
pub fn custom(e: &CustomError) -> Problem {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match e {
        CustomError::Store(e) => {
            tracing::error!(error = %e, "store failure (custom connectors)");
            Problem::unavailable()
        }
        CustomError::Invalid(m) => Problem::new(unprocessable, "invalid_request", m.clone()),
        CustomError::Refused(m) => Problem::new(
            unprocessable,
            "destination_refused",
            format!("{m} Only public https destinations are allowed."),
        ),
        CustomError::Unreachable(m) => Problem::new(
            unprocessable,
            "connector_unreachable",
            format!("The connector's server could not be used: {m}"),
        ),
        CustomError::InvalidOpenApi(m) => Problem::new(
            unprocessable,
            "invalid_openapi",
            format!("Not a usable OpenAPI 3 document: {m}"),
        ),
        CustomError::DocumentTooLarge => Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "document_too_large",
            e.to_string(),
        ),
        CustomError::TooManyTools(_) | CustomError::ToolsTooLarge(_) => {
            Problem::new(unprocessable, "too_many_tools", e.to_string())
        }
        CustomError::LimitReached => Problem::new(
            unprocessable,
            "connector_limit",
            format!("{e}; delete one first."),
        ),
        CustomError::NameTaken(_) => Problem::new(
            StatusCode::CONFLICT,
            "connector_name_taken",
            format!("{e}; choose another name."),
        ),
        CustomError::NotFound(_) => Problem::not_found("connector_not_found", e.to_string()),
        CustomError::NotRefreshable(m) => Problem::new(unprocessable, "not_refreshable", m.clone()),
        CustomError::InvalidCursor => invalid_cursor(),
        CustomError::Sealing(_) => {
            tracing::error!(error = %e, "sealing unavailable");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sealing_unavailable",
                "Connector headers cannot be stored safely right now; retry later.",
            )
        }
    }
}

/// A failed run of a custom tool; `run_id` names the recorded run when there is one.
pub fn custom_run(e: &CustomRunError, run_id: Option<&str>) -> Problem {
    let p = match e {
        CustomRunError::ToolNotFound(name) => tool_not_found(name),
        CustomRunError::InvalidArguments(errors) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_arguments",
            "The arguments do not match the tool's input schema; see errors.",
        )
        .with_errors(errors.clone()),
        CustomRunError::Refused(m) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "destination_refused",
            m.clone(),
        ),
        CustomRunError::Upstream { status, detail } => {
            let p = Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                format!("The tool's server reported an error: {detail}"),
            );
            match status {
                Some(s) => p.with("upstream_status", json!(s)),
                None => p,
            }
        }
        CustomRunError::RateLimited { retry_after } => {
            let p = Problem::new(
                StatusCode::BAD_GATEWAY,
                "upstream_rate_limited",
                "The tool's server is rate limiting; retry later.",
            );
            match retry_after {
                Some(s) => p.with_retry_after(*s),
                None => p,
            }
        }
        CustomRunError::Timeout => Problem::new(
            StatusCode::GATEWAY_TIMEOUT,
            "upstream_timeout",
            "The tool's server did not answer in time.",
        ),
        CustomRunError::TooLarge(limit) => Problem::new(
            StatusCode::BAD_GATEWAY,
            "upstream_too_large",
            format!("The tool's answer is larger than {limit} bytes."),
        ),
        CustomRunError::Unreachable(m) => Problem::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("The tool's server could not be reached: {m}"),
        ),
        CustomRunError::Setup(e) => custom(e),
    };
    match run_id {
        Some(id) => p.with("run_id", json!(id)),
        None => p,
    }
}

/// A trigger service failure that is not the request's fault.
pub fn trigger(e: &TriggerError) -> Problem {
    match e {
        TriggerError::Store(e) => {
            tracing::error!(error = %e, "trigger store failure");
            Problem::unavailable()
        }
        TriggerError::Seal => {
            tracing::error!("trigger secret sealing failed");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "secrets_unavailable",
                "The platform could not protect the trigger's secret; retry shortly.",
            )
        }
    }
}

pub fn trigger_not_found(id: &str) -> Problem {
    Problem::not_found(
        "trigger_not_found",
        format!("No trigger {id:?} in this account; GET /triggers lists them."),
    )
}

pub fn hook_not_found() -> Problem {
    Problem::not_found(
        "hook_not_found",
        "No trigger ingress at this URL (unknown trigger or wrong token).",
    )
}

/// A refused trigger request.
pub fn triggers(e: &TriggersError) -> Problem {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let url_invalid = |detail: String| {
        Problem::new(unprocessable, "invalid_webhook_url", detail)
            .with_errors(vec![FieldError::new("/webhook_url", "not a usable URL")])
    };
    match e {
        TriggersError::AppNotFound(app) => app_not_found(app),
        TriggersError::UnknownEvent {
            app,
            event,
            offered,
        } => Problem::new(
            unprocessable,
            "unknown_event",
            format!(
                "{app} has no event {event:?}; it offers: {}. See GET /triggers/events?app={app}.",
                offered.join(", ")
            ),
        )
        .with_errors(vec![FieldError::new("/event", "not an event of this app")]),
        TriggersError::UrlTooLong => url_invalid(format!("{e}.")),
        TriggersError::UrlInvalid(_) | TriggersError::UrlUnusable(_) => {
            url_invalid(format!("{e}."))
        }
        TriggersError::UrlRefused(reason) => Problem::new(
            unprocessable,
            "destination_refused",
            format!("The platform will not send webhooks to this URL: {reason}."),
        )
        .with_errors(vec![FieldError::new("/webhook_url", reason.clone())]),
        TriggersError::ConnectionNotFound(id) => Problem::not_found(
            "connection_not_found",
            format!("No connection {id:?} in this account; GET /connections lists them."),
        ),
        TriggersError::ConnectionAppMismatch { id, app } => Problem::new(
            unprocessable,
            "connection_app_mismatch",
            format!("Connection {id:?} is not a connection to {app}."),
        ),
        TriggersError::LimitReached => Problem::new(
            StatusCode::CONFLICT,
            "trigger_limit_reached",
            format!(
                "An account may have {} triggers; delete one first.",
                platform_domain::triggers::MAX_TRIGGERS
            ),
        ),
        TriggersError::NotFound(id) => trigger_not_found(id),
        TriggersError::InvalidCursor => invalid_cursor(),
        TriggersError::HookNotFound => hook_not_found(),
        TriggersError::Disabled => Problem::new(
            StatusCode::CONFLICT,
            "trigger_disabled",
            "The trigger is disabled; its owner can re-enable it.",
        ),
        TriggersError::Trigger(t) => trigger(t),
    }
}

/// Handlers answer a service's typed error with `?`: each converts through its function above.
macro_rules! into_problem {
    ($($error:ty => $f:path),* $(,)?) => {
        $(impl From<$error> for Problem {
            fn from(e: $error) -> Self {
                $f(&e)
            }
        })*
    };
}

into_problem! {
    StoreError => store,
    ToolsError => tools,
    ConnectError => connect,
    RunError => run,
    CustomError => custom,
    TriggersError => triggers,
}
