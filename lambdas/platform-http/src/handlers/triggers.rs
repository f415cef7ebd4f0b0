//! Triggers and account events: `GET /events`, `GET /triggers/events?app=`, `GET|POST
//! /triggers`, `GET|DELETE /triggers/{id}`, `POST /triggers/{id}/enable`. The route table has
//! checked the method; the triggers service is configured (or the request got 503).

use bytes::Bytes;
use http::{Method, Request};
use platform_domain::triggers::EventDef;
use platform_exec::triggers::NewTrigger;
use serde_json::{Value, json};

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{self, Query};
use crate::problem::Problem;
use crate::reply::Reply;

impl Ctx<'_> {
    /// `GET /events`: the account's latest events.
    pub(super) async fn events(
        &self,
        req: &Request<Bytes>,
        account: &str,
    ) -> Result<Reply, Problem> {
        let q = Query::of(req, &["limit"])?;
        let limit = q.page_limit()?;
        let events = self
            .services
            .triggers()?
            .account_events(account, limit)
            .await?;
        let events: Vec<Value> = events.iter().map(|e| e.to_json()).collect();
        Ok(Reply::json(&json!({ "events": events })))
    }

    /// `GET /triggers/events?app=`: the events an app offers.
    pub(super) fn trigger_events(&self, req: &Request<Bytes>) -> Result<Reply, Problem> {
        let q = Query::of(req, &["app"])?;
        let Some(app) = q.get("app") else {
            return Err(Problem::bad_request(
                "missing_parameter",
                "Give the app: GET /triggers/events?app=<app id>.",
            ));
        };
        let events = self.services.triggers()?.app_events(app)?;
        let events: Vec<Value> = events.iter().map(EventDef::to_json).collect();
        Ok(Reply::json(&json!({ "events": events })))
    }

    /// `GET /triggers` (a page) and `POST /triggers` (create).
    pub(super) async fn triggers(
        &self,
        req: &Request<Bytes>,
        account: &str,
    ) -> Result<Reply, Problem> {
        let svc = self.services.triggers()?;
        if req.method() == Method::GET {
            let q = Query::of(req, &["cursor", "limit"])?;
            let limit = q.page_limit()?;
            let (page, next) = svc.list(account, q.get("cursor"), limit).await?;
            let list: Vec<Value> = page.iter().map(|t| t.to_json()).collect();
            return Ok(Reply::json(&json!({"triggers": list, "next_cursor": next})));
        }
        Query::of(req, &[])?;
        let body = extract::json(req, &self.openapi.create_trigger_request)?;
        // The schema guarantees the types below.
        let new = NewTrigger {
            app: body["app"].as_str().unwrap_or_default(),
            event: body["event"].as_str().unwrap_or_default(),
            webhook_url: body["webhook_url"].as_str().unwrap_or_default(),
            connection_id: body.get("connection_id").and_then(Value::as_str),
            filter: body.get("filter"),
            params: body.get("params"),
        };
        let created = svc.create(account, new).await?;
        let mut v = created.trigger.to_json();
        v["secret"] = created.secret.into();
        if let Some(url) = created.hook_url {
            v["hook_url"] = url.into();
        }
        Ok(Reply::created(&v))
    }

    /// `GET /triggers/{id}` and `DELETE /triggers/{id}`.
    pub(super) async fn trigger(
        &self,
        req: &Request<Bytes>,
        id: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let svc = self.services.triggers()?;
        if req.method() == Method::DELETE {
            svc.delete(account, id).await?;
            return Ok(Reply::no_content());
        }
        match svc.get(account, id).await {
            Ok(Some(t)) => Ok(Reply::json(&t.to_json())),
            Ok(None) => Err(errors::trigger_not_found(id)),
            Err(e) => Err(errors::store(&e)),
        }
    }

    /// `POST /triggers/{id}/enable`.
    pub(super) async fn enable_trigger(
        &self,
        req: &Request<Bytes>,
        id: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let t = self.services.triggers()?.enable(account, id).await?;
        Ok(Reply::json(&t.to_json()))
    }
}
