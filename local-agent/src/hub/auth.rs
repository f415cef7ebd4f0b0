//! Who may talk to the hub: the token rule for HTTP and WebSocket.
//!
//! HTTP and WebSocket callers are identified by their TCP peer address, which cannot be spoofed
//! once the handshake completed: loopback peers are this computer and are trusted; anyone else
//! must present `X-Service-Token`. UDP has no handshake and no headers, so a datagram's source
//! address is only a claim: a remote node proves itself per datagram with a session key it got
//! under this rule (see [`super::session`]); only loopback datagrams are taken without one.

use std::net::IpAddr;

use http::HeaderMap;
use subtle::ConstantTimeEq;

/// Header carrying the shared token.
pub const TOKEN_HEADER: &str = "x-service-token";

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

    /// `text` (a request path for the log) with every occurrence of the token replaced by
    /// `[redacted]`: a client that puts the token in a URL by mistake must not put it in the
    /// user's log. Each byte of the token may be spelled literally or percent-encoded (`%2D`,
    /// `%2d`), as clients and proxies encode paths differently.
    pub fn redact(&self, text: &str) -> String {
        let Some(token) = self.token.as_deref() else {
            return text.to_string();
        };
        let raw = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let (mut i, mut copied) = (0, 0);
        while i < raw.len() {
            match match_encoded(raw, i, token)
                .filter(|&end| text.is_char_boundary(i) && text.is_char_boundary(end))
            {
                Some(end) => {
                    out.push_str(&text[copied..i]);
                    out.push_str("[redacted]");
                    i = end;
                    copied = end;
                }
                None => i += 1,
            }
        }
        out.push_str(&text[copied..]);
        out
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

/// `SERVICE_CSI_ALLOW` / `--csi-allow` used to let listed addresses send UDP without any proof,
/// which anyone able to forge such an address could use. It is refused loudly rather than
/// ignored, so an upgrade never leaves nodes silently dropped without saying why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "SERVICE_CSI_ALLOW (--csi-allow) is no longer supported: a source address proves nothing on a LAN. Unset it; remote nodes open a session with the token (POST /ingest/session) and tag their datagrams, or stream over the WebSocket /ingest (see the README, \"Who may send\")"
)]
pub struct AllowListRemoved;

/// Accepts only an empty (or blank) allow list.
pub fn refuse_allow_list(text: &str) -> Result<(), AllowListRemoved> {
    if text.split(',').all(|s| s.trim().is_empty()) {
        Ok(())
    } else {
        Err(AllowListRemoved)
    }
}

/// Where `token` ends if it starts at `raw[start]`, each of its bytes literal or as `%XX`.
fn match_encoded(raw: &[u8], start: usize, token: &[u8]) -> Option<usize> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut j = start;
    for &want in token {
        match raw.get(j)? {
            b'%' => {
                let (hi, lo) = (hex(*raw.get(j + 1)?)?, hex(*raw.get(j + 2)?)?);
                if hi * 16 + lo != want {
                    return None;
                }
                j += 3;
            }
            &c if c == want => j += 1,
            _ => return None,
        }
    }
    Some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_redacted_from_logged_paths() {
        let rule = TokenRule::new(Some("s3cret-tok"));
        assert_eq!(rule.redact("/x/s3cret-tok/y"), "/x/[redacted]/y");
        assert_eq!(rule.redact("/nodes"), "/nodes");
        assert_eq!(TokenRule::new(None).redact("/s3cret-tok"), "/s3cret-tok");
    }

    #[test]
    fn a_percent_encoded_token_is_redacted_too() {
        let rule = TokenRule::new(Some("s3cret-tok"));
        for path in [
            "/x/s3cret%2Dtok/y",
            "/x/s3cret%2dtok/y",
            "/x/%73%33%63%72%65%74%2d%74%6f%6b/y",
            "/x/%733cret-tok/y",
        ] {
            assert_eq!(rule.redact(path), "/x/[redacted]/y", "{path}");
        }
        // Twice, and next to multi-byte text, and a near miss left alone.
        assert_eq!(
            rule.redact("/é/s3cret-tok/s3cret%2Dtok"),
            "/é/[redacted]/[redacted]"
        );
        assert_eq!(rule.redact("/s3cret-to%"), "/s3cret-to%");
        assert_eq!(rule.redact("/s3cret%2Xtok"), "/s3cret%2Xtok");
    }
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
    fn an_allow_list_is_refused_with_its_reason() {
        assert_eq!(refuse_allow_list(""), Ok(()));
        assert_eq!(refuse_allow_list(" , "), Ok(()));
        let err = refuse_allow_list("192.168.1.0/24").unwrap_err();
        assert!(err.to_string().contains("/ingest/session"));
    }
}
