//! Who is asking and whether they may: the API key (Bearer header, or MCP's `/mcp/k/<KEY>`) and
//! the per-key (or per-address) rate limit, with what both tell the response's headers.

use std::sync::Arc;

use bytes::Bytes;
use http::header;
use http::{Request, StatusCode};
use platform_domain::Repositories;
use platform_domain::accounts::Principal;
use platform_domain::clock::Clock;
use platform_domain::keys::{self, KeyHash};
use platform_domain::ratelimit::RateLimitPolicy;

use crate::errors;
use crate::problem::Problem;

/// The caller's network address, attached as a request extension by the adapter (hyper peer
/// address, or API Gateway's `sourceIp`). Anonymous requests are rate-limited by it.
#[derive(Debug, Clone)]
pub struct ClientAddr(pub String);

/// Checks keys and counts requests.
pub(crate) struct Guard {
    pub store: Arc<dyn Repositories>,
    pub clock: Arc<dyn Clock>,
    pub policy: RateLimitPolicy,
}

/// What the guard learned about a request, for the response's headers and the log.
#[derive(Default)]
pub(crate) struct Meta {
    /// `(remaining, reset_s)` once counted.
    pub rate: Option<(u32, u64)>,
    pub allow: Option<String>,
    pub account: Option<String>,
    /// An `/api/v1` or MCP request (they carry `RateLimit-Policy`).
    pub api: bool,
}

pub(crate) enum Auth {
    None,
    Invalid(&'static str),
    Key(Principal),
}

/// The rate-limit subject of an anonymous request: its client address.
pub(crate) fn address_subject(req: &Request<Bytes>) -> String {
    match req.extensions().get::<ClientAddr>() {
        Some(a) => format!("addr:{}", a.0),
        None => "addr:unknown".to_owned(),
    }
}

impl Guard {
    pub(crate) async fn authenticate(&self, req: &Request<Bytes>) -> Result<Auth, Problem> {
        let Some(value) = req.headers().get(header::AUTHORIZATION) else {
            return Ok(Auth::None);
        };
        let Some(key) = value.to_str().ok().and_then(keys::bearer) else {
            return Ok(Auth::Invalid(
                "Use the Bearer scheme: Authorization: Bearer <API_KEY>.",
            ));
        };
        self.authenticate_key(key).await
    }

    async fn authenticate_key(&self, key: &str) -> Result<Auth, Problem> {
        const UNKNOWN: &str = "The API key is unknown or revoked.";
        if !keys::well_formed(key) {
            return Ok(Auth::Invalid(UNKNOWN));
        }
        match self.store.authenticate(&KeyHash::of(key)).await {
            Ok(Some(p)) => Ok(Auth::Key(p)),
            Ok(None) => Ok(Auth::Invalid(UNKNOWN)),
            Err(e) => Err(errors::store(&e)),
        }
    }

    /// The key of an MCP request: the Bearer header on `/mcp`, or the path of `/mcp/k/<KEY>`.
    pub(crate) async fn mcp_auth(&self, req: &Request<Bytes>, path: &str) -> Result<Auth, Problem> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["mcp"] => self.authenticate(req).await,
            ["mcp", "k", key] => self.authenticate_key(key).await,
            _ => Err(Problem::not_found(
                "not_found",
                "The MCP endpoint is /mcp (with a Bearer key) or /mcp/k/<API_KEY>.",
            )),
        }
    }

    /// Counts the request against its key, or its address when it has none.
    pub(crate) async fn count(
        &self,
        req: &Request<Bytes>,
        auth: &Auth,
        meta: &mut Meta,
    ) -> Result<(), Problem> {
        let subject = match auth {
            Auth::Key(p) => format!("key:{}", p.key_hash.as_str()),
            _ => address_subject(req),
        };
        self.rate_limit(&subject, meta).await
    }

    /// One request of `subject` in the current window; 429 with `Retry-After` over the limit.
    pub(crate) async fn rate_limit(&self, subject: &str, meta: &mut Meta) -> Result<(), Problem> {
        let window = self.policy.window(self.clock.now_ms());
        match self
            .store
            .count_request(subject, &window, self.policy.limit)
            .await
        {
            Ok(Some(count)) => {
                meta.rate = Some((self.policy.limit.saturating_sub(count), window.reset_s));
                Ok(())
            }
            Ok(None) => {
                meta.rate = Some((0, window.reset_s));
                Err(Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "More than {} requests in {} s with this key; retry after {} s.",
                        self.policy.limit, self.policy.window_s, window.reset_s
                    ),
                )
                .with_retry_after(window.reset_s))
            }
            Err(e) => Err(errors::store(&e)),
        }
    }
}
