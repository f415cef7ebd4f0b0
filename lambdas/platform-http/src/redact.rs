//! Keeps secrets out of logs and problem documents.
//!
//! Three routes carry a secret in the path, which proxies and log pipelines treat as harmless:
//! the MCP URL form `/mcp/k/<API_KEY>`, the connect link `/connect/<link id>` and the webhook
//! ingress `/hooks/<trigger id>/<token>`. Every path that leaves the router (logs, `instance` of
//! problems, run records) goes through [`redact_path`], which also drops the query string (the
//! OAuth callback's `state` and `code` travel there).

use std::borrow::Cow;

/// What replaces a key in a redacted path.
pub const REDACTED: &str = "[redacted]";

/// Replaces the key segment of `/mcp/k/<KEY>[/...]` with [`REDACTED`]; other paths are returned
/// unchanged. A query string, if present, is dropped from URL-key paths too, since it is not
/// needed to identify the route.
pub fn redact_path(path: &str) -> Cow<'_, str> {
    let path_only = path.split(['?', '#']).next().unwrap_or(path);
    // Collapse repeated slashes the way a lenient proxy would, so `//mcp//k/KEY` is caught too.
    let segments: Vec<&str> = path_only.split('/').filter(|s| !s.is_empty()).collect();
    let is_url_key = segments.len() >= 3
        && segments[0].eq_ignore_ascii_case("mcp")
        && segments[1].eq_ignore_ascii_case("k");
    // `/hooks/<trigger id>/<token>`: the token is the ingress credential.
    if segments.len() >= 3 && segments[0].eq_ignore_ascii_case("hooks") {
        return Cow::Owned(format!("/hooks/{}/{REDACTED}", segments[1]));
    }
    // `/connect/<link id>[/...]`: the link id is the single-use secret.
    if segments.len() >= 2 && segments[0].eq_ignore_ascii_case("connect") {
        return Cow::Owned(format!("/connect/{REDACTED}"));
    }
    if !is_url_key {
        return if path_only.len() == path.len() {
            Cow::Borrowed(path)
        } else {
            Cow::Borrowed(path_only)
        };
    }
    let mut out = String::from("/mcp/k/");
    out.push_str(REDACTED);
    for rest in &segments[3..] {
        out.push('/');
        out.push_str(rest);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_ids_and_queries_are_redacted() {
        for p in [
            "/connect/cl_SeCrEt",
            "//connect/cl_SeCrEt",
            "/CONNECT/cl_SeCrEt/extra",
            "/connect/cl_SeCrEt?x=1",
        ] {
            assert_eq!(redact_path(p), "/connect/[redacted]", "{p}");
        }
        assert_eq!(
            redact_path("/oauth/callback?state=SeCrEt&code=SeCrEt"),
            "/oauth/callback"
        );
        assert_eq!(redact_path("/connect"), "/connect");
    }

    #[test]
    fn hook_tokens_are_redacted() {
        assert_eq!(
            redact_path("/hooks/trg_0123/SeCrEtToKeN"),
            "/hooks/trg_0123/[redacted]"
        );
        assert_eq!(redact_path("/hooks/trg_0123"), "/hooks/trg_0123");
    }

    const KEY: &str = "cpk_0123456789abcdefghijABCDEFGHIJ_-xyzXYZ0123";

    #[test]
    fn url_key_is_replaced() {
        assert_eq!(redact_path(&format!("/mcp/k/{KEY}")), "/mcp/k/[redacted]");
        assert_eq!(
            redact_path(&format!("/mcp/k/{KEY}/extra")),
            "/mcp/k/[redacted]/extra"
        );
    }

    #[test]
    fn odd_spellings_are_caught() {
        for p in [
            format!("//mcp//k/{KEY}"),
            format!("/MCP/K/{KEY}"),
            format!("/mcp/k/{KEY}?x=1"),
            format!("/mcp/k/{KEY}/"),
        ] {
            let r = redact_path(&p);
            assert!(!r.contains(KEY), "{p} -> {r}");
            assert!(r.starts_with("/mcp/k/[redacted]"), "{p} -> {r}");
        }
    }

    #[test]
    fn other_paths_are_untouched() {
        for p in [
            "/api/v1/runs",
            "/mcp",
            "/mcp/k",
            "/mcp/k/",
            "/api/v1/tools/mcp_k_x",
        ] {
            assert_eq!(redact_path(p), p);
        }
    }
}
