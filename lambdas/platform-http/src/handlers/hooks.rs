//! The public webhook ingress `/hooks/{trigger_id}/{token}`: no API key (the token in the path
//! is the credential), rate-limited per trigger and source address; misses (unknown trigger,
//! wrong token) are bounded per source.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use platform_domain::triggers::ID_PREFIX;
use platform_exec::triggers::{Ingested, TriggersError};
use serde_json::json;

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{MAX_BODY, declared_length};
use crate::guard::{Meta, address_subject};
use crate::problem::Problem;
use crate::reply::Reply;

/// Largest webhook the ingress accepts (the API's body limit).
pub const MAX_HOOK_BODY: usize = MAX_BODY;

impl Ctx<'_> {
    /// `POST /hooks/{trigger_id}/{token}` (`tail` is the path after `/hooks/`): an app's webhook,
    /// fanned out as a `trigger.event`. An unknown trigger and a wrong token get the same 404.
    pub(crate) async fn hook(
        &self,
        req: &Request<Bytes>,
        tail: &str,
        meta: &mut Meta,
    ) -> Result<Reply, Problem> {
        let svc = self.services.triggers()?;
        // The trigger id in the path is the sender's choice: limits keyed by it alone give an
        // attacker a fresh bucket per made-up id. So the source comes first: a source that
        // spent its miss budget is refused from memory, before any store call.
        let source = address_subject(req);
        self.guard.hook_refused(&source, meta)?;
        if req.method() != Method::POST {
            meta.allow = Some("POST".to_owned());
            return Err(Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "This endpoint accepts POST only.",
            ));
        }
        let declared = declared_length(req.headers());
        if req.body().len() > MAX_HOOK_BODY || declared > MAX_HOOK_BODY as u64 {
            return Err(Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("Webhooks are limited to {MAX_HOOK_BODY} bytes."),
            ));
        }
        let parts: Vec<&str> = tail.split('/').collect();
        let (id, token) = match parts.as_slice() {
            [id, token] if id.starts_with(ID_PREFIX) && !token.is_empty() => (*id, *token),
            _ => {
                return Err(self
                    .guard
                    .hook_miss(&source, meta, errors::hook_not_found())
                    .await);
            }
        };
        let hook = match svc.check_hook(id, token).await {
            Ok(h) => h,
            Err(TriggersError::HookNotFound) => {
                return Err(self
                    .guard
                    .hook_miss(&source, meta, errors::hook_not_found())
                    .await);
            }
            Err(e) => return Err(errors::triggers(&e)),
        };
        // Per trigger and source: a sender without the token cannot spend a real sender's
        // budget (its misses count against its own address above).
        self.guard
            .rate_limit(&format!("hook:{id}#{source}"), meta)
            .await?;
        // The sender's own delivery id makes its retries one message; otherwise each is new.
        let h = req.headers();
        let sender_id = h
            .get("webhook-id")
            .or_else(|| h.get("x-github-delivery"))
            .or_else(|| h.get("idempotency-key"))
            .and_then(|v| v.to_str().ok());
        let (filtered, message_id) = match svc.ingest(hook, sender_id, req.body()).await {
            Ok(Ingested::Filtered) => (true, None),
            Ok(Ingested::Enqueued(m)) => (false, Some(m)),
            Err(e) => return Err(errors::triggers(&e)),
        };
        Ok(
            Reply::json(&json!({"accepted": true, "filtered": filtered, "message_id": message_id}))
                .with_status(StatusCode::ACCEPTED),
        )
    }
}
