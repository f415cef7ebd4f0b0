//! Run records: one per tool call, kept 30 days, arguments redacted unless the caller opts in.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::StoreError;

/// How long a run record is kept (DynamoDB TTL).
pub const RETENTION_S: i64 = 30 * 24 * 3600;
/// `GET /runs` returns at most this many (SPEC: "the 25 latest runs").
pub const LATEST: usize = 25;
/// What replaces each argument value when arguments are redacted.
pub const REDACTED_VALUE: &str = "[redacted]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Succeeded,
    Failed,
    ConnectionRequired,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::ConnectionRequired => "connection_required",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "succeeded" => Some(Self::Succeeded),
            "failed" => Some(Self::Failed),
            "connection_required" => Some(Self::ConnectionRequired),
            _ => None,
        }
    }
}

/// Whether a run keeps its arguments. Redacted is the default: arguments often hold message
/// bodies, e-mail addresses and other personal data that an audit trail does not need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Arguments {
    #[default]
    Redacted,
    Kept,
}

/// What the executor reports about a finished call.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub tool: String,
    pub app: String,
    pub status: RunStatus,
    pub duration_ms: u64,
    pub started_at_ms: i64,
    pub error: Option<String>,
    pub arguments: Value,
    pub keep_arguments: Arguments,
}

/// A stored run, as `GET /runs` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: String,
    pub tool: String,
    pub app: String,
    pub status: RunStatus,
    pub duration_ms: u64,
    pub started_at_ms: i64,
    pub error: Option<String>,
    pub arguments: Value,
}

impl Run {
    /// Gives a new run its id and applies the argument policy.
    pub fn from_new(new: NewRun) -> Self {
        let arguments = match new.keep_arguments {
            Arguments::Kept => new.arguments,
            Arguments::Redacted => redact(&new.arguments),
        };
        Self {
            id: new_run_id(new.started_at_ms),
            tool: new.tool,
            app: new.app,
            status: new.status,
            duration_ms: new.duration_ms,
            started_at_ms: new.started_at_ms,
            error: new.error,
            arguments,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "tool": self.tool,
            "app": self.app,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "started_at": crate::clock::rfc3339(self.started_at_ms),
            "error": self.error,
            "arguments": self.arguments,
        })
    }
}

/// Keeps the shape of the arguments (which fields were passed) and drops every value.
pub fn redact(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), redact(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(redact).collect()),
        Value::Null => Value::Null,
        _ => Value::String(REDACTED_VALUE.to_owned()),
    }
}

/// `run_` + 12 hex digits of the start time + 16 random hex digits: sortable by start, unique.
fn new_run_id(started_at_ms: i64) -> String {
    crate::ids::timed_id("run_", started_at_ms)
}

/// A successful run as REST (`POST /tools/{tool}/run`) and MCP (`run_tool`) answer it: catalog
/// tools and custom connectors' tools alike.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    pub run_id: String,
    pub tool: String,
    pub app: String,
    /// The upstream's HTTP status; `None` for a custom MCP tool (no HTTP answer of its own).
    pub http_status: Option<u16>,
    pub data: Value,
    pub duration_ms: u64,
    /// The connection used; `None` without one (custom connectors carry their own headers).
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

/// Where runs are recorded.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Stores a finished run (the executor calls this).
    async fn record_run(&self, account_id: &str, run: &Run) -> Result<(), StoreError>;

    /// The account's latest runs, newest first.
    async fn latest_runs(&self, account_id: &str, limit: usize) -> Result<Vec<Run>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_keeps_keys_and_drops_values() {
        let args = json!({"channel": "#ops", "text": "secret", "n": 3, "to": ["a@b.c"], "x": null,
                          "nested": {"token": "t"}});
        assert_eq!(
            redact(&args),
            json!({"channel": "[redacted]", "text": "[redacted]", "n": "[redacted]",
                   "to": ["[redacted]"], "x": null, "nested": {"token": "[redacted]"}})
        );
    }

    #[test]
    fn new_runs_are_redacted_by_default() {
        let run = Run::from_new(NewRun {
            tool: "slack_send_message".into(),
            app: "slack".into(),
            status: RunStatus::Succeeded,
            duration_ms: 12,
            started_at_ms: 1_700_000_000_000,
            error: None,
            arguments: json!({"text": "hello"}),
            keep_arguments: Arguments::default(),
        });
        assert_eq!(run.arguments, json!({"text": "[redacted]"}));
        assert!(run.id.starts_with("run_"));
        assert_eq!(run.to_json()["started_at"], "2023-11-14T22:13:20Z");
        assert_eq!(run.to_json()["error"], Value::Null);
    }
}
