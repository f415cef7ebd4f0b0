//! The `IdempotencyStore` Durable Object behind `Idempotency-Key` (see [`crate::idempotency`]).

use crate::idempotency::{self, Record, StoredReply};
use worker::{Date, DurableObject, Env, Request, Response, Result, State, durable_object};

/// One per `Idempotency-Key` (scoped by protocol): the request's fingerprint and, once it
/// ran, its answer, kept 24 h. Being a single instance per key worldwide, it also stops two
/// concurrent requests with one key from both running.
#[durable_object]
pub struct IdempotencyStore {
    state: State,
}

#[derive(serde::Deserialize)]
struct StoreOp {
    fingerprint: String,
    #[serde(default)]
    reply: Option<StoredReply>,
}

impl DurableObject for IdempotencyStore {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let storage = self.state.storage();
        let op: StoreOp = serde_json::from_str(&req.text().await?)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let existing = storage.get::<Record>("r").await.ok().flatten();
        let now_ms = Date::now().as_millis();
        if req.path().ends_with("/begin") {
            let (begin, record) = idempotency::begin(existing.as_ref(), &op.fingerprint, now_ms);
            if let Some(r) = record {
                storage.put("r", &r).await?;
                storage
                    .set_alarm(std::time::Duration::from_millis(idempotency::KEEP_MS))
                    .await?;
            }
            return Response::from_json(&begin);
        }
        match op
            .reply
            .and_then(|reply| idempotency::finish(existing.as_ref(), &op.fingerprint, reply))
        {
            Some(r) => storage.put("r", &r).await?,
            None if existing.is_some_and(|e| e.fingerprint == op.fingerprint) => {
                storage.delete("r").await?;
            }
            None => {}
        }
        Response::ok("")
    }

    async fn alarm(&self) -> Result<Response> {
        self.state.storage().delete_all().await?;
        Response::ok("")
    }
}
