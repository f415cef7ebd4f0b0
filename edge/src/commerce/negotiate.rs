//! UCP request-time version validation (UCP overview, "Request-Time Validation" and "Error
//! Handling"). A platform names its profile in `UCP-Agent: profile="https://…"`; the profile's
//! `ucp.version` is the protocol version it speaks. We implement 2026-04-08 (our profile's
//! `version`) and 2026-01-23 (its `supported_versions`); the request is answered in the version
//! the platform declared, and any other version is refused with `version_unsupported` (the
//! 2026-04-08 rule: the version must be ours or a key of `supported_versions`; 2026-01-23's
//! "older than the business: serve it" does not apply to a 2026-04-08 business). Requests
//! without `UCP-Agent` are served as 2026-04-08 (the profile is how a platform negotiates; it is
//! not required to buy here).
//!
//! The profile is fetched like the Web Bot Auth key directory: `https://` on a public host only
//! (no loopback, private or local-only names), no redirects, Stripe's request timeout, at most
//! [`MAX_PROFILE_BYTES`]. Each failure is a UCP protocol error with `continue_url`, in the
//! current version's shape (no version has been agreed yet). `Config::ucp_dev_profiles` (dev
//! only, `.dev.vars`) also admits plain-HTTP loopback profiles so the e2e run can play a
//! platform.

use super::backend::Backend;
use super::failure::{Failure, Ucp};
use crate::meta::{UCP_PREVIOUS, UCP_VERSION};
use crate::request::Request;
use crate::stripe::HttpCall;
use crate::webbotauth::is_public_host;
use serde_json::Value;
use sfv::{BareItem, ListEntry, Parser};

/// The largest platform profile read.
pub(super) const MAX_PROFILE_BYTES: usize = 64 * 1024;

fn refuse(status: u16, code: &'static str, detail: String) -> Failure {
    Failure::new(status, code, detail, Ucp::Protocol).continue_at_pricing()
}

/// The profile URL of a `UCP-Agent` header (an RFC 8941 dictionary with a `profile` string):
/// `https://` on a public host, or under one of the `dev` origins.
fn profile_url(header: &str, dev: &[String]) -> Result<String, Failure> {
    let bad = |why: &str| {
        refuse(
            400,
            "invalid_profile_url",
            format!("UCP-Agent must be profile=\"https://…\" naming a public host ({why})."),
        )
    };
    let dict = Parser::new(header)
        .parse_dictionary()
        .map_err(|_| bad("not a structured-field dictionary"))?;
    let url = dict
        .iter()
        .find(|(k, _)| k.as_str() == "profile")
        .and_then(|(_, v)| match v {
            ListEntry::Item(i) => match &i.bare_item {
                BareItem::String(s) => Some(s.as_str().to_string()),
                _ => None,
            },
            ListEntry::InnerList(_) => None,
        })
        .ok_or_else(|| bad("no profile string"))?;
    if !is_public_host(&url) && !dev.iter().any(|o| under_origin(&url, o)) {
        return Err(bad("not an https URL on a public host"));
    }
    Ok(url)
}

/// Whether `url` is on `origin` (`http://127.0.0.1`) at any port: the origin, then `/` or a
/// port and `/`, so `http://127.0.0.1:80@elsewhere/` does not count.
fn under_origin(url: &str, origin: &str) -> bool {
    let Some(rest) = url.strip_prefix(origin) else {
        return false;
    };
    let rest = rest
        .strip_prefix(':')
        .map_or(rest, |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
    !origin.is_empty() && rest.starts_with('/')
}

/// The protocol version a fetched profile declares, if it is a profile at all.
fn declared_version(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let version = v.get("ucp")?.get("version")?.as_str()?;
    let b = version.as_bytes();
    let dated = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
    dated.then(|| version.to_string())
}

/// The UCP version to answer in: the one the platform's profile declares when it names one we
/// implement, ours when it names no profile; a failure otherwise.
pub(super) async fn check<B: Backend>(
    req: &Request,
    dev: &[String],
    b: &B,
) -> Result<&'static str, Failure> {
    let Some(header) = req.header("ucp-agent") else {
        return Ok(UCP_VERSION);
    };
    let url = profile_url(header, dev)?;
    let call = HttpCall {
        method: "GET",
        url,
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
    };
    let unreachable = |why: String| {
        refuse(
            424,
            "profile_unreachable",
            format!("The platform profile named in UCP-Agent could not be fetched ({why})."),
        )
    };
    let answer = b.send(call).await.map_err(|e| unreachable(e.to_string()))?;
    if !(200..300).contains(&answer.status) {
        return Err(unreachable(format!("HTTP {}", answer.status)));
    }
    let version = (answer.body.len() <= MAX_PROFILE_BYTES)
        .then(|| declared_version(&answer.body))
        .flatten()
        .ok_or_else(|| {
            refuse(
                422,
                "profile_malformed",
                format!(
                    "The platform profile is not a UCP profile: JSON of at most \
                     {MAX_PROFILE_BYTES} bytes with ucp.version as YYYY-MM-DD."
                ),
            )
        })?;
    [UCP_VERSION, UCP_PREVIOUS]
        .into_iter()
        .find(|v| *v == version)
        .ok_or_else(|| {
            refuse(
                422,
                "version_unsupported",
                format!(
                    "Protocol version {version} is not supported. This business supports \
                     versions {UCP_VERSION} and {UCP_PREVIOUS}."
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_urls_must_be_public_https_strings() {
        assert_eq!(
            profile_url(r#"profile="https://agent.example/profile.json""#, &[]).ok(),
            Some("https://agent.example/profile.json".to_string())
        );
        for bad in [
            "profile=https://agent.example/p",
            r#"profile="http://agent.example/p""#,
            r#"profile="https://127.0.0.1/p""#,
            r#"profile="https://localhost/p""#,
            r#"other="https://agent.example/p""#,
            "profile=?1",
            "\"unterminated",
        ] {
            let f = profile_url(bad, &[]).err();
            assert_eq!(f.map(|f| f.code), Some("invalid_profile_url"), "{bad}");
        }
    }

    #[test]
    fn dev_origins_admit_loopback_profiles_only_under_them() {
        let dev = ["http://127.0.0.1".to_string()];
        for ok in [
            r#"profile="http://127.0.0.1:4100/ucp/2026-01-23.json""#,
            r#"profile="http://127.0.0.1/p""#,
        ] {
            assert!(profile_url(ok, &dev).is_ok(), "{ok}");
            assert!(profile_url(ok, &[]).is_err(), "{ok} without the dev origin");
        }
        for bad in [
            r#"profile="http://127.0.0.1:80@evil.example/p""#,
            r#"profile="http://127.0.0.10/p""#,
            r#"profile="https://127.0.0.1/p""#,
            r#"profile="http://127.0.0.1""#,
        ] {
            assert!(profile_url(bad, &dev).is_err(), "{bad}");
        }
        assert!(!under_origin("http://x/p", ""));
    }

    #[test]
    fn only_dated_versions_count() {
        assert_eq!(
            declared_version(br#"{"ucp":{"version":"2026-01-23"}}"#).as_deref(),
            Some("2026-01-23")
        );
        for bad in [
            &br#"{"ucp":{"version":"draft"}}"#[..],
            br#"{"version":"2026-04-08"}"#,
            b"<html>",
        ] {
            assert_eq!(declared_version(bad), None);
        }
    }
}
