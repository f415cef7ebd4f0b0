//! Deployment settings read from Worker vars and secrets, as plain data so every module can be
//! tested with any configuration.

use crate::catalog::MAX_CACHE_MS;
use crate::request::{Request, host_name};
use crate::stripe::Stripe;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// The settings one request is handled with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Public origin used in absolute links (`https://presence.example`); when empty the
    /// request's own origin is used, which is right for `wrangler dev`.
    pub public_base_url: String,
    /// Host names (no port) allowed in `Host` and `Origin` of MCP requests, besides the public
    /// base URL's host. Development adds `localhost`, `127.0.0.1` and `[::1]`.
    pub allowed_hosts: Vec<String>,
    /// Client keys (see [`crate::ratelimit::client_key`]) that skip the rate limiter. Set only
    /// in `.dev.vars` for local test runs; production never sets it.
    pub rate_limit_exempt: Vec<String>,
    /// The site's own Ed25519 signing key (32 raw bytes), from a Worker secret. Without it the
    /// key directory answers 404, which scanners treat as "not applicable".
    pub signing_key: Option<[u8; 32]>,
    /// The Stripe account the shop sells through; `None` without `STRIPE_SECRET_KEY` (commerce
    /// endpoints then answer 503).
    pub stripe: Option<Stripe>,
    /// How long the offer catalogue may be served from the per-isolate cache (at most 60 s).
    pub catalog_ttl_ms: u64,
    /// ISO country codes a hardware checkout ships to.
    pub shipping_countries: Vec<String>,
    /// Origins (`http://127.0.0.1`, any port) whose UCP platform profiles are fetched although
    /// they are not public `https` hosts, so the e2e run can play a platform. `.dev.vars` only
    /// (`UCP_DEV_PROFILE_ORIGINS`); production never sets it.
    pub ucp_dev_profiles: Vec<String>,
}

impl Config {
    /// Builds a config from the raw var strings; unknown or malformed parts are ignored so a
    /// typo in a var degrades one feature instead of taking the site down.
    pub fn from_vars(
        public_base_url: Option<String>,
        allowed_hosts: Option<String>,
        rate_limit_exempt: Option<String>,
        signing_key_b64: Option<String>,
    ) -> Self {
        let list = |v: Option<String>| -> Vec<String> {
            v.unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect()
        };
        Self {
            public_base_url: public_base_url
                .map(|s| s.trim().trim_end_matches('/').to_string())
                .unwrap_or_default(),
            allowed_hosts: list(allowed_hosts),
            rate_limit_exempt: list(rate_limit_exempt),
            signing_key: signing_key_b64.and_then(|k| decode_signing_key(&k)),
            stripe: None,
            catalog_ttl_ms: MAX_CACHE_MS,
            shipping_countries: vec!["US".to_string()],
            ucp_dev_profiles: Vec::new(),
        }
    }

    /// Adds `UCP_DEV_PROFILE_ORIGINS` (comma-separated `http(s)://host` origins, no path).
    pub fn with_ucp_dev_profiles(mut self, origins: Option<String>) -> Self {
        self.ucp_dev_profiles = origins
            .unwrap_or_default()
            .split(',')
            .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
            .filter(|o| {
                let host = o.split_once("://").map_or("", |(s, h)| {
                    if s == "http" || s == "https" { h } else { "" }
                });
                !host.is_empty() && !host.contains(['/', '@', ':'])
            })
            .collect();
        self
    }

    /// Adds the commerce settings: `STRIPE_API_BASE` (default Stripe's), `STRIPE_SECRET_KEY`,
    /// `CATALOG_CACHE_S` (0..=60, default 60) and `SHIPPING_COUNTRIES` (comma-separated ISO
    /// codes, default `US`).
    pub fn with_commerce(
        mut self,
        api_base: Option<String>,
        secret_key: Option<String>,
        cache_s: Option<String>,
        shipping_countries: Option<String>,
    ) -> Self {
        self.stripe = secret_key
            .filter(|k| !k.trim().is_empty())
            .map(|k| Stripe::new(api_base.as_deref().unwrap_or(""), k.trim()));
        if let Some(s) = cache_s.and_then(|s| s.trim().parse::<u64>().ok()) {
            self.catalog_ttl_ms = s.saturating_mul(1000).min(MAX_CACHE_MS);
        }
        let countries: Vec<String> = shipping_countries
            .unwrap_or_default()
            .split(',')
            .map(|c| c.trim().to_ascii_uppercase())
            .filter(|c| c.len() == 2 && c.chars().all(|ch| ch.is_ascii_uppercase()))
            .collect();
        if !countries.is_empty() {
            self.shipping_countries = countries;
        }
        self
    }

    /// The origin for absolute links in responses to `req`.
    pub fn base_url<'a>(&'a self, req: &'a Request) -> &'a str {
        if self.public_base_url.is_empty() {
            &req.origin
        } else {
            &self.public_base_url
        }
    }

    /// True when `host` (optionally with `:port`) may address the MCP endpoint.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        if name.is_empty() {
            return false;
        }
        let public = self
            .public_base_url
            .split_once("://")
            .map(|(_, rest)| host_name(rest.split('/').next().unwrap_or("")))
            .unwrap_or_default();
        name == public || self.allowed_hosts.contains(&name)
    }
}

/// Decodes the site's signing key secret: 32 raw bytes, base64 or base64url.
pub fn decode_signing_key(b64: &str) -> Option<[u8; 32]> {
    let t = b64.trim();
    let bytes = URL_SAFE_NO_PAD
        .decode(t.trim_end_matches('='))
        .or_else(|_| STANDARD.decode(t))
        .ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_matched_without_ports() {
        let c = Config::from_vars(
            Some("https://presence.example/".into()),
            Some("localhost, 127.0.0.1,[::1]".into()),
            None,
            None,
        );
        assert_eq!(c.public_base_url, "https://presence.example");
        assert!(c.host_allowed("presence.example"));
        assert!(c.host_allowed("localhost:8787"));
        assert!(c.host_allowed("[::1]:8787"));
        assert!(c.host_allowed("127.0.0.1"));
        assert!(!c.host_allowed("evil.example.com"));
        assert!(!c.host_allowed(""));
    }

    #[test]
    fn production_allows_only_the_public_host() {
        let c = Config::from_vars(Some("https://presence.example".into()), None, None, None);
        assert!(!c.host_allowed("localhost"));
        assert!(c.rate_limit_exempt.is_empty());
        assert!(c.signing_key.is_none());
        assert!(c.stripe.is_none());
    }

    #[test]
    fn commerce_settings_are_bounded() {
        let c = Config::default().with_commerce(
            Some("http://127.0.0.1:1".into()),
            Some(" sk_test_x ".into()),
            Some("600".into()),
            Some("us, ca,xx1,".into()),
        );
        assert_eq!(c.catalog_ttl_ms, 60_000);
        assert_eq!(c.shipping_countries, ["US", "CA"]);
        let s = c.stripe.expect("configured");
        assert!(
            s.list_prices(None)
                .url
                .starts_with("http://127.0.0.1:1/v1/prices")
        );
        assert!(!format!("{s:?}").contains("sk_test_x"));
        let none = Config::default().with_commerce(None, Some("".into()), Some("0".into()), None);
        assert!(none.stripe.is_none());
        assert_eq!(none.catalog_ttl_ms, 0);
    }

    #[test]
    fn ucp_dev_profile_origins_are_bare_origins() {
        let c = Config::default().with_ucp_dev_profiles(Some(
            "http://127.0.0.1, HTTPS://Dev.Test/ ,ftp://x,http://a/b,http://u@h,http://h:1,".into(),
        ));
        assert_eq!(c.ucp_dev_profiles, ["http://127.0.0.1", "https://dev.test"]);
        assert!(Config::default().ucp_dev_profiles.is_empty());
    }
}
