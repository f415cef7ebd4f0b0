//! The loopback guard: the engine answers scripts on this computer, never web pages.
//!
//! Binding to 127.0.0.1 keeps other machines out, but a web page in the user's browser can still
//! reach loopback. Browsers always send `Origin` (and usually `Referer`) on such requests, and a
//! DNS-rebinding page sends its own host name in `Host`. So any `Origin` or `Referer` is refused,
//! and `Host` must name this engine by a loopback name and the bound port.

use http::HeaderMap;
use http::header::{HOST, ORIGIN, REFERER};
use http::uri::Uri;

use super::error::ApiError;

/// Checks one request's headers and target against the guard. `port` is the bound port.
pub fn check(headers: &HeaderMap, uri: &Uri, port: u16) -> Result<(), ApiError> {
    if headers.contains_key(ORIGIN) {
        return Err(ApiError::Forbidden(
            "requests carrying an Origin header are refused: the engine serves local scripts, not web pages".to_string(),
        ));
    }
    if headers.contains_key(REFERER) {
        return Err(ApiError::Forbidden(
            "requests carrying a Referer header are refused: the engine serves local scripts, not web pages".to_string(),
        ));
    }
    let mut hosts = headers.get_all(HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => host,
        (None, _) => {
            return Err(ApiError::Forbidden(format!(
                "a Host header is required (127.0.0.1:{port}, localhost:{port} or [::1]:{port})"
            )));
        }
        (Some(_), Some(_)) => {
            return Err(ApiError::Forbidden("more than one Host header".to_string()));
        }
    };
    let host = host
        .to_str()
        .map_err(|_| ApiError::Forbidden("the Host header is not valid text".to_string()))?;
    if !is_local_authority(host, port) {
        return Err(ApiError::Forbidden(format!(
            "Host {host:?} is not this engine; use 127.0.0.1:{port}, localhost:{port} or [::1]:{port}"
        )));
    }
    // An absolute-form target (`GET http://other/frame`) must name the same local authority.
    if let Some(authority) = uri.authority()
        && !is_local_authority(authority.as_str(), port)
    {
        return Err(ApiError::Forbidden(format!(
            "request target {:?} does not name this engine",
            authority.as_str()
        )));
    }
    Ok(())
}

/// True for `127.0.0.1:<port>`, `localhost:<port>` (any case) and `[::1]:<port>`.
///
/// A Host without a port is accepted only when the engine listens on port 80, because that is
/// the one case where standard clients leave the port out; anywhere else a missing or different
/// port means the request was meant for another server.
pub fn is_local_authority(authority: &str, port: u16) -> bool {
    let (name, host_port) = match authority.rsplit_once(':') {
        // `[::1]` alone has a colon inside the brackets; only a colon after `]` starts a port.
        Some((name, p)) if !p.contains(']') => (name, Some(p)),
        _ => (authority, None),
    };
    let port_ok = match host_port {
        Some(p) => p.parse::<u16>().is_ok_and(|p| p == port) && !p.starts_with('+'),
        None => port == 80,
    };
    let name_ok = name == "127.0.0.1" || name == "[::1]" || name.eq_ignore_ascii_case("localhost");
    port_ok && name_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&http::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                *k,
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        h
    }

    #[test]
    fn local_authorities() {
        for ok in [
            "127.0.0.1:8799",
            "localhost:8799",
            "LocalHost:8799",
            "[::1]:8799",
        ] {
            assert!(is_local_authority(ok, 8799), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "localhost",
            "[::1]",
            "127.0.0.1:8798",
            "evil.example:8799",
            "localhost.evil.example:8799",
            "127.0.0.2:8799",
            "::1:8799",
            "127.0.0.1:+8799",
            "127.0.0.1:08799x",
            "",
            ":8799",
        ] {
            assert!(!is_local_authority(bad, 8799), "{bad}");
        }
        assert!(is_local_authority("localhost", 80));
    }

    #[test]
    fn origin_referer_and_host() {
        let uri = Uri::from_static("/frame");
        assert!(check(&headers(&[(&HOST, "127.0.0.1:9")]), &uri, 9).is_ok());
        let with_origin = headers(&[(&HOST, "127.0.0.1:9"), (&ORIGIN, "null")]);
        assert!(matches!(
            check(&with_origin, &uri, 9),
            Err(ApiError::Forbidden(_))
        ));
        let with_referer = headers(&[(&HOST, "127.0.0.1:9"), (&REFERER, "http://a/")]);
        assert!(matches!(
            check(&with_referer, &uri, 9),
            Err(ApiError::Forbidden(_))
        ));
        assert!(check(&HeaderMap::new(), &uri, 9).is_err());
        let two = headers(&[(&HOST, "127.0.0.1:9"), (&HOST, "127.0.0.1:9")]);
        assert!(check(&two, &uri, 9).is_err());
        let absolute = Uri::from_static("http://evil.example:9/frame");
        assert!(check(&headers(&[(&HOST, "127.0.0.1:9")]), &absolute, 9).is_err());
    }
}
