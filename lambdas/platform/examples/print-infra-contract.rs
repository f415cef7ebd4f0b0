//! Prints, as JSON, what the Terraform in `infra/` must match: the table's key, index and TTL
//! names (from `platform-store`) and each function's environment (from `platform::env`).
//! `infra/test/consistency.test.mjs` compares it with the parsed HCL, so the Rust constants stay
//! the source of truth.

use platform::env;
use platform::store::table;
use serde_json::json;

fn main() {
    let contract = json!({
        "table": {
            "partition_key": table::PK,
            "sort_key": table::SK,
            "attribute_type": "S",
            "billing_mode": "PAY_PER_REQUEST",
            "global_secondary_indexes": [{
                "name": table::GSI1,
                "partition_key": table::GSI1_PK,
                "sort_key": table::GSI1_SK,
                "projection": "ALL",
            }],
            "ttl_attribute": table::TTL_ATTRIBUTE,
        },
        "table_name_var": env::TABLE_VAR,
        "functions": {
            "api": { "env": env::API_ENV, "optional_env": env::API_OPTIONAL_ENV },
            "jobs": { "env": env::JOBS_ENV, "optional_env": env::JOBS_OPTIONAL_ENV },
        },
        "local_only_env": env::LOCAL_ONLY_ENV,
    });
    println!("{contract:#}");
}
