//! TEMPORARY stand-in for the lead's `events` module (plan9.md signature); replaced on merge.

use std::collections::HashMap;

use rand::RngCore;
use serde_json::Value;

use crate::store::{DynamoStore, StoreError, account_pk, get_n, get_s, n, s, unavailable};
use crate::table::{PK, SK};

#[derive(Debug, Clone)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub created_at_ms: i64,
    pub data: Value,
}

pub async fn record_event(
    store: &DynamoStore,
    account_id: &str,
    kind: &str,
    data: Value,
    now_ms: i64,
) -> Result<String, StoreError> {
    let mut r = [0u8; 8];
    rand::rng().fill_bytes(&mut r);
    let id = format!(
        "evt_{:012x}{}",
        now_ms.max(0),
        r.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(HashMap::from([
            (PK.to_owned(), s(account_pk(account_id))),
            (SK.to_owned(), s(format!("evt#{id}"))),
            ("event_id".to_owned(), s(&id)),
            ("type".to_owned(), s(kind)),
            ("created_at_ms".to_owned(), n(now_ms)),
            ("data".to_owned(), s(data.to_string())),
        ])))
        .send()
        .await
        .map_err(unavailable)?;
    Ok(id)
}

pub async fn list_events(
    store: &DynamoStore,
    account_id: &str,
    limit: usize,
) -> Result<Vec<Event>, StoreError> {
    let out = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("#pk = :pk AND begins_with(#sk, :e)")
        .expression_attribute_names("#pk", PK)
        .expression_attribute_names("#sk", SK)
        .expression_attribute_values(":pk", s(account_pk(account_id)))
        .expression_attribute_values(":e", s("evt#"))
        .scan_index_forward(false)
        .limit(i32::try_from(limit).unwrap_or(i32::MAX))
        .send()
        .await
        .map_err(unavailable)?;
    out.items()
        .iter()
        .map(|i| {
            Ok(Event {
                id: get_s(i, "event_id")?,
                kind: get_s(i, "type")?,
                created_at_ms: get_n(i, "created_at_ms")?,
                data: serde_json::from_str(&get_s(i, "data")?).unwrap_or(Value::Null),
            })
        })
        .collect()
}
