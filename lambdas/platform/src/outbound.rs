//! TEMPORARY stand-in for the lead's `outbound` module (plan9.md signature); replaced on merge.
//! Refuses private, loopback and link-local destinations unless allowed, at DNS resolution time
//! and for literal IPs in every redirect hop.

const ALLOW_VAR: &str = "PLATFORM_OUTBOUND_ALLOW";

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;

#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("destination refused: {url}: {reason}")]
    Refused { url: String, reason: String },
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("the destination did not answer in time")]
    Timeout,
    #[error("the response is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("network error: {0}")]
    Network(String),
}

#[derive(Debug, Clone)]
pub enum AllowRule {
    Host(String),
    Net(IpNet),
}

#[derive(Debug, Clone)]
pub struct OutboundPolicy {
    pub allow: Vec<AllowRule>,
    pub allow_http: bool,
    pub timeout: Duration,
    pub max_response_bytes: usize,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            allow_http: false,
            timeout: Duration::from_secs(30),
            max_response_bytes: 5 * 1024 * 1024,
        }
    }
}

impl OutboundPolicy {
    pub fn from_env() -> Result<Self, OutboundError> {
        let mut p = Self::default();
        if let Ok(v) = std::env::var(ALLOW_VAR) {
            for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                p.allow.push(parse_rule(item));
            }
            p.allow_http = !p.allow.is_empty();
        }
        Ok(p)
    }
}

fn parse_rule(item: &str) -> AllowRule {
    if let Ok(net) = item.parse::<IpNet>() {
        return AllowRule::Net(net);
    }
    if let Ok(ip) = item.parse::<IpAddr>() {
        return AllowRule::Net(IpNet::from(ip));
    }
    AllowRule::Host(item.to_ascii_lowercase())
}

fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 0
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

#[derive(Debug)]
struct Guard {
    allow: Vec<AllowRule>,
}

impl Guard {
    fn host_allowed(&self, host: &str) -> bool {
        let h = host.to_ascii_lowercase();
        self.allow
            .iter()
            .any(|r| matches!(r, AllowRule::Host(a) if *a == h))
    }

    fn ip_allowed(&self, ip: IpAddr) -> bool {
        public(ip)
            || self
                .allow
                .iter()
                .any(|r| matches!(r, AllowRule::Net(n) if n.contains(&ip)))
    }
}

struct GuardedResolver(Arc<Guard>);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let host_ok = guard.host_allowed(&host);
            let ok: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| host_ok || guard.ip_allowed(a.ip()))
                .collect();
            if ok.is_empty() {
                return Err(format!("refused: {host} resolves to a non-public address").into());
            }
            Ok(Box::new(ok.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    guard: Arc<Guard>,
    allow_http: bool,
    max: usize,
}

pub struct OutboundResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: bytes::Bytes,
    pub final_url: String,
}

impl Outbound {
    pub fn new(policy: OutboundPolicy) -> Result<Self, OutboundError> {
        let guard = Arc::new(Guard {
            allow: policy.allow.clone(),
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| OutboundError::Network(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let g2 = guard.clone();
        let allow_http = policy.allow_http;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .dns_resolver(Arc::new(GuardedResolver(guard.clone())))
            .no_proxy()
            .timeout(policy.timeout)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= 5 {
                    return attempt.error("too many redirects");
                }
                match check(&g2, allow_http, attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(e) => attempt.error(e),
                }
            }))
            .build()
            .map_err(|e| OutboundError::Network(e.to_string()))?;
        Ok(Self {
            client,
            guard,
            allow_http,
            max: policy.max_response_bytes,
        })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, OutboundError> {
        let u = reqwest::Url::parse(url).map_err(|e| OutboundError::InvalidUrl(e.to_string()))?;
        check(&self.guard, self.allow_http, &u).map_err(|reason| OutboundError::Refused {
            url: url.to_owned(),
            reason,
        })?;
        Ok(u)
    }

    pub async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<OutboundResponse, OutboundError> {
        let req = req
            .build()
            .map_err(|e| OutboundError::InvalidUrl(e.to_string()))?;
        self.check_url(req.url().as_str())?;
        let url = req.url().to_string();
        let mut resp = self.client.execute(req).await.map_err(|e| map(&url, e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let final_url = resp.url().to_string();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| map(&url, e))? {
            if body.len() + chunk.len() > self.max {
                return Err(OutboundError::TooLarge { limit: self.max });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(OutboundResponse {
            status,
            headers,
            body: body.into(),
            final_url,
        })
    }
}

fn check(guard: &Guard, allow_http: bool, u: &reqwest::Url) -> Result<(), String> {
    let host = u.host_str().unwrap_or("");
    match u.scheme() {
        "https" => {}
        "http" if allow_http => {}
        s => return Err(format!("scheme {s} is not allowed")),
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>()
        && !guard.ip_allowed(ip)
    {
        return Err(format!("{ip} is not a public address"));
    }
    Ok(())
}

fn map(url: &str, e: reqwest::Error) -> OutboundError {
    if e.is_timeout() {
        return OutboundError::Timeout;
    }
    let text = {
        let mut s = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(inner) = src {
            s.push_str(": ");
            s.push_str(&inner.to_string());
            src = inner.source();
        }
        s
    };
    if text.contains("refused:") || e.is_redirect() {
        return OutboundError::Refused {
            url: url.to_owned(),
            reason: text,
        };
    }
    OutboundError::Network(text)
}
