//! The jobs binary's `--once` round against DynamoDB Local: it finds the due trigger without a
//! scan, polls it through the executor, and records the outcome in the trigger's health (the
//! fixture catalog cannot run the list tool, so the poll fails, visibly rather than silently).

use std::sync::Arc;

use platform::domain::apps::StaticCatalog;
use platform::domain::clock::{Clock, SystemClock};
use platform::exec::outbound::{Outbound, OutboundPolicy};
use platform::exec::triggers::{NewTrigger, Triggers};
use platform::store::DynamoStore;
use platform::store::Sealer;
use serde_json::Value;

#[tokio::test]
async fn one_round_polls_the_due_trigger_and_records_its_health() {
    std::env::var(platform::env::ENDPOINT_VAR).expect("DDB_ENDPOINT must point at DynamoDB Local");
    let client = platform::bootstrap::dynamodb_client().await;
    let table = format!("jobs-{}-{}", std::process::id(), SystemClock.now_ms());
    platform::store::table::create_table(&client, &table)
        .await
        .unwrap();
    let store = DynamoStore::new(client, &table);
    let catalog_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../platform/tests/fixtures/catalog.json");
    let triggers = Triggers::new(
        store,
        Arc::new(StaticCatalog::from_path(&catalog_path).unwrap()),
        Arc::new(SystemClock),
        Arc::new(Outbound::new(OutboundPolicy::default()).unwrap()),
        Arc::new(Sealer::local([1u8; 32])),
        None,
    );
    let new = NewTrigger {
        app: "slack",
        event: "new_channel",
        webhook_url: "https://example.com/hook",
        connection_id: None,
        filter: None,
        params: None,
    };
    let id = triggers.create("acct_jobs", new).await.unwrap().trigger.id;

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jobs"))
        .arg("--once")
        .env(platform::env::TABLE_VAR, &table)
        .env(platform::env::CATALOG_VAR, &catalog_path)
        .env(platform::env::PUBLIC_BASE_URL_VAR, "http://127.0.0.1:9")
        // base64 of 32 bytes of 1: the same local key the triggers above sealed with.
        .env(
            platform::env::CREDENTIALS_LOCAL_KEY_VAR,
            "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["poll"]["polled"], 1, "{report}");
    assert_eq!(report["poll"]["failed"], 1, "{report}");

    let t = triggers.get("acct_jobs", &id).await.unwrap().unwrap();
    let health = t.to_json()["health"].clone();
    assert!(health["last_poll_at"].is_string(), "{health}");
    assert!(
        health["last_error"]
            .as_str()
            .unwrap()
            .contains("not available"),
        "{health}"
    );

    // Not due again within the back-off: a second round finds nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jobs"))
        .arg("--once")
        .env(platform::env::TABLE_VAR, &table)
        .env(platform::env::CATALOG_VAR, &catalog_path)
        .env(platform::env::PUBLIC_BASE_URL_VAR, "http://127.0.0.1:9")
        // base64 of 32 bytes of 1: the same local key the triggers above sealed with.
        .env(
            platform::env::CREDENTIALS_LOCAL_KEY_VAR,
            "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
        )
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["poll"]["polled"], 0, "{report}");
}
