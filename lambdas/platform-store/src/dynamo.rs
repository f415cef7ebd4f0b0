//! The store itself and the few operations every module is built from: the one paging loop, the
//! conditional put, the due-index claim and the mapping of the SDK's errors onto
//! [`StoreError`]. Every invariant is a conditional write; every read on a request path is a
//! GetItem or a Query on a key; nothing scans.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{ReturnValue, TransactWriteItem};
use platform_domain::StoreError;

use crate::error::{Cancelled, unavailable, write_error};
use crate::item::{Item, opt_s, s};
use crate::layout::Due;
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK};

/// Every repository port of the domain over one DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// The item at `(pk, sk)`, read strongly consistently (a revocation, a used link or a
    /// claimed trigger shows on the very next read).
    pub(crate) async fn get_item(
        &self,
        pk: impl Into<String>,
        sk: impl Into<String>,
    ) -> Result<Option<Item>, StoreError> {
        let got = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(got.item().cloned())
    }

    /// A Query of partition `pk` for the sort keys starting with `prefix`.
    pub(crate) fn partition_query(&self, pk: &str, prefix: &str) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":prefix", s(prefix))
    }

    /// Every item `query` matches, following `LastEvaluatedKey` page by page: the one paging
    /// loop of the store.
    pub(crate) async fn query_all(
        &self,
        query: QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = query
                .clone()
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            out.extend(page.items().iter().cloned());
            match page.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    /// Puts `item` only if no item has its key; a lost condition is `Conflict(conflict)`.
    pub(crate) async fn put_new(
        &self,
        item: Item,
        conflict: &'static str,
    ) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(|e| write_error(e, conflict))?;
        Ok(())
    }

    /// Runs a transaction. A cancelled transaction is lost to someone else only when a condition
    /// failed or another transaction touched the same items; any other reason (validation,
    /// capacity) is a fault that must not pass for "someone else won".
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), Cancelled> {
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(e) = res else { return Ok(()) };
        if let Some(TransactWriteItemsError::TransactionCanceledException(c)) = e.as_service_error()
        {
            let reasons = c.cancellation_reasons();
            if let Some(i) = reasons
                .iter()
                .position(|r| r.code() == Some("ConditionalCheckFailed"))
            {
                return Err(Cancelled::Condition(i));
            }
            if reasons
                .iter()
                .any(|r| r.code() == Some("TransactionConflict"))
            {
                return Err(Cancelled::Conflict);
            }
        }
        Err(Cancelled::Store(unavailable(e)))
    }

    /// Claims up to `limit` items of `due` that are due at `now_ms`: each is moved to
    /// `lease_until_ms` with a conditional write on the due time it was read with and on its
    /// `status` still being `status`, so two overlapping runs never claim the same item. Returns
    /// the claimed items as they are after the claim.
    pub(crate) async fn claim_due(
        &self,
        due: Due,
        (now_ms, lease_until_ms): (i64, i64),
        limit: usize,
        (id_attr, status): (&str, &str),
    ) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        for shard in 0..Due::SHARDS {
            if out.len() >= limit {
                break;
            }
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(GSI1)
                .key_condition_expression("#g = :due AND #gs <= :now")
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#gs", GSI1_SK)
                .expression_attribute_values(":due", s(due.pk(shard)))
                .expression_attribute_values(":now", s(Due::upto(now_ms)))
                .limit(i32::try_from(limit - out.len()).unwrap_or(100))
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items() {
                let (Some(pk), Some(sk), Some(seen), Some(id)) = (
                    item.get(PK).cloned(),
                    item.get(SK).cloned(),
                    opt_s(item, GSI1_SK),
                    opt_s(item, id_attr),
                ) else {
                    continue;
                };
                let res = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .key(PK, pk)
                    .key(SK, sk)
                    .update_expression("SET #gs = :lease")
                    .condition_expression("#gs = :seen AND #st = :status")
                    .expression_attribute_names("#gs", GSI1_SK)
                    .expression_attribute_names("#st", "status")
                    .expression_attribute_values(":seen", s(seen))
                    .expression_attribute_values(":status", s(status))
                    .expression_attribute_values(":lease", s(Due::sk(lease_until_ms, &id)))
                    .return_values(ReturnValue::AllNew)
                    .send()
                    .await;
                match res {
                    Ok(r) => out.extend(r.attributes().cloned()),
                    Err(e) => match write_error(e, "claimed elsewhere") {
                        StoreError::Conflict(_) => {}
                        other => return Err(other),
                    },
                }
            }
        }
        Ok(out)
    }
}
