//! The webhook outbox: pk `acct#<account>`, sk `msg#<id>`. Pending messages sit in the sparse
//! due index (`gsi1pk = due#msg#<shard>`, `gsi1sk = <next attempt ms>#<msg id>`); a finished
//! message leaves it and is deleted by the TTL a week later.

use async_trait::async_trait;
use platform_domain::StoreError;
use platform_domain::webhooks::{
    CLAIM_LEASE_MS, Finish, Message, NewMessage, OutboxStore, RETENTION_S, SCHEDULE_S,
};

use crate::dynamo::DynamoStore;
use crate::error::unavailable;
use crate::item::{Item, ItemBuilder, get_n, get_s, n, s};
use crate::layout::{Due, MESSAGE_PREFIX, account_pk};
use crate::table::{GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE};

fn msg_sk(id: &str) -> String {
    format!("{MESSAGE_PREFIX}{id}")
}

fn message_from_item(item: &Item) -> Result<Message, StoreError> {
    Ok(Message {
        id: get_s(item, "msg_id")?,
        account_id: get_s(item, "account_id")?,
        trigger_id: get_s(item, "trigger_id")?,
        kind: get_s(item, "type")?,
        body: get_s(item, "body")?,
        attempts: get_n(item, "attempts")?,
    })
}

#[async_trait]
impl OutboxStore for DynamoStore {
    async fn enqueue(&self, msg: &NewMessage, now_ms: i64) -> Result<bool, StoreError> {
        let item = ItemBuilder::new(account_pk(&msg.account_id), msg_sk(&msg.id))
            .s("msg_id", &msg.id)
            .s("account_id", &msg.account_id)
            .s("trigger_id", &msg.trigger_id)
            .s("type", &msg.kind)
            .s("body", &msg.body)
            .n("attempts", 0)
            .s("status", "pending")
            .n("created_at_ms", now_ms)
            .n("next_attempt_ms", now_ms)
            .s(GSI1_PK, Due::Message.pk_of(&msg.id))
            .s(GSI1_SK, Due::sk(now_ms, &msg.id))
            .n(
                TTL_ATTRIBUTE,
                now_ms / 1000 + RETENTION_S + SCHEDULE_S.iter().sum::<i64>(),
            )
            .build();
        match self.put_new(item, "message exists").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn claim_due_messages(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        let claimed = self
            .claim_due(
                Due::Message,
                (now_ms, now_ms + CLAIM_LEASE_MS),
                limit,
                ("msg_id", "pending"),
            )
            .await?;
        Ok(claimed
            .iter()
            .filter_map(|item| match message_from_item(item) {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::error!(error = %e, "malformed outbox message");
                    None
                }
            })
            .collect())
    }

    async fn finish(&self, msg: &Message, outcome: &Finish, now_ms: i64) -> Result<(), StoreError> {
        let attempts = msg.attempts + 1;
        let mut u = self
            .client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(&msg.account_id)))
            .key(SK, s(msg_sk(&msg.id)))
            .expression_attribute_values(":attempts", n(attempts))
            .expression_attribute_values(":at", n(now_ms));
        let done_ttl = n(now_ms / 1000 + RETENTION_S);
        u = match outcome {
            Finish::Delivered { status } => u
                .update_expression(
                    "SET #st = :s, attempts = :attempts, last_attempt_ms = :at, \
                     last_status = :code, #ttl = :ttl REMOVE #g, #gs",
                )
                .expression_attribute_values(":s", s("delivered"))
                .expression_attribute_values(":code", n(*status))
                .expression_attribute_values(":ttl", done_ttl),
            Finish::Retry { at_ms, error } => u
                .update_expression(
                    "SET attempts = :attempts, last_attempt_ms = :at, last_error = :err, \
                     next_attempt_ms = :next, #gs = :due",
                )
                .expression_attribute_values(":err", s(error))
                .expression_attribute_values(":next", n(*at_ms))
                .expression_attribute_values(":due", s(Due::sk(*at_ms, &msg.id))),
            Finish::Failed { error } | Finish::Cancelled { reason: error } => u
                .update_expression(
                    "SET #st = :s, attempts = :attempts, last_attempt_ms = :at, \
                     last_error = :err, #ttl = :ttl REMOVE #g, #gs",
                )
                .expression_attribute_values(
                    ":s",
                    s(if matches!(outcome, Finish::Failed { .. }) {
                        "failed"
                    } else {
                        "cancelled"
                    }),
                )
                .expression_attribute_values(":err", s(error))
                .expression_attribute_values(":ttl", done_ttl),
        };
        if !matches!(outcome, Finish::Retry { .. }) {
            u = u
                .expression_attribute_names("#st", "status")
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#ttl", TTL_ATTRIBUTE);
        }
        u.expression_attribute_names("#gs", GSI1_SK)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}
