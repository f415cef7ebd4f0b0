//! The events an app offers a trigger: one poll event per list operation of its catalog tools,
//! and the generic `webhook` event for whatever the app posts to the trigger's ingress.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::apps::Catalog;

const WEBHOOK_EVENT: &str = "webhook";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Poll,
    Webhook,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Poll => "poll",
            EventKind::Webhook => "webhook",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "poll" => Some(EventKind::Poll),
            "webhook" => Some(EventKind::Webhook),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventDef {
    pub name: String,
    pub app: String,
    pub kind: EventKind,
    pub description: String,
    /// The list tool a poll event calls.
    pub tool: Option<String>,
}

impl EventDef {
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "app": self.app,
            "kind": self.kind.as_str(),
            "description": self.description,
            "tool": self.tool,
        })
    }
}

fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if word.ends_with("ss") || word.ends_with("us") {
        word.to_string()
    } else if let Some(stem) = word.strip_suffix("ses") {
        format!("{stem}s")
    } else {
        word.strip_suffix('s').unwrap_or(word).to_string()
    }
}

/// The events of `app`: one poll event per list operation (a GET of a collection, named
/// `new_<resource>`), and the generic `webhook` event for whatever the app posts to the ingress.
pub fn events_for_app(catalog: &dyn Catalog, app: &str) -> Vec<EventDef> {
    let mut out: Vec<EventDef> = Vec::new();
    let mut names = HashSet::new();
    for t in catalog.tool_outlines(app) {
        if t.method.is_some_and(|m| m != "GET") {
            continue;
        }
        // A path ending in a parameter reads one item, not a list.
        if let Some(path) = &t.path {
            let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            if last.starts_with('{') {
                continue;
            }
        }
        let op = t
            .name
            .strip_prefix(app)
            .map(|r| r.trim_start_matches(['.', '_']))
            .unwrap_or(&t.name);
        let words: Vec<String> = op
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        if !words.iter().any(|w| w == "list") {
            continue;
        }
        let resource: Vec<String> = words
            .iter()
            .filter(|w| !matches!(w.as_str(), "list" | "all" | "get" | "search"))
            .cloned()
            .collect();
        let Some((last, rest)) = resource.split_last() else {
            continue;
        };
        let mut parts = rest.to_vec();
        parts.push(singular(last));
        let base = format!("new_{}", parts.join("_"));
        let mut name = base.clone();
        let mut k = 2;
        while !names.insert(name.clone()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        out.push(EventDef {
            name,
            app: app.to_string(),
            kind: EventKind::Poll,
            description: format!(
                "A new item in the list {} returns: {}",
                t.name, t.description
            ),
            tool: Some(t.name),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.push(EventDef {
        name: WEBHOOK_EVENT.into(),
        app: app.to_string(),
        kind: EventKind::Webhook,
        description: "Each webhook the app (or anything else) POSTs to the trigger's ingress URL \
                      (hook_url, shown once at creation)."
            .into(),
        tool: None,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::StaticCatalog;

    #[test]
    fn list_tools_become_new_item_events_and_every_app_has_the_webhook_event() {
        let c = StaticCatalog::from_json(
            br#"{"apps":[{"id":"github","name":"GitHub","description":"","tools":[
                {"name":"github_list_pull_requests","description":"List PRs."},
                {"name":"github_create_issue","description":"Create an issue."},
                {"name":"github_list_issues","description":"List issues."}]}]}"#,
        )
        .unwrap();
        let ev = events_for_app(&c, "github");
        let names: Vec<&str> = ev.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["new_issue", "new_pull_request", "webhook"]);
        assert_eq!(ev[1].tool.as_deref(), Some("github_list_pull_requests"));
        assert_eq!(ev[2].kind, EventKind::Webhook);
    }
}
