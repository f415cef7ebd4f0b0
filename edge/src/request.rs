//! A transport-neutral incoming request, so routing, MCP and signature checks are testable on the
//! host without the Workers runtime.

/// Method, URL parts, headers and body of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// `https://host[:port]`, used for absolute links when no public base URL is configured.
    pub origin: String,
    /// `host[:port]` as the client addressed it (the `@authority` of RFC 9421).
    pub authority: String,
    pub path: String,
    /// The raw query string without `?`.
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Arrival time, Unix seconds (the glue reads the clock; pure code never does).
    pub received_at_s: i64,
}

impl Request {
    /// A request with no headers or body, for tests and internal calls.
    pub fn new(method: &str, target: &str) -> Self {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Self {
            method: method.to_string(),
            origin: "http://localhost".to_string(),
            authority: "localhost".to_string(),
            path: path.to_string(),
            query: query.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            received_at_s: 0,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::reply::first_header(&self.headers, name)
    }

    /// Every value of a header, in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The first value of a query parameter, percent- and plus-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k) == name).then(|| decode(v))
        })
    }

    /// True when the client prefers Markdown: it lists `text/markdown` with a q-value at least
    /// as high as any HTML type it lists.
    pub fn wants_markdown(&self) -> bool {
        let Some(accept) = self.header("accept") else {
            return false;
        };
        let mut markdown = None::<f32>;
        let mut html = None::<f32>;
        for item in accept.split(',') {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|v| v.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "text/markdown" | "text/x-markdown" => {
                    markdown = Some(markdown.unwrap_or(0.0).max(q))
                }
                "text/html" | "application/xhtml+xml" => html = Some(html.unwrap_or(0.0).max(q)),
                _ => {}
            }
        }
        match (markdown, html) {
            (Some(m), Some(h)) => m > 0.0 && m >= h,
            (Some(m), None) => m > 0.0,
            _ => false,
        }
    }
}

/// The parts of an absolute request URL the Worker needs: (origin, authority, path, query).
///
/// The runtime hands over URLs it has already parsed and normalised, so a split is enough; it
/// also keeps the `url` crate and its IDNA tables (~60 KB gzipped) out of the Worker.
pub fn split_url(url: &str) -> Option<(String, String, String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let rest = rest.split('#').next().unwrap_or("");
    let (authority, target) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = if path.is_empty() { "/" } else { path };
    let authority = authority.to_ascii_lowercase();
    Some((
        format!("{}://{authority}", scheme.to_ascii_lowercase()),
        authority,
        path.to_string(),
        query.to_string(),
    ))
}

/// Percent-decodes `+` and `%XX` (invalid escapes are kept as written; bytes that do not form
/// UTF-8 become U+FFFD rather than an error, since search words only need to be compared).
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `host[:port]` → lower-case host, keeping IPv6 brackets (`[::1]:8787` → `[::1]`).
pub fn host_name(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if a.starts_with('[') {
        return match a.find(']') {
            Some(end) => a[..=end].to_string(),
            None => String::new(),
        };
    }
    a.split(':').next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_are_decoded() {
        let r = Request::new("GET", "/agent/search?q=away+alerts%2Fsetup&limit=3&x");
        assert_eq!(r.query_param("q").as_deref(), Some("away alerts/setup"));
        assert_eq!(r.query_param("limit").as_deref(), Some("3"));
        assert_eq!(r.query_param("x").as_deref(), Some(""));
        assert_eq!(r.query_param("nope"), None);
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("100%"), "100%");
    }

    #[test]
    fn urls_split_into_origin_authority_path_and_query() {
        let parts = split_url;
        assert_eq!(
            parts("http://127.0.0.1:8787/agent/search?q=a+b#frag"),
            Some((
                "http://127.0.0.1:8787".into(),
                "127.0.0.1:8787".into(),
                "/agent/search".into(),
                "q=a+b".into()
            ))
        );
        assert_eq!(
            parts("https://Presence.Example"),
            Some((
                "https://presence.example".into(),
                "presence.example".into(),
                "/".into(),
                "".into()
            ))
        );
        assert_eq!(
            parts("https://[::1]:8787?x=1").map(|p| (p.1, p.2, p.3)),
            Some(("[::1]:8787".into(), "/".into(), "x=1".into()))
        );
        assert_eq!(parts("not a url"), None);
        assert_eq!(parts("https:///path"), None);
        assert_eq!(parts("https://user@host/"), None);
    }

    #[test]
    fn markdown_negotiation_follows_q_values() {
        let md = |a: &str| {
            Request::new("GET", "/")
                .with_header("Accept", a)
                .wants_markdown()
        };
        assert!(md("text/markdown"));
        assert!(md("text/markdown, text/html;q=0.9"));
        assert!(!md("text/html, text/markdown;q=0.5"));
        assert!(!md("text/html"));
        assert!(!md("*/*"));
        assert!(!md("text/markdown;q=0"));
        assert!(!Request::new("GET", "/").wants_markdown());
    }
}
