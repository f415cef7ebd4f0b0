//! The public webhook ingress `/hooks/{trigger_id}/{token}`: no API key (the token in the path
//! is the credential), rate-limited per trigger.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use platform_domain::triggers::ID_PREFIX;
use platform_exec::triggers::Ingested;
use serde_json::json;

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{MAX_BODY, declared_length};
use crate::guard::Meta;
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
        let id = tail.split('/').next().unwrap_or("");
        self.guard.rate_limit(&format!("hook:{id}"), meta).await?;
        let parts: Vec<&str> = tail.split('/').collect();
        let [id, token] = parts.as_slice() else {
            return Err(errors::hook_not_found());
        };
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
        if !id.starts_with(ID_PREFIX) || token.is_empty() {
            return Err(errors::hook_not_found());
        }
        // The sender's own delivery id makes its retries one message; otherwise each is new.
        let h = req.headers();
        let sender_id = h
            .get("webhook-id")
            .or_else(|| h.get("x-github-delivery"))
            .or_else(|| h.get("idempotency-key"))
            .and_then(|v| v.to_str().ok());
        let (filtered, message_id) = match svc.ingest(id, token, sender_id, req.body()).await {
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
