//! UCP request-time version validation (UCP overview, "Request-Time Validation" and "Error
//! Handling"). A platform names its profile in `UCP-Agent: profile="https://…"`; the profile's
//! `ucp.version` is the protocol version it speaks, and a business that does not implement that
//! version must refuse the request with `version_unsupported`. Requests without `UCP-Agent`
//! are served (the profile is how a platform negotiates; it is not required to buy here).
//!
//! The profile is fetched like the Web Bot Auth key directory: `https://` on a public host only
//! (no loopback, private or local-only names), no redirects, Stripe's request timeout, at most
//! [`MAX_PROFILE_BYTES`]. Each failure is a UCP protocol error with `continue_url`.

use super::backend::Backend;
use super::failure::{Failure, Ucp};
use crate::meta::UCP_VERSION;
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

/// The profile URL of a `UCP-Agent` header (an RFC 8941 dictionary with a `profile` string).
fn profile_url(header: &str) -> Result<String, Failure> {
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
    if !is_public_host(&url) {
        return Err(bad("not an https URL on a public host"));
    }
    Ok(url)
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

/// Checks the platform's protocol version when it names its profile; `Ok` to serve the request.
pub(super) async fn check<B: Backend>(req: &Request, b: &B) -> Result<(), Failure> {
    let Some(header) = req.header("ucp-agent") else {
        return Ok(());
    };
    let url = profile_url(header)?;
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
    if version != UCP_VERSION {
        return Err(refuse(
            422,
            "version_unsupported",
            format!(
                "Protocol version {version} is not supported. This business implements \
                 version {UCP_VERSION}."
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_urls_must_be_public_https_strings() {
        assert_eq!(
            profile_url(r#"profile="https://agent.example/profile.json""#).ok(),
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
            let f = profile_url(bad).err();
            assert_eq!(f.map(|f| f.code), Some("invalid_profile_url"), "{bad}");
        }
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
