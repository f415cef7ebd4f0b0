//! Headers every response carries (server, request id, security, discovery `Link`s) and the
//! caching and CORS policy of read-only documents.

use crate::meta::LINKS;
use crate::reply::Reply;
use crate::request::Request;
use sha2::{Digest, Sha256};

pub const SERVER: &str = "presence-sensing-edge";

/// How long discovery documents may be cached.
pub const DOCUMENT_MAX_AGE: u32 = 3600;
/// Pages and search results change with a deploy; a shorter lifetime keeps edits visible.
pub const PAGE_MAX_AGE: u32 = 300;

/// Headers a browser needs to call a read-only endpoint from any origin. Safe because these
/// endpoints are anonymous and read-only: no cookie or credential is ever involved.
pub fn cors_any(reply: Reply) -> Reply {
    reply
        .set_header("access-control-allow-origin", "*")
        .set_header(
            "access-control-expose-headers",
            "ETag, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, Web-Bot-Auth, \
             Content-Digest, Signature, Signature-Input",
        )
}

/// A preflight answer for read-only endpoints.
pub fn preflight_any() -> Reply {
    cors_any(Reply::empty(204))
        .with_header("access-control-allow-methods", "GET, HEAD, OPTIONS")
        .with_header(
            "access-control-allow-headers",
            "Accept, If-None-Match, Signature, Signature-Input, Signature-Agent",
        )
        .with_header("access-control-max-age", "86400")
}

/// A cacheable read-only document: `Cache-Control`, a strong `ETag` over the body, CORS `*`,
/// and `304 Not Modified` when the client already has this representation.
pub fn document(
    req: &Request,
    content_type: &str,
    body: impl Into<Vec<u8>>,
    max_age: u32,
) -> Reply {
    let body = body.into();
    let digest = Sha256::digest(&body);
    let etag: String = format!(
        "\"{}\"",
        digest[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let cache = format!("public, max-age={max_age}");
    let not_modified = req.header("if-none-match").is_some_and(|v| {
        v.split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == etag || t == "*")
    });
    let reply = if not_modified {
        Reply::empty(304)
    } else {
        Reply::new(200, content_type, body)
    };
    cors_any(reply)
        .with_header("cache-control", &cache)
        .with_header("etag", &etag)
}

/// Adds `instance` (the request path) and `request_id` to an RFC 9457 problem body, so a
/// client can quote the failing request to support.
fn annotate_problem(mut reply: Reply, req: &Request, request_id: &str) -> Reply {
    if reply.header("content-type") != Some(crate::problem::CONTENT_TYPE) {
        return reply;
    }
    if let Ok(serde_json::Value::Object(mut body)) = serde_json::from_slice(&reply.body) {
        body.entry("instance")
            .or_insert_with(|| serde_json::Value::String(req.path.clone()));
        body.insert(
            "request_id".into(),
            serde_json::Value::String(request_id.into()),
        );
        if let Ok(bytes) = serde_json::to_vec(&body) {
            reply.body = bytes;
        }
    }
    reply
}

/// Adds the headers every response carries, and drops the body of a HEAD response.
pub fn finish(reply: Reply, req: &Request, request_id: &str) -> Reply {
    let mut reply = annotate_problem(reply, req, request_id);
    if req.method == "HEAD" {
        let len = reply.body.len().to_string();
        reply.body.clear();
        reply = reply.set_header("content-length", &len);
    }
    reply = reply
        .set_header("server", SERVER)
        .set_header("x-request-id", request_id)
        .set_header("x-content-type-options", "nosniff")
        .set_header("referrer-policy", "strict-origin-when-cross-origin")
        .set_header("x-frame-options", "DENY")
        .set_header(
            "content-security-policy",
            "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        )
        .set_header("strict-transport-security", "max-age=31536000; includeSubDomains")
        .set_header("permissions-policy", "camera=(), microphone=(), geolocation=()");
    for link in LINKS {
        reply = reply.with_header("link", link);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_round_trip_gives_304() {
        let req = Request::new("GET", "/llms.txt");
        let first = document(&req, "text/plain", "hello", 60);
        let etag = first.header("etag").expect("etag").to_string();
        assert_eq!(first.status, 200);
        assert_eq!(first.header("access-control-allow-origin"), Some("*"));
        let again = document(
            &req.clone().with_header("if-none-match", &etag),
            "text/plain",
            "hello",
            60,
        );
        assert_eq!(again.status, 304);
        assert!(again.body.is_empty());
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        let changed = document(
            &req.with_header("if-none-match", "\"other\""),
            "text/plain",
            "hello",
            60,
        );
        assert_eq!(changed.status, 200);
    }

    #[test]
    fn problems_name_the_request() {
        let req = Request::new("GET", "/nope");
        let r = finish(
            crate::problem::Problem::new(404, "Not Found", "x").into_reply(),
            &req,
            "rid-9",
        );
        let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(v["instance"], "/nope");
        assert_eq!(v["request_id"], "rid-9");
        assert_eq!(v["status"], 404);
    }

    #[test]
    fn finish_adds_common_headers_and_empties_head() {
        let req = Request::new("HEAD", "/");
        let r = finish(Reply::new(200, "text/plain", "abc"), &req, "rid-1");
        assert!(r.body.is_empty());
        assert_eq!(r.header("content-length"), Some("3"));
        assert_eq!(r.header("x-request-id"), Some("rid-1"));
        assert_eq!(r.header("server"), Some(SERVER));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        let links: Vec<_> = r.headers.iter().filter(|(n, _)| n == "link").collect();
        assert_eq!(links.len(), LINKS.len());
    }
}
