//! Who is asking and whether they may: the API key (Bearer header, or MCP's `/mcp/k/<KEY>`) and
//! the per-key (or per-address) rate limit, with what both tell the response's headers.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

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
    /// Sources that used up their webhook-ingress miss budget, with the end (epoch ms) of the
    /// window that blocks them: refused from memory, without a store call.
    pub hook_blocked: Mutex<HashMap<String, i64>>,
}

/// Unknown triggers, wrong tokens and malformed ingress paths one source may send per window
/// before every `/hooks/` request from it is refused (429) until the window ends. Real senders
/// hit a known trigger with its token, so they never spend this budget.
pub const HOOK_MISS_LIMIT: u32 = 20;
/// Most blocked sources remembered per instance (beyond it the store counter still refuses them,
/// one conditional write each).
const HOOK_BLOCKED_MAX: usize = 10_000;

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

/// The rate-limit subject of an anonymous request: its client address (IPv6: its /64, since one
/// subscriber holds a whole /64 and could otherwise take a fresh bucket per address).
pub(crate) fn address_subject(req: &Request<Bytes>) -> String {
    match req.extensions().get::<ClientAddr>() {
        Some(a) => format!("addr:{}", source_of(&a.0)),
        None => "addr:unknown".to_owned(),
    }
}

/// A client address as a limit key: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 as its /64.
fn source_of(addr: &str) -> String {
    match addr.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let net = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{net}/64")
            }
        },
        Ok(ip) => ip.to_string(),
        Err(_) => addr.to_owned(),
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

    /// 429 from memory when `subject` already used up its webhook-ingress miss budget.
    pub(crate) fn hook_refused(&self, subject: &str, meta: &mut Meta) -> Result<(), Problem> {
        let now = self.clock.now_ms();
        let until = match self.hook_blocked.lock() {
            Ok(mut blocked) => match blocked.get(subject).copied() {
                Some(until) if until > now => Some(until),
                Some(_) => {
                    blocked.remove(subject);
                    None
                }
                None => None,
            },
            Err(_) => None,
        };
        match until {
            Some(until) => {
                let reset_s = u64::try_from(until - now)
                    .unwrap_or(0)
                    .div_ceil(1000)
                    .max(1);
                meta.rate = Some((0, reset_s));
                Err(hook_limited(reset_s))
            }
            None => Ok(()),
        }
    }

    /// Counts an ingress miss (unknown trigger, wrong token, malformed path) of `subject`: the
    /// 404 while within [`HOOK_MISS_LIMIT`], then 429 and the source is refused from memory
    /// until the window ends.
    pub(crate) async fn hook_miss(&self, subject: &str, meta: &mut Meta, miss: Problem) -> Problem {
        let window = self.policy.window(self.clock.now_ms());
        let key = format!("hookmiss:{subject}");
        match self
            .store
            .count_request(&key, &window, HOOK_MISS_LIMIT)
            .await
        {
            Ok(Some(_)) => miss,
            Ok(None) => {
                let until = i64::try_from(window.ends_at_s * 1000).unwrap_or(i64::MAX);
                if let Ok(mut blocked) = self.hook_blocked.lock() {
                    let now = self.clock.now_ms();
                    if blocked.len() >= HOOK_BLOCKED_MAX {
                        blocked.retain(|_, u| *u > now);
                    }
                    if blocked.len() < HOOK_BLOCKED_MAX {
                        blocked.insert(subject.to_owned(), until);
                    }
                }
                tracing::warn!(source = %subject, "webhook ingress: miss budget used up, source refused until the window ends");
                meta.rate = Some((0, window.reset_s));
                hook_limited(window.reset_s)
            }
            Err(e) => errors::store(&e),
        }
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

fn hook_limited(reset_s: u64) -> Problem {
    Problem::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!(
            "Too many requests to unknown webhook ingress URLs from this address; retry after \
             {reset_s} s."
        ),
    )
    .with_retry_after(reset_s)
}

#[cfg(test)]
mod tests {
    use super::source_of;

    #[test]
    fn ipv6_clients_share_their_64() {
        assert_eq!(source_of("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(source_of("2001:db8:1:2:ffff:1:2:3"), "2001:db8:1:2::/64");
        assert_eq!(source_of("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(source_of("192.0.2.7"), "192.0.2.7");
        assert_eq!(source_of("junk"), "junk");
    }
}
