//! `local-agent doctor`: the checks a support person would run, each ok / warning / problem with
//! the fix in one sentence. The same findings appear in the live view.
//!
//! The checks are a list of [`Check`]s ([`checks`]); a new one (an MQTT link, say) is one more
//! entry. Each reads a [`Context`]: the configured ports, data directory and alert settings, and,
//! inside a running agent, its live state ([`Live`]). Run from the command line, `doctor` asks the
//! running agent for its findings (through the live view's listener, with the token from the
//! runtime file); with no agent running it checks what it can without one.
//!
//! Levels: a **problem** means something the user expects does not work (no data reaches the
//! engine, vitals are impossible, alerts cannot be delivered or stored); a **warning** means it
//! works worse than it could or needs a look.

pub mod checks;
pub mod cli;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::alerts::config::AlertConfig;
use crate::engine::history::History;
use crate::engine::runner::SnapshotReceiver;
use crate::hub::registry::Registry;
use crate::link::LinkStatus;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    Warning,
    Problem,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Problem => "problem",
        }
    }
}

/// One result of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The check's id (`ports`, `nodes`, …).
    pub check: String,
    pub level: Level,
    /// What was looked at and what was found, one sentence.
    pub detail: String,
    /// What to do, one sentence; `null` when nothing needs doing.
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: &str, detail: impl Into<String>) -> Self {
        Self {
            check: check.to_string(),
            level: Level::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn warning(check: &str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check: check.to_string(),
            level: Level::Warning,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn problem(check: &str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check: check.to_string(),
            level: Level::Problem,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Everything the checks found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// No finding is a problem.
    pub ok: bool,
    pub problems: usize,
    pub warnings: usize,
    /// The findings came from a running agent (live checks included).
    pub agent_running: bool,
    /// RFC 3339 UTC.
    pub generated_at: String,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn new(findings: Vec<Finding>, agent_running: bool) -> Self {
        let problems = findings
            .iter()
            .filter(|f| f.level == Level::Problem)
            .count();
        let warnings = findings
            .iter()
            .filter(|f| f.level == Level::Warning)
            .count();
        Self {
            ok: problems == 0,
            problems,
            warnings,
            agent_running,
            generated_at: format!("{:.0}", jiff::Timestamp::now()),
            findings,
        }
    }

    /// The text `doctor` prints: one line per finding, the fix indented under it.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&format!(
                "{:<8} {:<12} {}\n",
                f.level.label(),
                f.check,
                f.detail
            ));
            if let Some(fix) = &f.fix {
                out.push_str(&format!("{:<21} fix: {fix}\n", ""));
            }
        }
        out.push_str(&format!(
            "\n{} problem(s), {} warning(s){}\n",
            self.problems,
            self.warnings,
            if self.agent_running {
                ""
            } else {
                " (the agent is not running: live checks skipped)"
            }
        ));
        out
    }
}

/// The ports the agent uses (configured, or bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ports {
    pub engine: u16,
    pub hub: u16,
    pub csi: u16,
    pub view: u16,
}

/// The hub of a running agent.
#[derive(Clone)]
pub struct LiveHub {
    pub registry: Arc<Registry>,
    pub addr: SocketAddr,
    pub udp_addr: SocketAddr,
    /// Node frames feed the pipeline (`--source hub`).
    pub feeding: bool,
}

/// A running agent's state.
#[derive(Clone)]
pub struct Live {
    pub snapshots: SnapshotReceiver,
    pub engine_addr: SocketAddr,
    /// `None` when the hub could not start (its port was taken).
    pub hub: Option<LiveHub>,
    pub view_addr: Option<SocketAddr>,
    pub history: Arc<History>,
    /// The Home Assistant (MQTT) link.
    pub mqtt: LinkStatus,
}

/// What the checks look at.
#[derive(Clone)]
pub struct Context {
    pub ports: Ports,
    /// The data directory, or why there is none.
    pub data_dir: Result<PathBuf, String>,
    /// The alert settings, or why they cannot be read.
    pub alert: Result<AlertConfig, String>,
    /// The MQTT broker configured (`None`: MQTT off), or why the settings cannot be read.
    pub mqtt: Result<Option<String>, String>,
    /// Inside a running agent.
    pub live: Option<Live>,
}

impl Context {
    /// The configured ports, data directory and alert settings from the environment.
    pub fn from_env(ports: Ports) -> Self {
        Self {
            ports,
            data_dir: crate::store::data_dir().map_err(|e| e.to_string()),
            alert: AlertConfig::load().map_err(|e| e.to_string()),
            mqtt: crate::mqtt::MqttConfig::load()
                .map(|c| c.map(|c| c.broker.to_string()))
                .map_err(|e| e.to_string()),
            live: None,
        }
    }
}

/// A boxed future, so checks stay object-safe.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Vec<Finding>> + Send + 'a>>;

/// One diagnostic.
pub trait Check: Send + Sync {
    /// Short id shown beside each finding.
    fn id(&self) -> &'static str;
    /// Runs the check; returns at least one finding (`ok` when all is well), or none when it does
    /// not apply (live checks outside a running agent).
    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a>;
}

/// Runs `list` over `ctx`, one after the other (some bind ports; none is slow but the TLS
/// handshake, which has its own timeout).
pub async fn run(list: &[Box<dyn Check>], ctx: &Context) -> Report {
    let mut findings = Vec::new();
    for check in list {
        findings.extend(check.run(ctx).await);
    }
    if ctx.live.is_none() {
        findings.push(Finding::warning(
            "agent",
            "The agent is not running, so nodes, packet rates, calibration and clocks were not checked.",
            "Start it with `local-agent run` (add `--source hub` for sensor nodes) and run `local-agent doctor` again.",
        ));
    }
    Report::new(findings, ctx.live.is_some())
}
