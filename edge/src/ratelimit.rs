//! The per-client rate limit: one request per second. The decision is a pure function of the
//! last allowed time and now, so the Durable Object that holds the state (one per client, which
//! makes the limit exact rather than per-location) only stores a number.

use crate::reply::Reply;
use std::net::{IpAddr, Ipv6Addr};

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

/// The limiter key for a client. A Web Bot Auth agent whose identity the signature proves (the
/// origin of its cached HTTPS key directory, see `webbotauth::Outcome::agent_key`) gets its own
/// bucket; everyone else is keyed by address: an IPv4 address, or an IPv6 client's /64 (one
/// subscriber typically holds a whole /64, so per-address keys would give each a billion
/// buckets). Prefixes keep the namespaces apart; a missing or unreadable address shares one
/// bucket.
pub fn client_key(agent_origin: Option<&str>, ip: Option<&str>) -> String {
    if let Some(origin) = agent_origin {
        return format!("agent:{}", origin.trim().to_ascii_lowercase());
    }
    match ip.and_then(|s| s.trim().parse::<IpAddr>().ok()) {
        Some(IpAddr::V4(v4)) => format!("ip:{v4}"),
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("ip:{v4}"),
            None => {
                let prefix = u128::from(v6) & !u128::from(u64::MAX);
                format!("ip:{}/64", Ipv6Addr::from(prefix))
            }
        },
        None => "ip:unknown".to_string(),
    }
}

/// Whether the client `key` is on the configured exemption list (`RATE_LIMIT_EXEMPT`, entries
/// `ip:<address>` or `agent:<origin>`), compared in [`client_key`]'s form whatever the spelling.
pub fn is_exempt(exemptions: &[String], key: &str) -> bool {
    exemptions.iter().any(|e| exemption_key(e) == key)
}

/// A configured exemption in the form [`client_key`] produces.
pub fn exemption_key(entry: &str) -> String {
    let entry = entry.trim();
    if let Some(ip) = entry.strip_prefix("ip:") {
        client_key(None, Some(ip))
    } else if let Some(origin) = entry.strip_prefix("agent:") {
        client_key(Some(origin), None)
    } else {
        entry.to_string()
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
        assert_eq!(
            client_key(Some("https://Bots.Example"), Some("1.2.3.4")),
            "agent:https://bots.example"
        );
        assert_eq!(client_key(None, Some(" 1.2.3.4 ")), "ip:1.2.3.4");
        assert_eq!(client_key(None, None), "ip:unknown");
        assert_eq!(client_key(None, Some("not an address")), "ip:unknown");
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let a = client_key(None, Some("2001:DB8:1:2::1"));
        assert_eq!(a, "ip:2001:db8:1:2::/64");
        assert_eq!(
            client_key(None, Some("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            a
        );
        assert_ne!(client_key(None, Some("2001:db8:1:3::1")), a);
        assert_eq!(client_key(None, Some("::ffff:1.2.3.4")), "ip:1.2.3.4");
    }

    #[test]
    fn exemptions_compare_in_the_keys_own_form() {
        assert_eq!(exemption_key("ip:::1"), client_key(None, Some("::1")));
        assert_eq!(exemption_key("ip: 127.0.0.1"), "ip:127.0.0.1");
        assert_eq!(
            exemption_key("agent:HTTPS://Bots.Example"),
            client_key(Some("https://bots.example"), None)
        );
        let list = vec!["ip:127.0.0.1".to_string(), "ip:::1".to_string()];
        assert!(is_exempt(&list, "ip:::/64"));
        assert!(is_exempt(&list, "ip:127.0.0.1"));
        assert!(!is_exempt(&list, "ip:127.0.0.2"));
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
