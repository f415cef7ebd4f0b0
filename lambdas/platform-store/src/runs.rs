//! Run records (30 days) and account events (30 days): both kept in the account's partition
//! under a time-ordered sort key, read newest first.

use async_trait::async_trait;
use platform_domain::StoreError;
use platform_domain::events::{Event, EventStore, RETENTION_DAYS};
use platform_domain::runs::{RETENTION_S, Run, RunStatus, RunStore};

use crate::dynamo::DynamoStore;
use crate::error::unavailable;
use crate::item::{Item, ItemBuilder, get_n, get_s, opt_s};
use crate::layout::{EVENT_PREFIX, RUN_PREFIX, account_pk, timed_sk};
use crate::table::{GSI1_PK, GSI1_SK, TTL_ATTRIBUTE};

fn run_from_item(item: &Item) -> Result<Run, StoreError> {
    let status = get_s(item, "status")?;
    let arguments = get_s(item, "arguments")?;
    Ok(Run {
        id: get_s(item, "run_id")?,
        tool: get_s(item, "tool")?,
        app: get_s(item, "app")?,
        status: RunStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown run status {status}")))?,
        duration_ms: get_n(item, "duration_ms")?,
        started_at_ms: get_n(item, "started_at_ms")?,
        error: opt_s(item, "error"),
        arguments: serde_json::from_str(&arguments)
            .map_err(|e| StoreError::Corrupt(format!("run arguments: {e}")))?,
    })
}

fn event_from_item(item: &Item) -> Result<Event, StoreError> {
    let data = get_s(item, "data")?;
    Ok(Event {
        id: get_s(item, "id")?,
        kind: get_s(item, "type")?,
        created_at_ms: get_n(item, "created_at_ms")?,
        data: serde_json::from_str(&data)
            .map_err(|e| StoreError::Corrupt(format!("event data: {e}")))?,
    })
}

impl DynamoStore {
    /// The latest `limit` items of the account with sort-key prefix `prefix`, newest first.
    async fn latest(
        &self,
        account_id: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        let out = self
            .partition_query(&account_pk(account_id), prefix)
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(out.items().to_vec())
    }
}

#[async_trait]
impl RunStore for DynamoStore {
    async fn record_run(&self, account_id: &str, run: &Run) -> Result<(), StoreError> {
        let item = ItemBuilder::new(
            account_pk(account_id),
            timed_sk(RUN_PREFIX, run.started_at_ms, &run.id),
        )
        .s("run_id", &run.id)
        .s("tool", &run.tool)
        .s("app", &run.app)
        .s("status", run.status.as_str())
        .n("duration_ms", run.duration_ms)
        .n("started_at_ms", run.started_at_ms)
        .s("arguments", run.arguments.to_string())
        .n(TTL_ATTRIBUTE, run.started_at_ms / 1000 + RETENTION_S)
        .s(GSI1_PK, format!("run#{}", run.id))
        .s(GSI1_SK, account_pk(account_id))
        .opt_s("error", run.error.as_deref())
        .build();
        self.put_new(item, "a run with this id exists").await
    }

    async fn latest_runs(&self, account_id: &str, limit: usize) -> Result<Vec<Run>, StoreError> {
        self.latest(account_id, RUN_PREFIX, limit)
            .await?
            .iter()
            .map(run_from_item)
            .collect()
    }
}

#[async_trait]
impl EventStore for DynamoStore {
    async fn put_event(&self, account_id: &str, event: &Event) -> Result<(), StoreError> {
        let item = ItemBuilder::new(
            account_pk(account_id),
            timed_sk(EVENT_PREFIX, event.created_at_ms, &event.id),
        )
        .s("id", &event.id)
        .s("type", &event.kind)
        .n("created_at_ms", event.created_at_ms)
        .s("data", event.data.to_string())
        .n(
            TTL_ATTRIBUTE,
            event.created_at_ms / 1000 + RETENTION_DAYS * 86_400,
        )
        .build();
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn latest_events(
        &self,
        account_id: &str,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.latest(account_id, EVENT_PREFIX, limit)
            .await?
            .iter()
            .map(event_from_item)
            .collect()
    }
}
