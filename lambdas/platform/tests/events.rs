//! Account events on DynamoDB Local: newest first, bounded, per account.

mod common;

use platform::domain::events::{CONNECTION_EXPIRED, TRIGGER_DISABLED, list_events, record_event};
use serde_json::json;

#[tokio::test]
async fn events_list_newest_first_and_stay_with_their_account() {
    let store = common::fresh_store().await;
    let t0 = 1_800_000_000_000;
    let first = record_event(
        &store,
        "a",
        CONNECTION_EXPIRED,
        json!({"connection_id": "conn_1"}),
        t0,
    )
    .await
    .unwrap();
    let second = record_event(
        &store,
        "a",
        TRIGGER_DISABLED,
        json!({"trigger_id": "trg_1"}),
        t0 + 5,
    )
    .await
    .unwrap();
    record_event(&store, "b", TRIGGER_DISABLED, json!({}), t0 + 9)
        .await
        .unwrap();

    let got = list_events(&store, "a", 10).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()]);
    assert_eq!(got[1].kind, CONNECTION_EXPIRED);
    assert_eq!(got[1].data["connection_id"], "conn_1");
    assert_eq!(got[0].to_json()["type"], TRIGGER_DISABLED);
    assert_eq!(list_events(&store, "a", 1).await.unwrap().len(), 1);
    assert_eq!(list_events(&store, "b", 10).await.unwrap().len(), 1);
    assert!(list_events(&store, "c", 10).await.unwrap().is_empty());
}
