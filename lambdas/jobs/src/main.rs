//! Lambda binary for scheduled trigger polling and webhook deliveries (EventBridge schedule).

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt().json().without_time().init();
    let _client = platform::store::client_from_env().await;
    tracing::info!("jobs: no triggers to poll yet");
    Ok(())
}
