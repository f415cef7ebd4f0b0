//! Who may talk to the hub: the token rule for HTTP and WebSocket, and the UDP trust model.
//!
//! HTTP and WebSocket callers are identified by their TCP peer address, which cannot be spoofed
//! once the handshake completed: loopback peers are this computer and are trusted; anyone else
//! must present `X-Service-Token`. UDP has no handshake and no headers, so a datagram's source
//! address is only a claim. A UDP sender is accepted when it is loopback, when its address is on
//! the configured allow list, or when that address recently proved the token over a WebSocket
//! (which *is* a handshake). Everything else is dropped and counted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http::HeaderMap;
use ipnet::IpNet;
use subtle::ConstantTimeEq;

/// Header carrying the shared token.
pub const TOKEN_HEADER: &str = "x-service-token";

/// How long a token-proven WebSocket peer's address stays trusted for UDP after its last
/// authorised request (a node reconnects its WebSocket far more often than this).
pub const UDP_GRANT_TTL: Duration = Duration::from_secs(600);

/// Most addresses remembered from WebSocket authorisations; the oldest are forgotten first.
const MAX_GRANTS: usize = 256;

/// True for 127.0.0.0/8, `::1` and IPv4-mapped loopback (`::ffff:127.x.y.z`).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Maps `::ffff:a.b.c.d` to `a.b.c.d`, so one node has one address whatever socket family saw it.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Why a caller was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "remote callers must send X-Service-Token, and no token is configured on this hub (set SERVICE_SENTINEL_TOKEN)"
    )]
    NoTokenConfigured,
    #[error("remote callers must send the X-Service-Token header")]
    MissingToken,
    #[error("the X-Service-Token header does not match")]
    WrongToken,
}

/// How a caller was let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// Peer address on loopback: this computer.
    Local,
    /// A remote peer that presented the right token.
    Token,
}

/// The token rule. The token itself is never logged or formatted.
#[derive(Clone, Default)]
pub struct TokenRule {
    token: Option<Vec<u8>>,
}

impl std::fmt::Debug for TokenRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRule")
            .field("configured", &self.token.is_some())
            .finish()
    }
}

impl TokenRule {
    /// An empty token counts as none: an empty header must never match it.
    pub fn new(token: Option<&str>) -> Self {
        Self {
            token: token
                .filter(|t| !t.is_empty())
                .map(|t| t.as_bytes().to_vec()),
        }
    }

    pub fn is_configured(&self) -> bool {
        self.token.is_some()
    }

    /// Applies the rule to a caller at `peer` with request `headers`.
    pub fn check(&self, peer: IpAddr, headers: &HeaderMap) -> Result<Caller, Refusal> {
        if is_loopback(peer) {
            return Ok(Caller::Local);
        }
        let Some(expected) = &self.token else {
            return Err(Refusal::NoTokenConfigured);
        };
        let mut values = headers.get_all(TOKEN_HEADER).iter();
        let presented = match (values.next(), values.next()) {
            (Some(v), None) => v.as_bytes(),
            (None, _) => return Err(Refusal::MissingToken),
            // Two tokens are ambiguous; refuse rather than pick one.
            (Some(_), Some(_)) => return Err(Refusal::WrongToken),
        };
        // `ct_eq` on slices of different lengths returns false without comparing contents; the
        // length of the token is not treated as a secret.
        if bool::from(presented.ct_eq(expected.as_slice())) {
            Ok(Caller::Token)
        } else {
            Err(Refusal::WrongToken)
        }
    }
}

/// Why `SERVICE_CSI_ALLOW` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "SERVICE_CSI_ALLOW entry {entry:?} is neither an IP address nor a CIDR (e.g. 192.168.1.40 or 192.168.1.0/24)"
)]
pub struct BadAllowEntry {
    pub entry: String,
}

/// Parses a comma-separated list of IPs and CIDRs; blanks are ignored.
pub fn parse_allow_list(text: &str) -> Result<Vec<IpNet>, BadAllowEntry> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| BadAllowEntry {
                    entry: s.to_string(),
                })
        })
        .collect()
}

/// The UDP trust model; see the module docs.
#[derive(Debug)]
pub struct UdpTrust {
    allow: Vec<IpNet>,
    /// Address → when it last proved the token over WebSocket.
    grants: Mutex<HashMap<IpAddr, Instant>>,
    ttl: Duration,
}

impl UdpTrust {
    pub fn new(allow: Vec<IpNet>) -> Self {
        Self {
            allow,
            grants: Mutex::new(HashMap::new()),
            ttl: UDP_GRANT_TTL,
        }
    }

    /// Remembers that `ip` proved the token just now.
    pub fn grant(&self, ip: IpAddr, now: Instant) {
        let ip = canonical(ip);
        let Ok(mut grants) = self.grants.lock() else {
            return;
        };
        grants.retain(|_, at| now.saturating_duration_since(*at) <= self.ttl);
        if grants.len() >= MAX_GRANTS
            && !grants.contains_key(&ip)
            && let Some(oldest) = grants.iter().min_by_key(|(_, at)| **at).map(|(k, _)| *k)
        {
            grants.remove(&oldest);
        }
        grants.insert(ip, now);
    }

    /// Whether a datagram from `ip` is accepted.
    pub fn accepts(&self, ip: IpAddr, now: Instant) -> bool {
        let ip = canonical(ip);
        if is_loopback(ip) || self.allow.iter().any(|net| net.contains(&ip)) {
            return true;
        }
        self.grants.lock().is_ok_and(|g| {
            g.get(&ip)
                .is_some_and(|at| now.saturating_duration_since(*at) <= self.ttl)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with_token(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(TOKEN_HEADER, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn loopback_in_every_spelling() {
        for ip in ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "::ffff:10.0.0.1", "::2", "0.0.0.0", "::"] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn token_rule() {
        let remote: IpAddr = "10.1.2.3".parse().unwrap();
        let rule = TokenRule::new(Some("s3cret"));
        assert_eq!(
            rule.check("127.0.0.1".parse().unwrap(), &HeaderMap::new()),
            Ok(Caller::Local)
        );
        assert_eq!(
            rule.check(remote, &HeaderMap::new()),
            Err(Refusal::MissingToken)
        );
        assert_eq!(
            rule.check(remote, &with_token("s3cre")),
            Err(Refusal::WrongToken)
        );
        assert_eq!(rule.check(remote, &with_token("s3cret")), Ok(Caller::Token));
        let none = TokenRule::new(Some(""));
        assert_eq!(
            none.check(remote, &with_token("")),
            Err(Refusal::NoTokenConfigured)
        );
        assert!(!format!("{rule:?}").contains("s3cret"));
    }

    #[test]
    fn allow_list_and_grants() {
        let allow = parse_allow_list(" 192.168.1.0/24, 10.0.0.7 ,,").unwrap();
        let trust = UdpTrust::new(allow);
        let now = Instant::now();
        assert!(trust.accepts("192.168.1.99".parse().unwrap(), now));
        assert!(trust.accepts("10.0.0.7".parse().unwrap(), now));
        assert!(trust.accepts("::ffff:10.0.0.7".parse().unwrap(), now));
        assert!(!trust.accepts("10.0.0.8".parse().unwrap(), now));
        trust.grant("10.0.0.8".parse().unwrap(), now);
        assert!(trust.accepts("10.0.0.8".parse().unwrap(), now));
        assert!(!trust.accepts("10.0.0.8".parse().unwrap(), now + UDP_GRANT_TTL * 2));
        assert!(parse_allow_list("10.0.0.1, nope").is_err());
    }
}
