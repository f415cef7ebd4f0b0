//! The environment each deployed function reads: the one list the Terraform in `infra/` is
//! checked against (`infra/test/consistency.test.mjs` compares it, through
//! `cargo run -p platform --example print-infra-contract`, with the functions' `environment`).
//! Read a variable through a constant from here, and add it to the function's list, so a rename
//! on either side fails that test instead of a deployment.

pub use crate::outbound::ALLOW_VAR as OUTBOUND_ALLOW_VAR;
pub use crate::sealed::LOCAL_KEY_VAR as CREDENTIALS_LOCAL_KEY_VAR;
pub use crate::store::{ENDPOINT_VAR, TABLE_VAR};

/// The `tracing` filter (`info` when unset), e.g. `info` or `platform=debug,info`.
pub const LOG_VAR: &str = "RUST_LOG";

/// A JSON catalog file (see `static_catalog`); without it the catalog is empty.
pub const CATALOG_VAR: &str = "CATALOG_PATH";

/// ARN of the customer-managed KMS key that encrypts connection credentials (OAuth tokens, API
/// keys of third-party apps, signing secrets) before they are stored (see `sealed`). Only the
/// key's ARN is in the environment, never key material.
pub const CREDENTIALS_KEY_VAR: &str = "CREDENTIALS_KMS_KEY_ARN";

/// What the `api` function reads in AWS (the Lambda runtime supplies `AWS_*` itself).
pub const API_ENV: &[&str] = &[TABLE_VAR, LOG_VAR, CATALOG_VAR, CREDENTIALS_KEY_VAR];

/// Of [`API_ENV`], the variables that may be left unset (Terraform sets them only when given).
pub const API_OPTIONAL_ENV: &[&str] = &[CATALOG_VAR];

/// What the `jobs` function reads in AWS.
pub const JOBS_ENV: &[&str] = &[TABLE_VAR, LOG_VAR, CREDENTIALS_KEY_VAR];

/// Read only outside AWS (development and tests); never set on a deployed function.
pub const LOCAL_ONLY_ENV: &[&str] = &[
    ENDPOINT_VAR,
    OUTBOUND_ALLOW_VAR,
    CREDENTIALS_LOCAL_KEY_VAR,
];
