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

use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use platform_domain::StoreError;
use platform_domain::custom::{
    Connector, ConnectorStore, CustomError, CustomTool, Kind, MAX_CONNECTORS, Source,
};

use crate::dynamo::DynamoStore;
use crate::error::{Cancelled, build_error, write_error};
use crate::item::{Item, ItemBuilder, get_n, get_s, n, opt_s, s};
use crate::layout::{
    CONNECTOR_COUNT_SK as COUNT_SK, CONNECTOR_NAME_PREFIX as NAME_PREFIX, CONNECTOR_PREFIX,
    account_pk,
};
use crate::table::{PK, SK};
/// Compressed tools per connector; DynamoDB items end at 400 KB.
const MAX_TOOLS_BLOB: usize = 350 * 1024;

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
    Ok(
        ItemBuilder::new(account_pk(account), format!("{CONNECTOR_PREFIX}{}", c.id))
            .s("connector_id", &c.id)
            .s("name", &c.name)
            .s("kind", c.kind.as_str())
            .s(
                "source",
                match c.source {
                    Source::Url => "url",
                    Source::Inline => "inline",
                },
            )
            .attr(
                "header_names",
                AttributeValue::L(c.header_names.iter().map(s).collect()),
            )
            .n("tool_count", c.tools.len())
            .attr(
                "tools_z",
                AttributeValue::B(Blob::new(tools_blob(&c.tools)?)),
            )
            .n("created_at_ms", c.created_at_ms)
            .n("refreshed_at_ms", c.refreshed_at_ms)
            .opt_s("url", c.url.as_deref())
            .opt_s("base_url", c.base_url.as_deref())
            .opt_s("headers_sealed", c.headers_sealed.as_deref())
            .build(),
    )
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

#[async_trait]
impl ConnectorStore for DynamoStore {
    async fn put_connector(&self, account: &str, c: &Connector) -> Result<(), CustomError> {
        let connector = Put::builder()
            .table_name(self.table())
            .set_item(Some(connector_item(account, c)?))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_error)?;
        let guard = Put::builder()
            .table_name(self.table())
            .item(PK, s(account_pk(account)))
            .item(SK, s(format!("{NAME_PREFIX}{}", c.name)))
            .item("connector_id", s(&c.id))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_error)?;
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
            .map_err(build_error)?;
        let items = vec![
            TransactWriteItem::builder().put(connector).build(),
            TransactWriteItem::builder().put(guard).build(),
            TransactWriteItem::builder().update(count).build(),
        ];
        match self.transact(items).await {
            Ok(()) => Ok(()),
            Err(Cancelled::Condition(1)) => Err(CustomError::NameTaken(c.name.clone())),
            Err(Cancelled::Condition(2)) => Err(CustomError::LimitReached),
            Err(Cancelled::Condition(_)) => Err(CustomError::Store(StoreError::Conflict(
                "a connector with this id exists",
            ))),
            Err(Cancelled::Conflict) => Err(CustomError::Store(StoreError::Unavailable(
                "a concurrent transaction touched the connector's items".into(),
            ))),
            Err(Cancelled::Store(e)) => Err(CustomError::Store(e)),
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
            .get_item(account_pk(account), format!("{CONNECTOR_PREFIX}{id}"))
            .await?;
        got.as_ref().map(connector_from).transpose()
    }

    async fn connector_by_name(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<Connector>, StoreError> {
        let got = self
            .get_item(account_pk(account), format!("{NAME_PREFIX}{name}"))
            .await?;
        let Some(id) = got.as_ref().and_then(|i| opt_s(i, "connector_id")) else {
            return Ok(None);
        };
        self.get_connector(account, &id).await
    }

    async fn list_connectors(&self, account: &str) -> Result<Vec<Connector>, StoreError> {
        let query = self
            .partition_query(&account_pk(account), CONNECTOR_PREFIX)
            .consistent_read(true);
        self.query_all(query)
            .await?
            .iter()
            .map(connector_from)
            .collect()
    }

    async fn delete_connector(&self, account: &str, c: &Connector) -> Result<(), StoreError> {
        let connector = Delete::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{CONNECTOR_PREFIX}{}", c.id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(build_error)?;
        let guard = Delete::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(format!("{NAME_PREFIX}{}", c.name)))
            .build()
            .map_err(build_error)?;
        let count = Update::builder()
            .table_name(self.table())
            .key(PK, s(account_pk(account)))
            .key(SK, s(COUNT_SK))
            .update_expression("ADD #n :minus")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":minus", n(-1))
            .build()
            .map_err(build_error)?;
        let items = vec![
            TransactWriteItem::builder().delete(connector).build(),
            TransactWriteItem::builder().delete(guard).build(),
            TransactWriteItem::builder().update(count).build(),
        ];
        match self.transact(items).await {
            Ok(()) => Ok(()),
            Err(Cancelled::Condition(_)) => {
                Err(StoreError::NotFound("the connector was deleted meanwhile"))
            }
            Err(Cancelled::Conflict) => Err(StoreError::Unavailable(
                "a concurrent transaction touched the connector's items".into(),
            )),
            Err(Cancelled::Store(e)) => Err(e),
        }
    }
}
