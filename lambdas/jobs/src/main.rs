//! Lambda binary for scheduled trigger polling and webhook deliveries (EventBridge schedule).

use lambda_http::Error;
use platform::env::LOG_VAR;
use platform::store::DynamoStore;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .without_time()
        .with_env_filter(
            EnvFilter::try_from_env(LOG_VAR).unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    // Reads TABLE_NAME now so a deployment without it fails at once, not when triggers arrive.
    let _store = DynamoStore::from_env().await?;
    tracing::info!("jobs: no triggers to poll yet");
    Ok(())
}
