//! The per-client rate limit: one request per second. The decision is a pure function of the
//! last allowed time and now, so the Durable Object that holds the state (one per client, which
//! makes the limit exact rather than per-location) only stores a number.

use crate::reply::Reply;

/// Minimum spacing of two allowed requests from one client.
pub const INTERVAL_MS: u64 = 1_000;
/// The policy name shown in `RateLimit` and `RateLimit-Policy`.
pub const POLICY: &str = "\"default\";q=1;w=1";

/// The limiter's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Serve it; store `now_ms` as the new last-allowed time.
    Allow { now_ms: u64 },
    /// Refuse it; the client may retry after this many milliseconds.
    Deny { retry_after_ms: u64 },
}

/// Decides one request given the last allowed time of its client. A clock that went backwards
/// (`now < last`) counts as "just allowed", so a skew never lets a burst through.
pub fn decide(last_allowed_ms: Option<u64>, now_ms: u64) -> Decision {
    match last_allowed_ms {
        Some(last) if now_ms.saturating_sub(last) < INTERVAL_MS || now_ms < last => {
            let elapsed = now_ms.saturating_sub(last);
            Decision::Deny {
                retry_after_ms: INTERVAL_MS - elapsed.min(INTERVAL_MS),
            }
        }
        _ => Decision::Allow { now_ms },
    }
}

/// Whole seconds for `Retry-After` and the `t` parameter: rounded up, at least 1.
pub fn retry_after_secs(retry_after_ms: u64) -> u64 {
    retry_after_ms.div_ceil(1_000).max(1)
}

/// The limiter key for a client: a verified Web Bot Auth agent gets its own bucket, everyone
/// else is keyed by address. Prefixes keep the two namespaces apart.
pub fn client_key(verified_agent: Option<&str>, ip: Option<&str>) -> String {
    match (verified_agent, ip) {
        (Some(agent), _) => format!("agent:{agent}"),
        (None, Some(ip)) if !ip.trim().is_empty() => {
            format!("ip:{}", ip.trim().to_ascii_lowercase())
        }
        _ => "ip:unknown".to_string(),
    }
}

/// Adds the rate-limit headers of an allowed request: the client has used its one request for
/// the next second.
pub fn allowed_headers(reply: Reply) -> Reply {
    reply
        .with_header("ratelimit-policy", POLICY)
        .with_header("ratelimit", "\"default\";r=0;t=1")
}

/// The 429 problem for a denied request.
pub fn too_many_requests(retry_after_ms: u64) -> Reply {
    let secs = retry_after_secs(retry_after_ms);
    crate::problem::Problem::new(
        429,
        "Too Many Requests",
        format!("This site allows one request per second per client; retry after {secs} s."),
    )
    .into_reply()
    .with_header("retry-after", &secs.to_string())
    .with_header("ratelimit-policy", POLICY)
    .with_header("ratelimit", &format!("\"default\";r=0;t={secs}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_request_is_allowed() {
        assert_eq!(decide(None, 5), Decision::Allow { now_ms: 5 });
    }

    #[test]
    fn a_second_request_within_the_interval_is_denied_with_the_rest() {
        assert_eq!(
            decide(Some(1_000), 1_000),
            Decision::Deny {
                retry_after_ms: 1_000
            }
        );
        assert_eq!(
            decide(Some(1_000), 1_250),
            Decision::Deny {
                retry_after_ms: 750
            }
        );
        assert_eq!(
            decide(Some(1_000), 1_999),
            Decision::Deny { retry_after_ms: 1 }
        );
    }

    #[test]
    fn after_the_interval_it_is_allowed_again() {
        assert_eq!(
            decide(Some(1_000), 2_000),
            Decision::Allow { now_ms: 2_000 }
        );
        assert_eq!(
            decide(Some(1_000), 90_000),
            Decision::Allow { now_ms: 90_000 }
        );
    }

    #[test]
    fn a_clock_going_backwards_denies() {
        assert_eq!(
            decide(Some(5_000), 4_000),
            Decision::Deny {
                retry_after_ms: 1_000
            }
        );
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(1), 1);
        assert_eq!(retry_after_secs(1_000), 1);
        assert_eq!(retry_after_secs(1_001), 2);
        assert_eq!(retry_after_secs(0), 1);
    }

    #[test]
    fn keys_separate_agents_from_addresses() {
        assert_eq!(client_key(Some("abc"), Some("1.2.3.4")), "agent:abc");
        assert_eq!(client_key(None, Some(" 2001:DB8::1 ")), "ip:2001:db8::1");
        assert_eq!(client_key(None, None), "ip:unknown");
    }

    #[test]
    fn the_429_carries_retry_and_ratelimit_headers() {
        let r = too_many_requests(400);
        assert_eq!(r.status, 429);
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(r.header("ratelimit-policy"), Some(POLICY));
        assert_eq!(r.header("ratelimit"), Some("\"default\";r=0;t=1"));
    }
}
