//! Deriving tools from an OpenAPI document: reading it ([`spec`]), plain text from its HTML
//! ([`html`]) and naming its operations. Shared by the catalog builder (`lambdas/catalog`) and
//! custom REST connectors, so a custom connector's tools look like the catalog's.

/// Descriptions to plain text: the same function the product catalog uses.
pub use catalog_core::html;
pub mod spec;

use crate::search::text::{Verb, words};

/// Tool names stay within what common LLM function-calling APIs accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Lowercase words joined by `_`: `network-applicationGateway` → `network_application_gateway`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for chunk in s.split(|c: char| !c.is_ascii_alphanumeric()) {
        for w in words(chunk).into_iter().chain(
            chunk
                .chars()
                .all(|c| c.is_ascii_digit())
                .then(|| chunk.to_string()),
        ) {
            if w.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push('_');
            }
            out.push_str(&w.to_ascii_lowercase());
        }
    }
    out.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// `PostRefunds` → `create_refunds`, `chat.postMessage` → `chat_post_message`; without an
/// operationId, the verb from the method and the last static path segments.
pub fn operation_name(op: &spec::Op) -> String {
    let verb = Verb::of_operation(op.method, &op.path);
    // AWS: `POST_SendMessage`, `GET_SendMessage`: the method prefix is noise.
    let id = op.operation_id.as_deref().map(|id| {
        id.strip_prefix(op.method.as_str())
            .and_then(|rest| rest.strip_prefix('_'))
            .unwrap_or(id)
    });
    let mut w: Vec<String> = match id {
        Some(id) if !words(id).is_empty() => words(id),
        _ => {
            let segs: Vec<Vec<String>> = op
                .path
                .split('/')
                .filter(|s| !s.is_empty() && !s.starts_with('{'))
                // AWS query protocol: `/#Action=SendMessage` names `SendMessage`.
                .map(|s| words(s.rsplit('=').next().unwrap_or(s)))
                .filter(|w| !w.is_empty())
                .collect();
            match segs.last() {
                // RPC style (`POST /sendMessage`): the segment already names the action.
                Some(last) if last.len() >= 2 && segs.len() == 1 => last.clone(),
                _ => {
                    let mut w = vec![match verb {
                        Some(v) => match v {
                            Verb::Create => "create",
                            Verb::Get => "get",
                            Verb::List => "list",
                            Verb::Update => "update",
                            Verb::Delete => "delete",
                        }
                        .to_string(),
                        None => op.method.as_str().to_ascii_lowercase(),
                    }];
                    let flat: Vec<String> = segs.concat();
                    w.extend(flat.iter().rev().take(4).rev().cloned());
                    w
                }
            }
        }
    };
    // An operationId that starts with its own HTTP method reads better as the action.
    let method = op.method.as_str().to_ascii_lowercase();
    if w.first() == Some(&method) {
        w[0] = match verb {
            Some(Verb::Create) => "create",
            Some(Verb::List) => "list",
            Some(Verb::Update) => "update",
            _ => w[0].as_str(),
        }
        .to_string();
    }
    w.iter()
        .map(|x| {
            x.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
        })
        .filter(|x| !x.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Fits `app.op` into [`MAX_TOOL_NAME`]; a cut name gets a short hash of the full one so two cut
/// names cannot collide.
pub fn tool_name(app: &str, op: &str) -> String {
    let full = format!("{app}.{op}");
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    use sha2::{Digest, Sha256};
    let h: String = Sha256::digest(full.as_bytes())[..3]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let keep = MAX_TOOL_NAME.saturating_sub(app.len() + 1 + 7);
    let mut op = op[..keep.min(op.len())].trim_end_matches('_').to_string();
    if !op.is_empty() {
        op.push('_');
    }
    op.push_str(&h);
    format!("{app}.{op}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_split_identifiers() {
        assert_eq!(
            slug("network-applicationGateway"),
            "network_application_gateway"
        );
        assert_eq!(slug("adexchangebuyer2"), "adexchangebuyer2");
        assert_eq!(slug("ghes-3.8"), "ghes_3_8");
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = "a".repeat(80);
        let n = tool_name("azure_network", &long);
        assert!(n.len() <= MAX_TOOL_NAME, "{n}");
        assert_ne!(n, tool_name("azure_network", &format!("{long}b")));
    }
}
