//! DynamoDB access: client construction shared by the Lambda binaries, the local server and tests.

use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls;

/// Environment variable naming a DynamoDB endpoint to use instead of AWS (DynamoDB Local in tests
/// and development).
pub const ENDPOINT_VAR: &str = "DDB_ENDPOINT";

/// Environment variable naming the single table of the platform.
pub const TABLE_VAR: &str = "TABLE_NAME";

/// Builds a DynamoDB client from the standard AWS environment, honouring [`ENDPOINT_VAR`].
///
/// The HTTP client is built explicitly with rustls and ring because the SDK's default TLS stack is
/// disabled to keep the build small (see notes/toolchain.md).
pub async fn client_from_env() -> Client {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(http);
    if let Ok(endpoint) = std::env::var(ENDPOINT_VAR) {
        loader = loader.endpoint_url(endpoint);
    }
    Client::new(&loader.load().await)
}
