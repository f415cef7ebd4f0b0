//! Triggers: pk `acct#<account>`, sk `trg#<id>`. Active poll triggers are in the sparse due index
//! (`gsi1pk = due#trg#<shard>`, `gsi1sk = <next poll, ms, 13 digits>#<id>`); webhook triggers are
//! found by id for the ingress through `gsi1pk = hook#<id>`.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::Select;
use platform_domain::StoreError;
use platform_domain::triggers::{EventKind, PollUpdate, Trigger, TriggerStore};

use crate::dynamo::DynamoStore;
use crate::error::{unavailable, write_error};
use crate::item::{Item, ItemBuilder, get_n, get_s, json_s, n, opt_s, s};
use crate::layout::{Due, TRIGGER_PREFIX, account_pk, hook_pk};
use crate::table::{GSI1, GSI1_PK, GSI1_SK, PK, SK};

fn trigger_sk(id: &str) -> String {
    format!("{TRIGGER_PREFIX}{id}")
}

fn trigger_from_item(item: &Item) -> Result<Trigger, StoreError> {
    let kind = get_s(item, "kind")?;
    Ok(Trigger {
        id: get_s(item, "trigger_id")?,
        account_id: get_s(item, "account_id")?,
        app: get_s(item, "app")?,
        event: get_s(item, "event")?,
        kind: EventKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("trigger kind {kind}")))?,
        tool: opt_s(item, "tool"),
        connection_id: opt_s(item, "connection_id"),
        webhook_url: get_s(item, "webhook_url")?,
        filter: json_s(item, "filter", "trigger")?,
        params: json_s(item, "params", "trigger")?,
        active: get_s(item, "status")? == "active",
        disabled_reason: opt_s(item, "disabled_reason"),
        created_at_ms: get_n(item, "created_at_ms")?,
        last_poll_ms: get_n(item, "last_poll_ms").ok(),
        last_event_ms: get_n(item, "last_event_ms").ok(),
        last_delivery_ms: get_n(item, "last_delivery_ms").ok(),
        last_error: opt_s(item, "last_error"),
        poll_failures: get_n(item, "poll_failures").unwrap_or(0),
        delivery_failures: get_n(item, "delivery_failures").unwrap_or(0),
        baseline: get_n::<u8>(item, "baseline").unwrap_or(0) == 1,
        seen: json_s(item, "seen", "trigger")?.unwrap_or_default(),
        sealed_secret: get_s(item, "secret")?,
    })
}

fn trigger_item(t: &Trigger, hook_token_hash: Option<&str>) -> Item {
    let item = ItemBuilder::new(account_pk(&t.account_id), trigger_sk(&t.id))
        .s("trigger_id", &t.id)
        .s("account_id", &t.account_id)
        .s("app", &t.app)
        .s("event", &t.event)
        .s("kind", t.kind.as_str())
        .s("webhook_url", &t.webhook_url)
        .s("status", if t.active { "active" } else { "disabled" })
        .s("secret", &t.sealed_secret)
        .n("created_at_ms", t.created_at_ms)
        .n("poll_failures", t.poll_failures)
        .n("delivery_failures", t.delivery_failures)
        .n("baseline", u8::from(t.baseline))
        .opt_s("tool", t.tool.as_deref())
        .opt_s("connection_id", t.connection_id.as_deref())
        .opt_s("filter", t.filter.as_ref().map(|f| f.to_string()))
        .opt_s("params", t.params.as_ref().map(|p| p.to_string()));
    match t.kind {
        // Due at once: the first poll records what exists (the baseline) without firing.
        EventKind::Poll => item
            .s(GSI1_PK, Due::Trigger.pk_of(&t.id))
            .s(GSI1_SK, Due::sk(t.created_at_ms, &t.id)),
        EventKind::Webhook => item
            .opt_s("hook_token_hash", hook_token_hash)
            .s(GSI1_PK, hook_pk(&t.id))
            .s(GSI1_SK, account_pk(&t.account_id)),
    }
    .build()
}

impl DynamoStore {
    /// An update of trigger `t`.
    fn update_trigger(&self, t: &Trigger) -> UpdateItemFluentBuilder {
        self.client()
            .update_item()
            .table_name(self.table())
            .key(PK, s(account_pk(&t.account_id)))
            .key(SK, s(trigger_sk(&t.id)))
    }

    /// Sends a conditional update whose lost condition means the trigger changed or went
    /// meanwhile, which the caller does not mind.
    async fn update_unless_gone(
        &self,
        update: UpdateItemFluentBuilder,
        conflict: &'static str,
    ) -> Result<(), StoreError> {
        StoreError::ignore_conflict(
            update
                .send()
                .await
                .map(|_| ())
                .map_err(|e| write_error(e, conflict)),
        )
    }
}

#[async_trait]
impl TriggerStore for DynamoStore {
    async fn put_trigger(
        &self,
        t: &Trigger,
        hook_token_hash: Option<&str>,
    ) -> Result<(), StoreError> {
        self.put_new(trigger_item(t, hook_token_hash), "trigger id taken")
            .await
    }

    async fn get_trigger(&self, account_id: &str, id: &str) -> Result<Option<Trigger>, StoreError> {
        let got = self
            .get_item(account_pk(account_id), trigger_sk(id))
            .await?;
        got.as_ref().map(trigger_from_item).transpose()
    }

    async fn count_triggers(&self, account_id: &str) -> Result<usize, StoreError> {
        let out = self
            .partition_query(&account_pk(account_id), TRIGGER_PREFIX)
            .select(Select::Count)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(usize::try_from(out.count()).unwrap_or(0))
    }

    async fn all_triggers(&self, account_id: &str) -> Result<Vec<Trigger>, StoreError> {
        let query = self
            .partition_query(&account_pk(account_id), TRIGGER_PREFIX)
            .consistent_read(true);
        self.query_all(query)
            .await?
            .iter()
            .map(trigger_from_item)
            .collect()
    }

    async fn trigger_page(
        &self,
        account_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Trigger>, bool), StoreError> {
        let start =
            after.map(|id| ItemBuilder::new(account_pk(account_id), trigger_sk(id)).build());
        let page = self
            .partition_query(&account_pk(account_id), TRIGGER_PREFIX)
            .set_exclusive_start_key(start)
            .limit(i32::try_from(limit).unwrap_or(50))
            .send()
            .await
            .map_err(unavailable)?;
        let triggers = page
            .items()
            .iter()
            .map(trigger_from_item)
            .collect::<Result<_, _>>()?;
        let more = page.last_evaluated_key().is_some_and(|k| !k.is_empty());
        Ok((triggers, more))
    }

    async fn delete_trigger(&self, account_id: &str, id: &str) -> Result<(), StoreError> {
        let res = self
            .client()
            .delete_item()
            .table_name(self.table())
            .key(PK, s(account_pk(account_id)))
            .key(SK, s(trigger_sk(id)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        match res.map_err(|e| write_error(e, "no such trigger")) {
            Ok(_) => Ok(()),
            Err(StoreError::Conflict(_)) => Err(StoreError::NotFound("no such trigger")),
            Err(e) => Err(e),
        }
    }

    async fn enable_trigger(&self, t: &Trigger, now_ms: i64) -> Result<(), StoreError> {
        let u = self
            .update_trigger(t)
            .condition_expression("attribute_exists(#pk) AND #st = :disabled")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":disabled", s("disabled"))
            .expression_attribute_values(":active", s("active"))
            .expression_attribute_values(":zero", n(0));
        let u = match t.kind {
            EventKind::Poll => u
                .update_expression(
                    "SET #st = :active, poll_failures = :zero, delivery_failures = :zero, \
                     #g = :due, #gs = :at REMOVE disabled_reason",
                )
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#gs", GSI1_SK)
                .expression_attribute_values(":due", s(Due::Trigger.pk_of(&t.id)))
                .expression_attribute_values(":at", s(Due::sk(now_ms, &t.id))),
            EventKind::Webhook => u.update_expression(
                "SET #st = :active, poll_failures = :zero, delivery_failures = :zero \
                 REMOVE disabled_reason",
            ),
        };
        u.send()
            .await
            .map_err(|e| write_error(e, "changed meanwhile"))?;
        Ok(())
    }

    async fn disable_trigger(&self, t: &Trigger, reason: &str) -> Result<(), StoreError> {
        let req = self
            .update_trigger(t)
            .condition_expression("#st = :active")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":active", s("active"))
            .expression_attribute_values(":disabled", s("disabled"))
            .expression_attribute_values(":reason", s(reason))
            .expression_attribute_values(":err", s(format!("disabled: {reason}")));
        let req = match t.kind {
            // Poll triggers leave the due index; webhook triggers keep their lookup entry so the
            // ingress can say "disabled" rather than "unknown".
            EventKind::Poll => req
                .update_expression(
                    "SET #st = :disabled, disabled_reason = :reason, last_error = :err \
                     REMOVE #g, #gs",
                )
                .expression_attribute_names("#g", GSI1_PK)
                .expression_attribute_names("#gs", GSI1_SK),
            EventKind::Webhook => req.update_expression(
                "SET #st = :disabled, disabled_reason = :reason, last_error = :err",
            ),
        };
        req.send().await.map_err(|e| write_error(e, "not active"))?;
        Ok(())
    }

    async fn hook_trigger(&self, id: &str) -> Result<Option<(Trigger, String)>, StoreError> {
        let found = self
            .client()
            .query()
            .table_name(self.table())
            .index_name(GSI1)
            .key_condition_expression("#g = :h")
            .expression_attribute_names("#g", GSI1_PK)
            .expression_attribute_values(":h", s(hook_pk(id)))
            .limit(1)
            .send()
            .await
            .map_err(unavailable)?;
        let Some(item) = found.items().first() else {
            return Ok(None);
        };
        let hash = opt_s(item, "hook_token_hash").unwrap_or_default();
        Ok(Some((trigger_from_item(item)?, hash)))
    }

    async fn record_event_seen(&self, t: &Trigger, now_ms: i64) -> Result<(), StoreError> {
        let update = self
            .update_trigger(t)
            .update_expression("SET last_event_ms = :now")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", n(now_ms));
        self.update_unless_gone(update, "trigger gone").await
    }

    async fn claim_due_triggers(
        &self,
        now_ms: i64,
        limit: usize,
        lease_until_ms: i64,
    ) -> Result<Vec<Trigger>, StoreError> {
        let claimed = self
            .claim_due(
                Due::Trigger,
                (now_ms, lease_until_ms),
                limit,
                ("trigger_id", "active"),
            )
            .await?;
        Ok(claimed
            .iter()
            .filter_map(|item| match trigger_from_item(item) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::error!(error = %e, "malformed trigger");
                    None
                }
            })
            .collect())
    }

    async fn after_poll(
        &self,
        t: &Trigger,
        lease_until_ms: i64,
        u: &PollUpdate,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut set = vec![
            "last_poll_ms = :now",
            "poll_failures = :f",
            "baseline = :b",
            "#gs = :next",
        ];
        let mut remove = Vec::new();
        let mut req = self
            .update_trigger(t)
            .condition_expression("#st = :active AND #gs = :lease")
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#gs", GSI1_SK)
            .expression_attribute_values(":active", s("active"))
            .expression_attribute_values(":lease", s(Due::sk(lease_until_ms, &t.id)))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":f", n(u.failures))
            .expression_attribute_values(":b", n(u8::from(u.baseline)))
            .expression_attribute_values(":next", s(Due::sk(u.next_ms, &t.id)));
        if let Some(seen) = &u.seen {
            set.push("seen = :seen");
            req = req.expression_attribute_values(
                ":seen",
                s(serde_json::to_string(seen).unwrap_or_else(|_| "[]".into())),
            );
        }
        if u.fired {
            set.push("last_event_ms = :now");
        }
        match &u.error {
            Some(e) => {
                set.push("last_error = :err");
                req = req.expression_attribute_values(":err", s(e));
            }
            // A success clears the error only if deliveries are not failing too.
            None if t.delivery_failures == 0 => remove.push("last_error"),
            None => {}
        }
        let mut expr = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expr.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        // Disabled or deleted while polling: nothing to record.
        self.update_unless_gone(req.update_expression(expr), "trigger changed")
            .await
    }

    async fn delivery_health(
        &self,
        t: &Trigger,
        error: Option<String>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let req = self
            .update_trigger(t)
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK);
        let req = match error {
            Some(e) => req
                .update_expression("SET last_error = :e ADD delivery_failures :one")
                .expression_attribute_values(":e", s(e))
                .expression_attribute_values(":one", n(1)),
            None if t.poll_failures == 0 => req
                .update_expression(
                    "SET last_delivery_ms = :now, delivery_failures = :zero REMOVE last_error",
                )
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":zero", n(0)),
            None => req
                .update_expression("SET last_delivery_ms = :now, delivery_failures = :zero")
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":zero", n(0)),
        };
        self.update_unless_gone(req, "trigger gone").await
    }
}
