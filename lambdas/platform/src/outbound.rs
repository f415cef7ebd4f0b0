//! TEMPORARY SHIM on branch `trg`: the lead's `outbound.rs` replaces this file at merge (same
//! signatures as /work/plan9.md). It checks scheme and literal IPs only; the real module also
//! guards DNS resolution and redirects.

use std::net::IpAddr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum AllowRule {
    Host(String),
    Ip(IpAddr),
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

pub const ALLOW_VAR: &str = "PLATFORM_OUTBOUND_ALLOW";

impl OutboundPolicy {
    pub fn from_env() -> Result<Self, OutboundError> {
        let mut p = Self::default();
        if let Ok(v) = std::env::var(ALLOW_VAR) {
            for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                p.allow.push(match part.parse::<IpAddr>() {
                    Ok(ip) => AllowRule::Ip(ip),
                    Err(_) => AllowRule::Host(part.to_ascii_lowercase()),
                });
            }
            p.allow_http = !p.allow.is_empty();
        }
        Ok(p)
    }
}

#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    policy: OutboundPolicy,
}

pub struct OutboundResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: bytes::Bytes,
    pub final_url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("destination refused: {reason}")]
    Refused { url: String, reason: String },
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("timed out")]
    Timeout,
    #[error("response larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("network error: {0}")]
    Network(String),
}

fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xfe00) == 0xfc00
        }
    }
}

impl Outbound {
    pub fn new(policy: OutboundPolicy) -> Result<Self, OutboundError> {
        let client = reqwest::Client::builder()
            .timeout(policy.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OutboundError::Network(e.to_string()))?;
        Ok(Self { client, policy })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    fn allowed(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.policy.allow.iter().any(|r| match r {
            AllowRule::Host(h) => h.eq_ignore_ascii_case(host),
            AllowRule::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|x| x == *ip),
        })
    }

    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, OutboundError> {
        let u = reqwest::Url::parse(url).map_err(|e| OutboundError::InvalidUrl(e.to_string()))?;
        let host = u
            .host_str()
            .ok_or_else(|| OutboundError::InvalidUrl("no host".into()))?
            .to_string();
        let refused = |reason: &str| OutboundError::Refused {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let allowed = self.allowed(&host);
        match u.scheme() {
            "https" => {}
            "http" if self.policy.allow_http && allowed => {}
            "http" => return Err(refused("plain http is not allowed")),
            _ => return Err(refused("only https URLs are allowed")),
        }
        if allowed {
            return Ok(u);
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>()
            && private(ip)
        {
            return Err(refused("private, loopback or link-local address"));
        }
        if bare.eq_ignore_ascii_case("localhost") || bare.ends_with(".localhost") {
            return Err(refused("loopback host name"));
        }
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
        let resp = self.client.execute(req).await.map_err(|e| {
            if e.is_timeout() {
                OutboundError::Timeout
            } else {
                OutboundError::Network(e.to_string())
            }
        })?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let final_url = resp.url().to_string();
        let body = resp.bytes().await.map_err(|e| {
            if e.is_timeout() {
                OutboundError::Timeout
            } else {
                OutboundError::Network(e.to_string())
            }
        })?;
        if body.len() > self.policy.max_response_bytes {
            return Err(OutboundError::TooLarge {
                limit: self.policy.max_response_bytes,
            });
        }
        Ok(OutboundResponse {
            status,
            headers,
            body,
            final_url,
        })
    }
}
