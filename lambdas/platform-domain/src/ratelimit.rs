//! 120 requests per minute per key, counted in fixed windows by an atomic DynamoDB counter.
//!
//! The arithmetic and the header values (draft-ietf-httpapi-ratelimit-headers, as CONTRACTS.md
//! fixes them) live here; the counter itself is [`RateCounter::count_request`].

use async_trait::async_trait;

use crate::error::StoreError;

/// Name of the policy in the headers.
pub const POLICY_NAME: &str = "per-key";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// Requests allowed per window.
    pub limit: u32,
    /// Window length in seconds.
    pub window_s: u64,
}

impl Default for RateLimitPolicy {
    fn default() -> Self {
        Self {
            limit: 120,
            window_s: 60,
        }
    }
}

/// The window a moment falls into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Window number since the epoch; part of the counter's key.
    pub index: u64,
    /// Whole seconds until the window ends, at least 1 (a client told `0` would retry at once).
    pub reset_s: u64,
    /// Epoch seconds at which the window ends.
    pub ends_at_s: u64,
}

impl RateLimitPolicy {
    pub fn window(&self, now_ms: i64) -> Window {
        let window_ms = self.window_s.max(1) * 1000;
        let now = u64::try_from(now_ms).unwrap_or(0);
        let index = now / window_ms;
        let end_ms = (index + 1) * window_ms;
        let reset_s = (end_ms - now).div_ceil(1000).max(1);
        Window {
            index,
            reset_s,
            ends_at_s: end_ms / 1000,
        }
    }

    /// `RateLimit-Policy` header value.
    pub fn policy_header(&self) -> String {
        format!("\"{POLICY_NAME}\";q={};w={}", self.limit, self.window_s)
    }

    /// `RateLimit` header value.
    pub fn limit_header(&self, remaining: u32, reset_s: u64) -> String {
        format!("\"{POLICY_NAME}\";r={remaining};t={reset_s}")
    }
}

/// The atomic request counter of a window.
#[async_trait]
pub trait RateCounter: Send + Sync {
    /// Counts one request of `subject` in `window`. Returns the count including this request, or
    /// `None` (and counts nothing) if the subject already reached `limit`.
    async fn count_request(
        &self,
        subject: &str,
        window: &Window,
        limit: u32,
    ) -> Result<Option<u32>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_the_contract() {
        let p = RateLimitPolicy::default();
        assert_eq!(p.policy_header(), "\"per-key\";q=120;w=60");
        assert_eq!(p.limit_header(57, 23), "\"per-key\";r=57;t=23");
    }

    #[test]
    fn window_reset_counts_down_and_never_reaches_zero() {
        let p = RateLimitPolicy::default();
        let w = p.window(60_000 * 1000);
        assert_eq!((w.index, w.reset_s, w.ends_at_s), (1000, 60, 60_060));
        assert_eq!(p.window(60_000 * 1000 + 37_000).reset_s, 23);
        assert_eq!(p.window(60_000 * 1000 + 59_999).reset_s, 1);
        assert_eq!(p.window(60_000 * 1000 + 59_999).index, 1000);
        assert_eq!(p.window(60_000 * 1001).index, 1001);
    }
}
