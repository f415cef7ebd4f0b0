//! The AWS SDK's configuration for the platform's clients (DynamoDB here, KMS for
//! [`crate::sealed`]). The bootstrap decides the endpoint and table; nothing here reads the
//! environment beyond what the SDK itself reads (region, credentials).

use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls;

/// The shared AWS configuration from the SDK's standard sources (region, credentials).
///
/// The HTTP client is built explicitly with rustls and ring because the SDK's default TLS stack is
/// disabled to keep the build small (see notes/toolchain.md).
pub async fn sdk_config() -> aws_config::SdkConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .load()
        .await
}

/// A DynamoDB client; `endpoint` replaces AWS's (DynamoDB Local) for DynamoDB only, not for the
/// other AWS services the platform calls.
pub async fn dynamodb_client(endpoint: Option<&str>) -> Client {
    let config = sdk_config().await;
    let mut builder = aws_sdk_dynamodb::config::Builder::from(&config);
    if let Some(endpoint) = endpoint {
        builder = builder.endpoint_url(endpoint);
    }
    Client::from_conf(builder.build())
}
