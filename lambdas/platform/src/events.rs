//! Account events: things that happened to an account's integrations without a request to
//! answer them (`connection.expired` when a refresh token is refused, `trigger.disabled` when a
//! receiver answers 410). They are kept 30 days, listed newest first by `GET /events`, and
//! delivered to the account's webhook receivers by the triggers module.
//!
//! Item: pk `acct#<account>`, sk `evt#<ms, 13 digits>#<id>`, TTL [`RETENTION_DAYS`].

use aws_sdk_dynamodb::types::AttributeValue;
use rand::RngCore;
use serde_json::{Value, json};

use crate::store::{DynamoStore, Item, StoreError, account_pk, get_n, get_s, n, s, unavailable};
use crate::table::{PK, SK, TTL_ATTRIBUTE};

pub const CONNECTION_EXPIRED: &str = "connection.expired";
pub const TRIGGER_DISABLED: &str = "trigger.disabled";
pub const RETENTION_DAYS: i64 = 30;
const EVENT_PREFIX: &str = "evt#";
pub const MAX_LIST: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub created_at_ms: i64,
    pub data: Value,
}

impl Event {
    /// The REST representation (`GET /events`).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": self.kind,
            "created_at": crate::clock::rfc3339(self.created_at_ms),
            "data": self.data,
        })
    }
}

fn new_event_id() -> String {
    let mut r = [0u8; 10];
    rand::rng().fill_bytes(&mut r);
    let mut id = String::from("evt_");
    for b in r {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Stores an event of `kind` for the account and returns its id.
pub async fn record_event(
    store: &DynamoStore,
    account_id: &str,
    kind: &str,
    data: Value,
    now_ms: i64,
) -> Result<String, StoreError> {
    let id = new_event_id();
    let item: Item = Item::from([
        (PK.to_owned(), s(account_pk(account_id))),
        (SK.to_owned(), s(format!("{EVENT_PREFIX}{now_ms:013}#{id}"))),
        ("id".to_owned(), s(&id)),
        ("type".to_owned(), s(kind)),
        ("created_at_ms".to_owned(), n(now_ms)),
        ("data".to_owned(), s(data.to_string())),
        (
            TTL_ATTRIBUTE.to_owned(),
            n(now_ms / 1000 + RETENTION_DAYS * 86_400),
        ),
    ]);
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .map_err(unavailable)?;
    tracing::info!(account = account_id, kind, event = %id, "account event recorded");
    Ok(id)
}

/// The account's latest events, newest first (at most [`MAX_LIST`]).
pub async fn list_events(
    store: &DynamoStore,
    account_id: &str,
    limit: usize,
) -> Result<Vec<Event>, StoreError> {
    let limit = limit.clamp(1, MAX_LIST);
    let out = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("#pk = :pk AND begins_with(#sk, :evt)")
        .expression_attribute_names("#pk", PK)
        .expression_attribute_names("#sk", SK)
        .expression_attribute_values(":pk", s(account_pk(account_id)))
        .expression_attribute_values(":evt", AttributeValue::S(EVENT_PREFIX.to_owned()))
        .scan_index_forward(false)
        .limit(i32::try_from(limit).unwrap_or(i32::MAX))
        .send()
        .await
        .map_err(unavailable)?;
    out.items()
        .iter()
        .map(|item| {
            let data = get_s(item, "data")?;
            Ok(Event {
                id: get_s(item, "id")?,
                kind: get_s(item, "type")?,
                created_at_ms: get_n(item, "created_at_ms")?,
                data: serde_json::from_str(&data)
                    .map_err(|e| StoreError::Corrupt(format!("event data: {e}")))?,
            })
        })
        .collect()
}
