//! Every request the platform sends on a user's behalf (tool runs, OAuth token calls, custom
//! connector and OpenAPI fetches, webhook deliveries) goes through [`Outbound`].
//!
//! The destination is user-controlled, so the guard works at three points, because checking the
//! URL alone is not enough:
//! - the URL: scheme (`https`, or `http` only to allow-listed destinations) and literal IPs;
//! - name resolution: a name that resolves to any non-public address is refused (a DNS name
//!   pointing at `127.0.0.1` or the metadata service is the classic bypass), and the connection
//!   goes to exactly the addresses that were checked, so there is no second lookup to race;
//! - redirects: every hop is checked again, at most [`MAX_REDIRECTS`].
//!
//! An allow list (`PLATFORM_OUTBOUND_ALLOW`, read by the bootstrap) names hosts, IPs or CIDRs
//! that are let through anyway (local testing against loopback peers). It is empty in production.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;

pub const MAX_REDIRECTS: usize = 5;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_RESPONSE: usize = 5 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The guard refused the destination.
    #[error("refused to contact {url}: {reason}")]
    Refused { url: String, reason: String },
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("the request timed out")]
    Timeout,
    #[error("the response is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("network error: {0}")]
    Network(String),
}

/// A destination let through despite being private.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowRule {
    Net(IpNet),
    /// A host name, compared case-insensitively and exactly.
    Host(String),
}

impl AllowRule {
    pub fn parse(s: &str) -> Result<Self, OutboundError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(OutboundError::InvalidUrl("empty allow rule".into()));
        }
        if let Ok(net) = s.parse::<IpNet>() {
            return Ok(AllowRule::Net(net));
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(AllowRule::Net(IpNet::from(ip)));
        }
        let host = s.to_ascii_lowercase();
        if host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        {
            Ok(AllowRule::Host(host))
        } else {
            Err(OutboundError::InvalidUrl(format!(
                "allow rule {s:?} is neither a host, an IP nor a CIDR"
            )))
        }
    }
}

#[derive(Debug, Clone)]
pub struct OutboundPolicy {
    pub allow: Vec<AllowRule>,
    /// Plain `http` is allowed, and then only to allow-listed destinations.
    pub allow_http: bool,
    pub timeout: Duration,
    pub max_response_bytes: usize,
}

impl Default for OutboundPolicy {
    /// The production policy: public `https` destinations only.
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            allow_http: false,
            timeout: DEFAULT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE,
        }
    }
}

impl OutboundPolicy {
    /// Adds the comma-separated rules of `list`; `http` is allowed exactly when the list is not
    /// empty (and only to its destinations).
    pub fn with_allow_list(mut self, list: &str) -> Result<Self, OutboundError> {
        for part in list.split(',').filter(|p| !p.trim().is_empty()) {
            self.allow.push(AllowRule::parse(part)?);
        }
        self.allow_http = !self.allow.is_empty();
        Ok(self)
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allow
            .iter()
            .any(|r| matches!(r, AllowRule::Host(h) if *h == host))
    }

    fn ip_allowed(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        is_public(ip)
            || self
                .allow
                .iter()
                .any(|r| matches!(r, AllowRule::Net(net) if net.contains(&ip)))
    }

    fn ip_listed(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.allow
            .iter()
            .any(|r| matches!(r, AllowRule::Net(net) if net.contains(&ip)))
    }

    /// Checks scheme and host of `url` (names are checked again when resolved).
    pub fn check(&self, url: &Url) -> Result<(), OutboundError> {
        let refuse = |reason: &str| OutboundError::Refused {
            url: display_url(url),
            reason: reason.to_owned(),
        };
        let host = url.host().ok_or_else(|| refuse("the URL has no host"))?;
        let (listed, ip) = match host {
            url::Host::Domain(name) => (self.host_allowed(name), None),
            url::Host::Ipv4(v4) => (self.ip_listed(IpAddr::V4(v4)), Some(IpAddr::V4(v4))),
            url::Host::Ipv6(v6) => (self.ip_listed(IpAddr::V6(v6)), Some(IpAddr::V6(v6))),
        };
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http && listed => {}
            "http" => return Err(refuse("only https destinations are allowed")),
            other => return Err(refuse(&format!("the {other:?} scheme is not allowed"))),
        }
        if let Some(ip) = ip
            && !self.ip_allowed(ip)
        {
            return Err(refuse(
                "the address is private, loopback, link-local or reserved",
            ));
        }
        Ok(())
    }
}

/// The URL without user info, query or fragment: what may appear in logs and errors.
pub fn display_url(url: &Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// An IPv4-mapped address is judged as the IPv4 address a dual-stack socket reaches with it.
/// Every other form that embeds an IPv4 address (NAT64, 6to4, Teredo, IPv4-compatible) is
/// refused whole by [`V6_DENY`]: a gateway would carry it to an address this check never saw.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// IPv4 blocks never contacted: every entry of the IANA IPv4 Special-Purpose Address Registry
/// that is not globally reachable, plus multicast and the reserved 240/4. The edge's key-directory
/// guard keeps the same table; change both together.
const V4_DENY: &[(Ipv4Addr, u8)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8),       // "this network"
    (Ipv4Addr::new(10, 0, 0, 0), 8),      // private
    (Ipv4Addr::new(100, 64, 0, 0), 10),   // shared address space (CGN)
    (Ipv4Addr::new(127, 0, 0, 0), 8),     // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16),  // link-local (the cloud metadata service lives here)
    (Ipv4Addr::new(172, 16, 0, 0), 12),   // private
    (Ipv4Addr::new(192, 0, 0, 0), 24),    // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24),    // documentation (TEST-NET-1)
    (Ipv4Addr::new(192, 31, 196, 0), 24), // AS112-v4
    (Ipv4Addr::new(192, 52, 193, 0), 24), // AMT
    (Ipv4Addr::new(192, 88, 99, 0), 24),  // deprecated 6to4 relay anycast
    (Ipv4Addr::new(192, 168, 0, 0), 16),  // private
    (Ipv4Addr::new(192, 175, 48, 0), 24), // direct delegation AS112
    (Ipv4Addr::new(198, 18, 0, 0), 15),   // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation (TEST-NET-2)
    (Ipv4Addr::new(203, 0, 113, 0), 24),  // documentation (TEST-NET-3)
    (Ipv4Addr::new(224, 0, 0, 0), 4),     // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4),     // reserved, and 255.255.255.255 broadcast
];

/// IPv6 blocks never contacted: every entry of the IANA IPv6 Special-Purpose Address Registry
/// that is not globally reachable, plus multicast and deprecated site-local; and all of
/// 2001::/23, whose globally reachable entries (AMT, AS112, ORCHIDv2, DRIP) are never an API
/// host. Anything outside 2000::/3 is refused as well (see [`is_public_v6`]).
const V6_DENY: &[(u128, u8)] = &[
    (0, 96),                                         // ::, ::1 and IPv4-compatible ::/96
    (0xffff_0000_0000, 96),                          // ::ffff:0:0/96 IPv4-mapped
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // 64:ff9b::/96 NAT64
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 local-use NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64 discard-only
    (0x0100_0000_0000_0001_0000_0000_0000_0000, 64), // 100:0:0:1::/64 dummy prefix
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23 IETF protocol assignments (Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32 documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16 6to4
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48), // 2620:4f:8000::/48 AS112-v6
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // 3fff::/20 documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // 5f00::/16 SRv6 SIDs
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7 unique-local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10 link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10 site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8 multicast
];

/// IANA's global unicast space; everything outside it is reserved, local or multicast.
const V6_GLOBAL_UNICAST: (u128, u8) = (0x2000_0000_0000_0000_0000_0000_0000_0000, 3);

fn in_v4(ip: Ipv4Addr, (net, len): (Ipv4Addr, u8)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, (net, len): (u128, u8)) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// Whether `ip` is a globally reachable unicast address: outside every special-purpose block
/// (private, loopback, link-local — which holds the 169.254.169.254 metadata service — shared,
/// documentation, benchmarking, translation, reserved, multicast).
///
/// Host names in URLs reach this already parsed: the `url` crate reads numeric hosts the way
/// browsers do (`127.1`, `0177.0.0.1`, `0x7f.1`, `2130706433` are all `127.0.0.1`), and names
/// are checked again on every address they resolve to.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !V4_DENY.iter().any(|&block| in_v4(ip, block))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    in_v6(ip, V6_GLOBAL_UNICAST) && !V6_DENY.iter().any(|&block| in_v6(ip, block))
}

/// Resolves names with the system resolver and refuses any name with a non-public address.
struct GuardedResolver {
    policy: Arc<OutboundPolicy>,
}

/// Marks a refusal raised inside reqwest (resolver or redirect policy), so it can be told apart
/// from a network failure afterwards.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refusal(String);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(Box::new(Refusal(format!("{host} has no address"))) as _);
            }
            if !policy.host_allowed(&host)
                && let Some(bad) = addrs.iter().find(|a| !policy.ip_allowed(a.ip()))
            {
                return Err(Box::new(Refusal(format!(
                    "{host} resolves to {}, which is private, loopback, link-local or reserved",
                    bad.ip()
                ))) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The guarded HTTP client. Cheap to clone.
#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    policy: Arc<OutboundPolicy>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("policy", &self.policy)
            .finish()
    }
}

/// A response read in full (up to the policy's size cap).
#[derive(Debug, Clone)]
pub struct OutboundResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// After redirects, without user info or query.
    pub final_url: String,
}

fn tls_config() -> Result<rustls::ClientConfig, OutboundError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| OutboundError::Network(format!("TLS setup: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl Outbound {
    pub fn new(policy: OutboundPolicy) -> Result<Self, OutboundError> {
        let policy = Arc::new(policy);
        let redirect_policy = {
            let policy = policy.clone();
            redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    return attempt.error(Refusal(format!("more than {MAX_REDIRECTS} redirects")));
                }
                match policy.check(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(e) => attempt.error(Refusal(format!("redirect refused: {e}"))),
                }
            })
        };
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .dns_resolver(Arc::new(GuardedResolver {
                policy: policy.clone(),
            }))
            .redirect(redirect_policy)
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(policy.timeout)
            .user_agent(concat!("companion-platform/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OutboundError::Network(format!("HTTP client setup: {e}")))?;
        Ok(Self { client, policy })
    }

    pub fn policy(&self) -> &OutboundPolicy {
        &self.policy
    }

    /// The guarded client, for callers that drive it themselves (the MCP client transport).
    /// Check the first URL with [`Outbound::check_url`]; resolution and redirects are guarded
    /// by the client itself.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Parses `url` and checks it against the policy.
    pub fn check_url(&self, url: &str) -> Result<Url, OutboundError> {
        let parsed = Url::parse(url).map_err(|e| OutboundError::InvalidUrl(e.to_string()))?;
        self.policy.check(&parsed)?;
        Ok(parsed)
    }

    /// Sends `req` (built from [`Outbound::client`]) after checking its URL, and reads the
    /// response body up to the size cap.
    pub async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<OutboundResponse, OutboundError> {
        let req = req
            .build()
            .map_err(|e| OutboundError::InvalidUrl(e.to_string()))?;
        self.policy.check(req.url())?;
        let shown = display_url(req.url());
        let mut resp = self
            .client
            .execute(req)
            .await
            .map_err(|e| classify(e, &shown))?;
        let limit = self.policy.max_response_bytes;
        if resp.content_length().is_some_and(|n| n > limit as u64) {
            return Err(OutboundError::TooLarge { limit });
        }
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let final_url = display_url(resp.url());
        let mut body = BytesMut::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| classify(e, &shown))? {
            if body.len() + chunk.len() > limit {
                return Err(OutboundError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(OutboundResponse {
            status,
            headers,
            body: body.freeze(),
            final_url,
        })
    }
}

/// Turns a reqwest error into ours, finding a guard refusal anywhere in its source chain.
pub fn classify(e: reqwest::Error, url: &str) -> OutboundError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = source {
        if let Some(r) = err.downcast_ref::<Refusal>() {
            return OutboundError::Refused {
                url: url.to_owned(),
                reason: r.0.clone(),
            };
        }
        source = err.source();
    }
    if e.is_timeout() {
        OutboundError::Timeout
    } else {
        // reqwest's Display names the URL with its query; keep only the kind of failure.
        let kind = if e.is_connect() {
            "could not connect"
        } else if e.is_redirect() {
            "redirect failed"
        } else if e.is_body() || e.is_decode() {
            "the response body could not be read"
        } else {
            "the request failed"
        };
        OutboundError::Network(format!("{kind}: {url}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &str) -> OutboundPolicy {
        OutboundPolicy::default().with_allow_list(allow).unwrap()
    }

    fn check(p: &OutboundPolicy, url: &str) -> Result<(), OutboundError> {
        p.check(&Url::parse(url).unwrap())
    }

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "fd00:ec2::254",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} must not be public");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    /// One case per registry entry: its first, a middle and its last address, all refused; and
    /// the public neighbours just outside.
    #[test]
    fn every_ipv4_special_purpose_block_is_refused_and_its_neighbours_are_not() {
        for &(net, len) in V4_DENY {
            let first = u32::from(net);
            let last = first | u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            for ip in [first, first + (last - first) / 2, last] {
                let ip = IpAddr::V4(Ipv4Addr::from(ip));
                assert!(!is_public(ip), "{ip} in {net}/{len}");
            }
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.31.195.255",
            "192.31.197.0",
            "192.52.192.255",
            "192.52.194.0",
            "192.88.98.255",
            "192.88.100.0",
            "192.167.255.255",
            "192.169.0.0",
            "192.175.47.255",
            "192.175.49.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    #[test]
    fn every_ipv6_special_purpose_block_is_refused_and_its_neighbours_are_not() {
        for &(net, len) in V6_DENY {
            let last = net | u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            for ip in [net, net + (last - net) / 2, last] {
                let ip = IpAddr::V6(Ipv6Addr::from(ip));
                assert!(!is_public(ip), "{ip} in {}/{len}", Ipv6Addr::from(net));
            }
        }
        // The ranges the issue names, spelled as an attacker would.
        for ip in [
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:808:808::",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:1ff:ffff::1",
            "::127.0.0.1",
            "::1:0:0",
            "4000::1",
            "1fff:ffff::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} must not be public");
        }
        for ip in [
            "2606:4700::1111",
            "2a00:1450:4001::1",
            "2001:200::1",
            "2001:db7:ffff::1",
            "2001:db9::1",
            "2003::1",
            "2001:4860:4860::8888",
            "2620:4f:7fff::1",
            "2620:4f:8001::1",
            "3ffe:ffff::1",
            "3fff:1000::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    /// URLs reach the guard parsed by the `url` crate, which reads numeric hosts as browsers do:
    /// every spelling of loopback or the metadata service is refused.
    #[test]
    fn numeric_host_spellings_are_refused() {
        let p = OutboundPolicy::default();
        for url in [
            "https://127.1/",
            "https://127.0.1/",
            "https://0177.0.0.1/",
            "https://0x7f.0.0.1/",
            "https://0x7f.1/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://017700000001/",
            "https://127.0.0.1./",
            "https://0/",
            "https://10.1/",
            "https://0xa9.0xfe.0xa9.0xfe/",
            "https://169.254.43518/",
            "https://2852039166/",
            "https://3232235777/",
            "https://[::ffff:7f00:1]/",
            "https://[64:ff9b:1::a9fe:a9fe]/",
            "https://[2002:a9fe:a9fe::]/",
            "https://[2001::a9fe:a9fe]/",
            "https://192.88.99.1/",
        ] {
            assert!(
                matches!(check(&p, url), Err(OutboundError::Refused { .. })),
                "{url} must be refused"
            );
        }
        // Numeric spellings of a public address are still that address.
        assert!(check(&p, "https://134744072/").is_ok());
        assert!(check(&p, "https://0x8.010.8.8/").is_ok());
        // Numeric but no address: the parser refuses it before the guard sees it.
        for url in [
            "https://256.1.1.1/",
            "https://4294967296/",
            "https://1.2.3.4.5/",
        ] {
            assert!(Url::parse(url).is_err(), "{url} must not parse");
        }
    }

    #[test]
    fn production_policy_wants_public_https() {
        let p = OutboundPolicy::default();
        assert!(check(&p, "https://api.example.com/x").is_ok());
        assert!(check(&p, "https://93.184.216.34/").is_ok());
        for bad in [
            "http://api.example.com/",
            "https://127.0.0.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::1]/",
            "https://[::ffff:a9fe:a9fe]/",
            "ftp://example.com/",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(check(&p, bad), Err(OutboundError::Refused { .. })),
                "{bad} must be refused"
            );
        }
    }

    #[test]
    fn the_allow_list_opens_exactly_its_destinations() {
        let p = policy("127.0.0.1, localhost");
        assert!(check(&p, "http://127.0.0.1:8080/").is_ok());
        assert!(check(&p, "http://localhost:8080/").is_ok());
        assert!(check(&p, "https://127.0.0.1/").is_ok());
        // Not listed: still refused, and plain http still needs the list.
        assert!(check(&p, "http://127.0.0.2/").is_err());
        assert!(check(&p, "https://169.254.169.254/").is_err());
        assert!(check(&p, "http://example.com/").is_err());
        let net = policy("10.0.0.0/8");
        assert!(check(&net, "http://10.9.8.7/").is_ok());
        assert!(check(&net, "http://11.0.0.1/").is_err());
        assert!(
            OutboundPolicy::default()
                .with_allow_list("no spaces/x")
                .is_err()
        );
    }

    #[test]
    fn shown_urls_carry_no_secrets() {
        let url = Url::parse("https://user:pw@api.example.com:8443/v1/x?token=abc#f").unwrap();
        assert_eq!(display_url(&url), "https://api.example.com:8443/v1/x");
    }
}
