//! Structured-field (RFC 8941) helpers shared by verifying requests and signing our responses.

use sfv::{BareItem, InnerList, Key, ListEntry, Parameters, SerializeValue};

pub(super) fn string_param(params: &Parameters, name: &str) -> Option<String> {
    params
        .get(name)
        .and_then(BareItem::as_string)
        .map(|s| s.as_str().to_string())
}

pub(super) fn int_param(params: &Parameters, name: &str) -> Option<i64> {
    params
        .get(name)
        .and_then(BareItem::as_integer)
        .map(i64::from)
}

pub(super) fn sf_string(s: &str) -> Result<BareItem, String> {
    sfv::String::from_string(s.to_string())
        .map(BareItem::String)
        .map_err(|(e, _)| format!("not a structured-field string: {e}"))
}

pub(super) fn sf_key(s: &str) -> Result<Key, String> {
    Key::from_string(s.to_string()).map_err(|(e, _)| format!("bad key {s}: {e}"))
}

/// The serialised `@signature-params` value of a label.
pub(super) fn params_line(list: &InnerList) -> Result<String, String> {
    vec![ListEntry::InnerList(list.clone())]
        .serialize_value()
        .ok_or_else(|| "empty signature parameters".to_string())
}
