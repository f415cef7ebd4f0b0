//! `local-agent doctor` on the command line: the running agent's findings when one answers,
//! else the checks that need no agent.

use std::time::Duration;

use super::{Context, Ports, Report, checks, run};
use crate::runtime::{self, RuntimeInfo};

/// Longest wait for the running agent's findings (its TLS probe alone may take 5 s).
const AGENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The findings: from the running agent found through the runtime file in the data directory,
/// or from the checks this process can run by itself.
pub async fn doctor(ports: Ports) -> Report {
    let ctx = Context::from_env(ports);
    if let Ok(dir) = &ctx.data_dir
        && let Some(info) = runtime::read(dir)
    {
        match from_agent(&info).await {
            Ok(report) => return report,
            Err(e) => tracing::info!(error = %e, "no running agent answered; checking without it"),
        }
    }
    run(&checks::all(), &ctx).await
}

/// Asks a running agent's live view for its findings.
pub async fn from_agent(info: &RuntimeInfo) -> Result<Report, String> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(AGENT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let reply = client
        .get(format!("http://127.0.0.1:{}/api/doctor", info.port))
        .bearer_auth(&info.token)
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !reply.status().is_success() {
        return Err(format!("the agent answered {}", reply.status()));
    }
    let bytes = reply
        .bytes()
        .await
        .map_err(|e| e.without_url().to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not a doctor report: {e}"))
}
