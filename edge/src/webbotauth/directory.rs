//! Where an agent's keys are: the `Signature-Agent` header (an inline `data:` directory or an
//! HTTPS URL), the SSRF guard on that URL, and the per-isolate cache of fetched directories.

use crate::meta::KEY_DIRECTORY_PATH;
use crate::request::{Request, host_name};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use sfv::{ListEntry, Parser};

/// Largest key directory we read; a real one holds a few keys (~1 KB).
pub const MAX_DIRECTORY_BYTES: usize = 64 * 1024;
/// How long a fetched directory (or a failure to fetch it) is reused.
pub const DIRECTORY_TTL_S: i64 = 300;
/// The media type of a key directory (what we ask an agent's host for, and serve ourselves).
pub const DIRECTORY_CONTENT_TYPE: &str = "application/http-message-signatures-directory+json";

/// Where the agent's keys are, from `Signature-Agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AgentLink {
    /// A `data:` URL: the directory itself.
    Inline(Vec<u8>),
    External(String),
}

/// Reads `Signature-Agent`: a dictionary member named by the covered component's `key`
/// parameter, or (the earlier draft) a bare string.
pub(super) fn agent_link(req: &Request, member: Option<&str>) -> Result<AgentLink, String> {
    let header = req.header_all("signature-agent").join(", ");
    let item = match member {
        Some(m) => match Parser::new(&header).parse_dictionary() {
            Ok(dict) => match dict.get(m) {
                Some(ListEntry::Item(item)) => item.clone(),
                _ => return Err(format!("Signature-Agent has no member {m}")),
            },
            Err(e) => return Err(format!("Signature-Agent is not a dictionary: {e}")),
        },
        None => Parser::new(&header)
            .parse_item()
            .map_err(|e| format!("Signature-Agent is not a string: {e}"))?,
    };
    let link = item
        .bare_item
        .as_string()
        .ok_or("Signature-Agent must be a string")?
        .as_str()
        .to_string();
    if let Some(data) = link.strip_prefix("data:") {
        let (meta, payload) = data.split_once(',').ok_or("malformed data: URL")?;
        let meta = meta.to_ascii_lowercase();
        let ok_type = meta == "application/http-message-signatures-directory;base64"
            || meta == "application/http-message-signatures-directory+json;base64";
        if !ok_type {
            return Err("data: URL must be a base64 http-message-signatures-directory".into());
        }
        let bytes = STANDARD
            .decode(payload)
            .or_else(|_| URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')))
            .map_err(|_| "data: URL is not base64")?;
        if bytes.len() > MAX_DIRECTORY_BYTES {
            return Err("key directory too large".into());
        }
        return Ok(AgentLink::Inline(bytes));
    }
    Ok(AgentLink::External(link))
}

/// True when an `https://` URL names a public host (see [`crate::public_host`]): no userinfo,
/// no loopback, private, link-local or other special-purpose address in any spelling, no
/// local-only name. Guards the directory fetch against being pointed at internal services (SSRF).
pub fn is_public_host(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    crate::public_host::is_public(&host_name(authority))
}

/// The origin (`https://host[:port]`, lower-cased) of an `https://` URL: the agent's identity
/// when its directory is fetched from there.
pub fn origin(url: &str) -> String {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    format!("https://{}", authority.to_ascii_lowercase())
}

/// `https://agent.example` → its well-known directory URL; a URL that already names a path is
/// used as given.
pub fn directory_url(agent: &str) -> String {
    let rest = agent.trim_start_matches("https://");
    if rest.trim_end_matches('/').contains('/') {
        agent.to_string()
    } else {
        format!("https://{}{KEY_DIRECTORY_PATH}", rest.trim_end_matches('/'))
    }
}

/// A time-limited cache of fetched directories (including failures, so a dead directory is not
/// fetched on every request). Kept per Worker isolate by the glue.
#[derive(Debug, Default)]
pub struct DirectoryCache {
    entries: std::collections::HashMap<String, (i64, Option<Vec<u8>>)>,
}

impl DirectoryCache {
    /// The cached body (or cached failure, `Some(None)`) for `url`, unless older than the TTL.
    pub fn get(&self, url: &str, now_s: i64) -> Option<Option<&[u8]>> {
        self.entries
            .get(url)
            .filter(|(at, _)| now_s - at < DIRECTORY_TTL_S)
            .map(|(_, body)| body.as_deref())
    }

    pub fn put(&mut self, url: &str, now_s: i64, body: Option<Vec<u8>>) {
        // Bound memory: drop expired entries, and everything if an attacker floods us with URLs.
        self.entries
            .retain(|_, (at, _)| now_s - *at < DIRECTORY_TTL_S);
        if self.entries.len() >= 256 {
            self.entries.clear();
        }
        self.entries.insert(url.to_string(), (now_s, body));
    }
}
