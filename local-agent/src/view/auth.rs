//! Who may look: the per-start token, its cookie, and the browser guards of the live view.
//!
//! The view shows what happens in someone's home, on a port every web page in their browser can
//! reach. So:
//! - a random token is made at every start and printed once (`/?token=…`, like a notebook
//!   server); a visit with it gets an `HttpOnly; SameSite=Strict` cookie holding the token, and
//!   every other request must carry that cookie (or `Authorization: Bearer <token>` for the
//!   `doctor` command); comparisons are constant-time;
//! - `Host` must name this listener by a loopback name and its port, which defeats DNS
//!   rebinding (a rebound page sends its own host name);
//! - a state change (`POST`) must also come from this origin: `Origin` equal to the view's own
//!   origin and, when the browser sends it, `Sec-Fetch-Site: same-origin`.

use base64::Engine as _;
use http::HeaderMap;
use http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN};
use rand::RngCore;
use subtle::ConstantTimeEq;

use crate::engine::host_guard::is_local_authority;

/// The per-start secret.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// 256 random bits, URL-safe.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }

    /// A fixed token (tests).
    pub fn from_string(s: String) -> Self {
        Self(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison with a presented value.
    pub fn matches(&self, presented: &str) -> bool {
        let a = self.0.as_bytes();
        let b = presented.as_bytes();
        a.len() == b.len() && bool::from(a.ct_eq(b))
    }
}

/// The cookie's name carries the port: cookies are not port-specific, so two agents on one
/// computer would otherwise overwrite each other's.
pub fn cookie_name(port: u16) -> String {
    format!("presence_view_{port}")
}

/// The `Set-Cookie` value for a visit with the right token. No `Max-Age`: a session cookie, and
/// the token dies with the agent anyway.
pub fn set_cookie(port: u16, token: &Token) -> String {
    format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        cookie_name(port),
        token.as_str()
    )
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    Host(String),
    #[error(
        "open the address the agent printed when it started (http://127.0.0.1:<port>/?token=…), or run `local-agent open`"
    )]
    NoSession,
    #[error("{0}")]
    CrossOrigin(String),
}

/// `Host` must be this listener by a loopback name (and `GET http://other/` is refused too).
pub fn check_host(headers: &HeaderMap, uri: &http::Uri, port: u16) -> Result<(), Refused> {
    let mut hosts = headers.get_all(HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h.to_str().unwrap_or(""),
        _ => "",
    };
    if !is_local_authority(host, port) {
        return Err(Refused::Host(format!(
            "this view answers only to http://127.0.0.1:{port} or http://localhost:{port}"
        )));
    }
    if let Some(a) = uri.authority()
        && !is_local_authority(a.as_str(), port)
    {
        return Err(Refused::Host(
            "the request target names another host".into(),
        ));
    }
    Ok(())
}

/// The session: the view's cookie, or a bearer token (the `doctor` command).
pub fn has_session(headers: &HeaderMap, port: u16, token: &Token) -> bool {
    let name = cookie_name(port);
    let cookie_ok = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(k, v)| k == name && token.matches(v));
    let bearer_ok = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|v| token.matches(v.trim()));
    cookie_ok || bearer_ok
}

/// The `token` query parameter, if any.
pub fn query_token(uri: &http::Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v)
}

/// A request a browser made for a page of another origin (`Sec-Fetch-Site: same-site` from a
/// server on another local port, or `cross-site`) is refused: `SameSite=Strict` does not separate
/// ports of 127.0.0.1, and nothing on another origin has a reason to ask the view for anything.
/// Requests without the header (scripts, older browsers) fall to the cookie and `Host` rules.
pub fn check_fetch_site(headers: &HeaderMap) -> Result<(), Refused> {
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        None | Some("same-origin") | Some("none") => Ok(()),
        Some(other) => Err(Refused::CrossOrigin(format!(
            "the view answers only its own page (Sec-Fetch-Site {other:?})"
        ))),
    }
}

/// A state change must come from a page of this view: `Origin` is this listener, and the
/// browser's `Sec-Fetch-Site` (when sent) says same-origin. The cookie is `SameSite=Strict`
/// already; this also stops a page on another local port (same site, different origin).
pub fn check_same_origin(headers: &HeaderMap, port: u16) -> Result<(), Refused> {
    let origin = headers.get(ORIGIN).and_then(|v| v.to_str().ok());
    let ok_origin = origin.is_some_and(|o| {
        o.strip_prefix("http://")
            .is_some_and(|authority| is_local_authority(authority, port))
    });
    if !ok_origin {
        return Err(Refused::CrossOrigin(format!(
            "a change must come from the view's own page (Origin http://127.0.0.1:{port}); got {}",
            origin.map_or("no Origin".to_string(), |o| format!("{o:?}"))
        )));
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && site != "same-origin"
    {
        return Err(Refused::CrossOrigin(format!(
            "a change must come from the view's own page (Sec-Fetch-Site {site:?})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn h(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        m
    }

    #[test]
    fn tokens_are_random_and_compared_exactly() {
        let a = Token::random();
        let b = Token::random();
        assert_ne!(a.as_str(), b.as_str());
        assert_eq!(a.as_str().len(), 43);
        assert!(a.matches(a.as_str()));
        assert!(!a.matches(b.as_str()));
        assert!(!a.matches(&a.as_str()[..42]));
        assert!(!a.matches(""));
    }

    #[test]
    fn session_by_cookie_or_bearer() {
        let t = Token::from_string("abc".into());
        assert!(has_session(
            &h(&[("cookie", "x=1; presence_view_9=abc")]),
            9,
            &t
        ));
        assert!(!has_session(
            &h(&[("cookie", "presence_view_8=abc")]),
            9,
            &t
        ));
        assert!(!has_session(
            &h(&[("cookie", "presence_view_9=abd")]),
            9,
            &t
        ));
        assert!(has_session(&h(&[("authorization", "Bearer abc")]), 9, &t));
        assert!(!has_session(&h(&[("authorization", "Basic abc")]), 9, &t));
        assert!(!has_session(&HeaderMap::new(), 9, &t));
    }

    #[test]
    fn host_and_origin_rules() {
        let uri = http::Uri::from_static("/");
        assert!(check_host(&h(&[("host", "127.0.0.1:9")]), &uri, 9).is_ok());
        assert!(check_host(&h(&[("host", "localhost:9")]), &uri, 9).is_ok());
        assert!(check_host(&h(&[("host", "evil.example:9")]), &uri, 9).is_err());
        assert!(check_host(&HeaderMap::new(), &uri, 9).is_err());
        assert!(check_same_origin(&h(&[("origin", "http://127.0.0.1:9")]), 9).is_ok());
        assert!(check_same_origin(&h(&[("origin", "http://127.0.0.1:8")]), 9).is_err());
        assert!(check_same_origin(&h(&[("origin", "https://evil.example")]), 9).is_err());
        assert!(check_same_origin(&HeaderMap::new(), 9).is_err());
        assert!(
            check_same_origin(
                &h(&[
                    ("origin", "http://127.0.0.1:9"),
                    ("sec-fetch-site", "same-site")
                ]),
                9
            )
            .is_err()
        );
        assert!(check_fetch_site(&h(&[("sec-fetch-site", "same-origin")])).is_ok());
        assert!(check_fetch_site(&h(&[("sec-fetch-site", "none")])).is_ok());
        assert!(check_fetch_site(&HeaderMap::new()).is_ok());
        assert!(check_fetch_site(&h(&[("sec-fetch-site", "same-site")])).is_err());
        assert!(check_fetch_site(&h(&[("sec-fetch-site", "cross-site")])).is_err());
        assert_eq!(
            query_token(&http::Uri::from_static("/?a=1&token=xyz")),
            Some("xyz")
        );
    }
}
