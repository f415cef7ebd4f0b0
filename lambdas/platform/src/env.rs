//! The environment each deployed function reads: the one list the Terraform in `infra/` is
//! checked against (`infra/test/consistency.test.mjs` compares it, through
//! `cargo run -p platform --example print-infra-contract`, with the functions' `environment`).
//!
//! Only [`crate::bootstrap`] reads these variables; the layers below take what it read as plain
//! values, so none of them knows the environment. Add a new variable here, read it in the
//! bootstrap, and add it to the function's list below, so a rename on either side fails that test
//! instead of a deployment.

/// The platform's one DynamoDB table.
pub const TABLE_VAR: &str = "TABLE_NAME";

/// A DynamoDB endpoint to use instead of AWS (DynamoDB Local in tests and development).
pub const ENDPOINT_VAR: &str = "DDB_ENDPOINT";

/// The `tracing` filter (`info` when unset), e.g. `info` or `platform=debug,info`.
pub const LOG_VAR: &str = "RUST_LOG";

/// The catalog file: the built artifact (`*.zst`) or a small JSON catalog; without it the
/// catalog is empty.
pub const CATALOG_VAR: &str = "CATALOG_PATH";

/// ARN of the customer-managed KMS key that encrypts connection credentials (OAuth tokens, API
/// keys of third-party apps, signing secrets) before they are stored. Only the key's ARN is in
/// the environment, never key material.
pub const CREDENTIALS_KEY_VAR: &str = "CREDENTIALS_KMS_KEY_ARN";

/// Local development and tests only: base64 of a 32-byte key-encryption key (instead of KMS).
pub const CREDENTIALS_LOCAL_KEY_VAR: &str = "CREDENTIALS_KEY";

/// Public origin of the platform (scheme + host), for connect links and the OAuth callback.
pub const PUBLIC_BASE_URL_VAR: &str = "PUBLIC_BASE_URL";

/// `app=url,app=url`: server URLs that replace the catalog's (local testing, regional hosts).
pub const BASE_URL_OVERRIDES_VAR: &str = "APP_BASE_URL_OVERRIDES";

/// Names the JSON file of OAuth client configurations.
pub const OAUTH_APPS_VAR: &str = "OAUTH_APPS";

/// Comma-separated hosts, IPs or CIDRs exempt from the outbound private-address guard, to which
/// plain `http` is also allowed (local testing only).
pub const OUTBOUND_ALLOW_VAR: &str = "PLATFORM_OUTBOUND_ALLOW";

/// Requests per minute per key (and per anonymous address) instead of 120: for hostile-input
/// and load runs against `api --local` only, so that they test the routes rather than the
/// limiter (which `platform/tests/rate_limit.rs` tests).
pub const RATE_LIMIT_VAR: &str = "PLATFORM_RATE_LIMIT";

/// What the `api` function reads in AWS (the Lambda runtime supplies `AWS_*` itself).
/// `PUBLIC_BASE_URL` is where connect links and webhook ingress URLs point; `OAUTH_APPS` names
/// the OAuth client file inside the package (optional: without it only API-key and basic-auth
/// apps connect).
pub const API_ENV: &[&str] = &[
    TABLE_VAR,
    LOG_VAR,
    CATALOG_VAR,
    CREDENTIALS_KEY_VAR,
    PUBLIC_BASE_URL_VAR,
    OAUTH_APPS_VAR,
];

/// Of [`API_ENV`], the variables that may be left unset (Terraform sets them only when given).
pub const API_OPTIONAL_ENV: &[&str] = &[CATALOG_VAR, OAUTH_APPS_VAR];

/// What the `jobs` function reads in AWS: polls run tools through the executor, so it needs the
/// catalog and the connection settings too.
pub const JOBS_ENV: &[&str] = API_ENV;

/// Of [`JOBS_ENV`], the variables that may be left unset.
pub const JOBS_OPTIONAL_ENV: &[&str] = API_OPTIONAL_ENV;

/// Read only outside AWS (development and tests); never set on a deployed function.
pub const LOCAL_ONLY_ENV: &[&str] = &[
    ENDPOINT_VAR,
    OUTBOUND_ALLOW_VAR,
    CREDENTIALS_LOCAL_KEY_VAR,
    BASE_URL_OVERRIDES_VAR,
    RATE_LIMIT_VAR,
];
