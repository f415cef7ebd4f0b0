//! The rate limiter's Durable Object ([`ClientLimiter`]) and the call that asks it.

use crate::ratelimit::{self, Decision};
use std::cell::Cell;
use worker::{
    Date, DurableObject, Env, Request, Response, Result, State, console_log, durable_object,
};

/// How long a client is told to wait when the limiter cannot answer.
const UNAVAILABLE_RETRY_MS: u64 = 1_000;

/// Asks the client's Durable Object whether this request may pass. If the limiter itself fails
/// the request is refused (429 with `Retry-After`) and the failure logged: failing open would
/// hand an attacker who can make the limiter fail an unlimited site.
pub(super) async fn limit(env: &Env, key: &str) -> Decision {
    let answer = async {
        let ns = env.durable_object("CLIENT_LIMITER")?;
        let stub = ns.id_from_name(key)?.get_stub()?;
        let mut resp = stub.fetch_with_str("https://limiter/check").await?;
        resp.text().await
    }
    .await;
    match answer {
        Ok(text) if text == "allow" => Decision::Allow { now_ms: 0 },
        Ok(text) => match text.strip_prefix("deny ").and_then(|ms| ms.parse().ok()) {
            Some(retry_after_ms) => Decision::Deny { retry_after_ms },
            None => {
                console_log!("rate limiter unavailable: unexpected answer {text:?}; refusing");
                Decision::Deny {
                    retry_after_ms: UNAVAILABLE_RETRY_MS,
                }
            }
        },
        Err(e) => {
            console_log!("rate limiter unavailable: {e}; refusing");
            Decision::Deny {
                retry_after_ms: UNAVAILABLE_RETRY_MS,
            }
        }
    }
}

/// One per client key: holds the time of the client's last allowed request. A Durable
/// Object makes the limit exact (one instance worldwide per key), which the Rate Limiting
/// binding (10 s or 60 s windows, per location) cannot.
#[durable_object]
pub struct ClientLimiter {
    state: State,
    last: Cell<Option<u64>>,
    loaded: Cell<bool>,
}

impl DurableObject for ClientLimiter {
    fn new(state: State, _env: Env) -> Self {
        Self {
            state,
            last: Cell::new(None),
            loaded: Cell::new(false),
        }
    }

    async fn fetch(&self, _req: Request) -> Result<Response> {
        let storage = self.state.storage();
        if !self.loaded.get() {
            self.last
                .set(storage.get::<u64>("last").await.ok().flatten());
            self.loaded.set(true);
        }
        let now_ms = Date::now().as_millis();
        match ratelimit::decide(self.last.get(), now_ms) {
            Decision::Allow { now_ms } => {
                self.last.set(Some(now_ms));
                storage.put("last", now_ms).await?;
                // Forget idle clients so storage does not grow with every address seen.
                storage
                    .set_alarm(std::time::Duration::from_secs(60))
                    .await?;
                Response::ok("allow")
            }
            Decision::Deny { retry_after_ms } => Response::ok(format!("deny {retry_after_ms}")),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let now_ms = Date::now().as_millis();
        if self
            .last
            .get()
            .is_none_or(|last| now_ms.saturating_sub(last) >= 60_000)
        {
            self.state.storage().delete_all().await?;
            self.last.set(None);
        }
        Response::ok("")
    }
}
