//! What a poll finds: the items of a list answer, a stable key per item, the trigger's filter,
//! which items are new, and the message that announces one.

use std::collections::HashSet;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{MAX_NEW_PER_POLL, MAX_SEEN, Trigger};
use crate::webhooks::{self, NewMessage};

/// The items of a list answer: the array itself, or the first array of objects inside an
/// object (`{"data": [...]}`, `{"channels": [...]}`), preferring the usual names.
pub fn list_items(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        Value::Object(m) => {
            for k in ["data", "items", "results", "records", "entries", "value"] {
                if let Some(Value::Array(a)) = m.get(k) {
                    return Some(a);
                }
            }
            let arrays: Vec<&Vec<Value>> = m
                .values()
                .filter_map(|x| match x {
                    Value::Array(a) if a.iter().all(Value::is_object) => Some(a),
                    _ => None,
                })
                .collect();
            // An empty list is still the list (`{"channels": []}` before the first item).
            match arrays.as_slice() {
                [only] => Some(*only),
                _ => arrays.iter().find(|a| !a.is_empty()).copied(),
            }
        }
        _ => None,
    }
}

/// A stable key for an item: its `id` (or `uuid`, `key`, `ts`), else a hash of its content.
pub fn item_key(item: &Value) -> String {
    for k in ["id", "uuid", "key", "ts"] {
        match item.get(k) {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= 64 => return format!("{k}:{s}"),
            Some(Value::Number(x)) => return format!("{k}:{x}"),
            _ => {}
        }
    }
    // serde_json's map is ordered by key, so equal items hash equally.
    let d = Sha256::digest(item.to_string().as_bytes());
    format!("sha256:{}", crate::ids::hex(&d[..16]))
}

/// Whether `item` passes `filter`: every member equals the item's value at that key (a top-level
/// name, or a JSON pointer starting with `/`).
pub fn matches_filter(item: &Value, filter: Option<&Value>) -> bool {
    let Some(Value::Object(f)) = filter else {
        return true;
    };
    f.iter().all(|(k, want)| {
        let got = if k.starts_with('/') {
            item.pointer(k)
        } else {
            item.get(k)
        };
        got == Some(want)
    })
}

/// The `trigger.event` message for `item`, with an id derived from the trigger and `key`.
pub fn event_message(t: &Trigger, item: &Value, key: &str, now_ms: i64) -> NewMessage {
    let data = json!({
        "trigger_id": t.id,
        "app": t.app,
        "event": t.event,
        "item": item,
    });
    NewMessage {
        id: webhooks::message_id(&[&t.id, key]),
        account_id: t.account_id.clone(),
        trigger_id: t.id.clone(),
        kind: "trigger.event".into(),
        body: webhooks::envelope("trigger.event", now_ms, data).to_string(),
    }
}

/// What one successful poll of `t` found: the items to announce (new, passing the filter, at
/// most [`MAX_NEW_PER_POLL`]) with their keys, and the keys to remember. The first poll only
/// records its baseline: everything listed counts as seen, nothing is announced.
pub struct PollDiff<'a> {
    pub fire: Vec<(String, &'a Value)>,
    pub seen: Vec<String>,
}

pub fn diff<'a>(t: &Trigger, items: &'a [Value]) -> PollDiff<'a> {
    let keyed: Vec<(String, &Value)> = items.iter().map(|i| (item_key(i), i)).collect();
    let seen: HashSet<&str> = t.seen.iter().map(String::as_str).collect();
    let mut fire = Vec::new();
    let mut newly_seen: Vec<String> = Vec::new();
    if t.baseline {
        for (key, item) in &keyed {
            if seen.contains(key.as_str()) || newly_seen.contains(key) {
                continue;
            }
            if fire.len() >= MAX_NEW_PER_POLL {
                // Left unseen: it goes out with the next poll.
                continue;
            }
            if matches_filter(item, t.filter.as_ref()) {
                fire.push((key.clone(), *item));
            }
            newly_seen.push(key.clone());
        }
    } else {
        newly_seen = keyed.iter().map(|(k, _)| k.clone()).collect();
    }
    // Newest knowledge first: what the list holds now, then what was seen before.
    let mut merged: Vec<String> = Vec::new();
    let mut set = HashSet::new();
    for k in keyed
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| seen.contains(k.as_str()) || newly_seen.contains(k))
        .chain(t.seen.iter().cloned())
    {
        if set.insert(k.clone()) {
            merged.push(k);
        }
    }
    merged.truncate(MAX_SEEN);
    PollDiff { fire, seen: merged }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_found_in_arrays_and_wrapped_lists_and_keyed_stably() {
        let wrapped = json!({"ok": true, "channels": [{"id": "C1"}, {"id": "C2"}]});
        assert_eq!(list_items(&wrapped).map(Vec::len), Some(2));
        assert_eq!(list_items(&json!({"data": []})).map(Vec::len), Some(0));
        assert_eq!(
            list_items(&json!({"ok": true, "channels": []})).map(Vec::len),
            Some(0)
        );
        assert!(list_items(&json!({"ok": true})).is_none());
        assert_eq!(item_key(&json!({"id": 7})), "id:7");
        assert_eq!(item_key(&json!({"id": "C1"})), "id:C1");
        let a = item_key(&json!({"x": 1, "y": 2}));
        assert_eq!(a, item_key(&json!({"y": 2, "x": 1})));
        assert!(a.starts_with("sha256:"));
    }

    #[test]
    fn filters_compare_top_level_names_and_pointers() {
        let item = json!({"state": "open", "user": {"login": "ada"}});
        assert!(matches_filter(&item, None));
        assert!(matches_filter(&item, Some(&json!({"state": "open"}))));
        assert!(matches_filter(&item, Some(&json!({"/user/login": "ada"}))));
        assert!(!matches_filter(&item, Some(&json!({"state": "closed"}))));
        assert!(!matches_filter(&item, Some(&json!({"missing": 1}))));
    }
}
