//! DynamoDB items of custom connectors.
//!
//! - `acct#<account>` / `cc#<id>`: the connector, with its tools as zstd-compressed JSON
//!   (`tools_z`), so a refresh replaces them in one write and a search reads them in one Query.
//! - `acct#<account>` / `ccname#<name>`: the name guard (names are unique per account), holding
//!   the connector id.
//! - `acct#<account>` / `cc_count`: how many connectors the account has, so the limit holds
//!   under concurrent creation.
//!
//! Create and delete change all three in one transaction.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};

use super::{Connector, CustomError, CustomTool, Kind, MAX_CONNECTORS, Source};
use crate::store::{
    DynamoStore, Item, StoreError, account_pk, get_n, get_s, n, opt_s, s, unavailable, write_error,
};
use crate::table::{PK, SK};

const CONNECTOR_PREFIX: &str = "cc#";
const NAME_PREFIX: &str = "ccname#";
const COUNT_SK: &str = "cc_count";
/// Compressed tools per connector; DynamoDB items end at 400 KB.
const MAX_TOOLS_BLOB: usize = 350 * 1024;

pub trait CustomStore {
    /// Stores a new connector. `NameTaken` or `LimitReached` when those conditions fail.
    fn put_connector(
        &self,
        account: &str,
        c: &Connector,
    ) -> impl Future<Output = Result<(), CustomError>> + Send;

    /// Replaces the tools, base URL and refresh time of an existing connector.
    fn replace_connector_tools(
        &self,
        account: &str,
        c: &Connector,
    ) -> impl Future<Output = Result<(), CustomError>> + Send;

    fn get_connector(
        &self,
        account: &str,
        id: &str,
    ) -> impl Future<Output = Result<Option<Connector>, StoreError>> + Send;

    fn connector_by_name(
        &self,
        account: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Connector>, StoreError>> + Send;

    /// Every connector of the account, with its tools.
    fn list_connectors(
        &self,
        account: &str,
    ) -> impl Future<Output = Result<Vec<Connector>, StoreError>> + Send;

    fn delete_connector(
        &self,
        account: &str,
        c: &Connector,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

fn tools_blob(tools: &[CustomTool]) -> Result<Vec<u8>, CustomError> {
    let raw = serde_json::to_vec(tools)
        .map_err(|e| CustomError::Store(StoreError::Corrupt(e.to_string())))?;
    let z = zstd::stream::encode_all(raw.as_slice(), 3)
        .map_err(|e| CustomError::Store(StoreError::Corrupt(e.to_string())))?;
    if z.len() > MAX_TOOLS_BLOB {
        return Err(CustomError::ToolsTooLarge(z.len()));
    }
    Ok(z)
}

fn connector_item(account: &str, c: &Connector) -> Result<Item, CustomError> {
    let mut item = HashMap::from([
        (PK.to_owned(), s(account_pk(account))),
        (SK.to_owned(), s(format!("{CONNECTOR_PREFIX}{}", c.id))),
        ("connector_id".to_owned(), s(&c.id)),
        ("name".to_owned(), s(&c.name)),
        ("kind".to_owned(), s(c.kind.as_str())),
        (
            "source".to_owned(),
            s(match c.source {
                Source::Url => "url",
                Source::Inline => "inline",
            }),
        ),
        (
            "header_names".to_owned(),
            AttributeValue::L(c.header_names.iter().map(s).collect()),
        ),
        ("tool_count".to_owned(), n(c.tools.len())),
        (
            "tools_z".to_owned(),
            AttributeValue::B(Blob::new(tools_blob(&c.tools)?)),
        ),
        ("created_at_ms".to_owned(), n(c.created_at_ms)),
        ("refreshed_at_ms".to_owned(), n(c.refreshed_at_ms)),
    ]);
    if let Some(u) = &c.url {
        item.insert("url".to_owned(), s(u));
    }
    if let Some(b) = &c.base_url {
        item.insert("base_url".to_owned(), s(b));
    }
    if let Some(h) = &c.headers_sealed {
        item.insert("headers_sealed".to_owned(), s(h));
    }
    Ok(item)
}

fn connector_from(item: &Item) -> Result<Connector, StoreError> {
    let kind = get_s(item, "kind")?;
    let blob = item
        .get("tools_z")
        .and_then(|v| v.as_b().ok())
        .ok_or_else(|| StoreError::Corrupt("connector without tools".into()))?;
    let raw = zstd::stream::decode_all(blob.as_ref())
        .map_err(|e| StoreError::Corrupt(format!("connector tools: {e}")))?;
    let tools: Vec<CustomTool> = serde_json::from_slice(&raw)
        .map_err(|e| StoreError::Corrupt(format!("connector tools: {e}")))?;
    Ok(Connector {
        id: get_s(item, "connector_id")?,
        name: get_s(item, "name")?,
        kind: Kind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("connector kind {kind}")))?,
        source: match opt_s(item, "source").as_deref() {
            Some("inline") => Source::Inline,
            _ => Source::Url,
        },
        url: opt_s(item, "url"),
        base_url: opt_s(item, "base_url"),
        header_names: item
            .get("header_names")
            .and_then(|v| v.as_l().ok())
            .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
            .unwrap_or_default(),
        headers_sealed: opt_s(item, "headers_sealed"),
        tools,
        created_at_ms: get_n(item, "created_at_ms")?,
        refreshed_at_ms: get_n(item, "refreshed_at_ms")?,
    })
}

fn build_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl DynamoStore {
    /// Which of the transaction's items lost its condition, if any did.
    async fn transact_indexed(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<Result<(), usize>, StoreError> {
        let res = self
            .client()
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(e) = res else { return Ok(Ok(())) };
        if let Some(TransactWriteItemsError::TransactionCanceledException(c)) = e.as_service_error()
            && let Some(i) = c
                .cancellation_reasons()
                .iter()
                .position(|r| r.code() == Some("ConditionalCheckFailed"))
        {
            return Ok(Err(i));
        }
        Err(unavailable(e))
    }
}

impl CustomStore for DynamoStore {
    async fn put_connector(&self, account: &str, c: &Connector) -> Result<(), CustomError> {
        let connector = Put::builder()
            .table_name(self.table())
            .set_item(Some(connector_item(account, c)?))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_err)?;
        let guard = Put::builder()
            .table_name(self.table())
            .item(PK, s(account_pk(account)))
            .item(SK, s(format!("{NAME_PREFIX}{}", c.name)))
            .item("connector_id", s(&c.id))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_err)?;
        let count = Update::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(COUNT_SK))
            .update_expression("ADD #n :one")
            .condition_expression("attribute_not_exists(#n) OR #n < :max")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(MAX_CONNECTORS))
            .build()
            .map_err(build_err)?;
        let items = vec![
            TransactWriteItem::builder().put(connector).build(),
            TransactWriteItem::builder().put(guard).build(),
            TransactWriteItem::builder().update(count).build(),
        ];
        match self.transact_indexed(items).await? {
            Ok(()) => Ok(()),
            Err(1) => Err(CustomError::NameTaken(c.name.clone())),
            Err(2) => Err(CustomError::LimitReached),
            Err(_) => Err(CustomError::Store(StoreError::Conflict(
                "a connector with this id exists",
            ))),
        }
    }

    async fn replace_connector_tools(
        &self,
        account: &str,
        c: &Connector,
    ) -> Result<(), CustomError> {
        let mut update = self
            .client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{CONNECTOR_PREFIX}{}", c.id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":z", AttributeValue::B(Blob::new(tools_blob(&c.tools)?)))
            .expression_attribute_values(":count", n(c.tools.len()))
            .expression_attribute_values(":at", n(c.refreshed_at_ms));
        update = match &c.base_url {
            Some(b) => update
                .update_expression(
                    "SET tools_z = :z, tool_count = :count, refreshed_at_ms = :at, base_url = :b",
                )
                .expression_attribute_values(":b", s(b)),
            None => update
                .update_expression("SET tools_z = :z, tool_count = :count, refreshed_at_ms = :at"),
        };
        update.send().await.map_err(|e| {
            match write_error(e, "the connector was deleted meanwhile") {
                StoreError::Conflict(_) => CustomError::NotFound(c.id.clone()),
                other => CustomError::Store(other),
            }
        })?;
        Ok(())
    }

    async fn get_connector(
        &self,
        account: &str,
        id: &str,
    ) -> Result<Option<Connector>, StoreError> {
        let got = self
            .client()
            .get_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{CONNECTOR_PREFIX}{id}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        got.item().map(connector_from).transpose()
    }

    async fn connector_by_name(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<Connector>, StoreError> {
        let got = self
            .client()
            .get_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{NAME_PREFIX}{name}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        let Some(id) = got.item().and_then(|i| opt_s(i, "connector_id")) else {
            return Ok(None);
        };
        self.get_connector(account, &id).await
    }

    async fn list_connectors(&self, account: &str) -> Result<Vec<Connector>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client()
                .query()
                .table_name(self.table())
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :cc)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(account_pk(account)))
                .expression_attribute_values(":cc", s(CONNECTOR_PREFIX))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items() {
                out.push(connector_from(item)?);
            }
            match page.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    async fn delete_connector(&self, account: &str, c: &Connector) -> Result<(), StoreError> {
        let connector = Delete::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{CONNECTOR_PREFIX}{}", c.id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_err)?;
        let guard = Delete::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{NAME_PREFIX}{}", c.name)))
            .build()
            .map_err(build_err)?;
        let count = Update::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(COUNT_SK))
            .update_expression("ADD #n :minus")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":minus", n(-1))
            .build()
            .map_err(build_err)?;
        let items = vec![
            TransactWriteItem::builder().delete(connector).build(),
            TransactWriteItem::builder().delete(guard).build(),
            TransactWriteItem::builder().update(count).build(),
        ];
        match self.transact_indexed(items).await? {
            Ok(()) => Ok(()),
            Err(_) => Err(StoreError::NotFound("the connector was deleted meanwhile")),
        }
    }
}
