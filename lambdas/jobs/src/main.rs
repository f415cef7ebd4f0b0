//! The jobs function: trigger polling and Standard Webhooks deliveries, one round per
//! invocation. In AWS, EventBridge invokes it on a schedule (`infra/jobs.tf`) and it runs the
//! Lambda runtime loop; for development and tests, `--once` runs a single round and prints its
//! report, and `--local-loop` runs rounds every `--interval-s` seconds until Ctrl-C. All modes
//! read the same environment as the api function (TABLE_NAME, CATALOG_PATH, the credentials key,
//! PUBLIC_BASE_URL, OAUTH_APPS, RUST_LOG; DDB_ENDPOINT and PLATFORM_OUTBOUND_ALLOW locally).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use lambda_http::lambda_runtime::{self, LambdaEvent, service_fn};
use platform::bootstrap::{self, Platform};
use platform::domain::clock::{Clock, SystemClock};
use platform::domain::triggers::RoundReport;
use platform::exec::Integrations;
use platform::exec::triggers::Triggers;
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "jobs",
    about = "Companion platform jobs: polls triggers and delivers webhooks. Runs as a Lambda \
             function by default.",
    after_help = "Environment: TABLE_NAME (required), DDB_ENDPOINT (DynamoDB Local), \
                  CREDENTIALS_KMS_KEY_ARN, PLATFORM_OUTBOUND_ALLOW, the usual AWS_* variables, \
                  RUST_LOG."
)]
struct Cli {
    /// Run one round, print its report as JSON and exit (non-zero if the round failed).
    #[arg(long, conflicts_with = "local_loop")]
    once: bool,
    /// Run a round every --interval-s seconds until interrupted.
    #[arg(long)]
    local_loop: bool,
    /// Seconds between rounds of --local-loop.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    interval_s: u64,
}

struct Jobs {
    triggers: Triggers,
    /// Polls run the app's list tool through the executor: the trigger's connection, its
    /// credentials, the SSRF guard and a recorded run, exactly like a tool run.
    source: Arc<Integrations>,
}

/// The same wiring as the api function (`platform::bootstrap`); jobs need the integrations.
async fn build() -> Result<Jobs, String> {
    let platform = Platform::from_env().await.map_err(|e| e.to_string())?;
    let (triggers, integrations) = platform.jobs().map_err(|e| e.to_string())?;
    Ok(Jobs {
        triggers,
        source: integrations,
    })
}

/// The longest a single poll or delivery may take (the outbound client's timeout): a round
/// starts no new one later than this before its deadline.
const LAST_START_MARGIN: Duration = Duration::from_secs(32);

/// Budget of a round outside Lambda.
const LOCAL_ROUND: Duration = Duration::from_secs(60);

async fn round(jobs: &Jobs, until: Instant) -> Result<RoundReport, String> {
    let report = jobs
        .triggers
        .run_round(jobs.source.executor.as_ref(), SystemClock.now_ms(), until)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(
        polled = report.poll.polled,
        poll_failures = report.poll.failed,
        new_items = report.poll.new_items,
        attempted = report.delivery.attempted,
        delivered = report.delivery.delivered,
        retrying = report.delivery.retrying,
        failed = report.delivery.failed,
        cancelled = report.delivery.cancelled,
        "jobs round"
    );
    Ok(report)
}

#[tokio::main]
async fn main() -> ExitCode {
    bootstrap::init_logs();
    let cli = Cli::parse();
    let jobs = match build().await {
        Ok(j) => Arc::new(j),
        Err(e) => {
            tracing::error!(error = %e, "jobs cannot start");
            return ExitCode::FAILURE;
        }
    };

    if cli.once {
        return match round(&jobs, Instant::now() + LOCAL_ROUND).await {
            Ok(report) => {
                println!("{}", serde_json::to_string(&report).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!(error = %e, "jobs round failed");
                ExitCode::FAILURE
            }
        };
    }

    if cli.local_loop {
        let mut tick = tokio::time::interval(Duration::from_secs(cli.interval_s));
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Err(e) = round(&jobs, Instant::now() + LOCAL_ROUND).await {
                        // The next tick retries; a store outage must not end the loop.
                        tracing::error!(error = %e, "jobs round failed");
                    }
                }
                _ = tokio::signal::ctrl_c() => return ExitCode::SUCCESS,
            }
        }
    }

    // EventBridge's scheduled event carries nothing we need; each invocation is one round. A
    // failed round fails the invocation, so Lambda retries it and finally dead-letters it.
    let handler = service_fn(move |event: LambdaEvent<Value>| {
        let jobs = jobs.clone();
        // The invocation's deadline (epoch ms) less room for the last request to finish.
        let left_ms = event
            .context
            .deadline
            .saturating_sub(u64::try_from(SystemClock.now_ms()).unwrap_or(0));
        let until =
            Instant::now() + Duration::from_millis(left_ms).saturating_sub(LAST_START_MARGIN);
        async move {
            round(&jobs, until)
                .await
                .map(|r| serde_json::to_value(r).unwrap_or_default())
                .map_err(lambda_runtime::Error::from)
        }
    });
    match lambda_runtime::run(handler).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "Lambda runtime stopped");
            ExitCode::FAILURE
        }
    }
}
