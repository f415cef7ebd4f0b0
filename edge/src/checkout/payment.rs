//! Payment never passes through this API: a request carrying a payment instrument, delegated
//! token, x402 payment header or AP2 mandate is refused with a problem that names the one
//! payment path, the hosted page.

use serde_json::Value;

pub const PAYMENT_PATH: &str = "This API takes no payment details. The only way to pay is \
    Stripe's hosted checkout page: create a checkout session and give the buyer its \
    continue_url; they pay there themselves.";

/// Body members that carry a payment credential in one protocol or another: ACP
/// `payment_data` and delegated tokens, UCP `payment.instruments`, AP2 mandates, raw cards.
const PAYMENT_KEYS: &[&str] = &[
    "payment",
    "payment_data",
    "payment_method",
    "payment_method_data",
    "payment_token",
    "instrument",
    "instruments",
    "card",
    "card_number",
    "delegated_payment",
    "shared_payment_token",
    "vault_token",
    "mandate",
    "mandates",
    "ap2",
    "intent_mandate",
    "cart_mandate",
    "payment_mandate",
    "x402",
];

/// Request headers of x402 (v1 `X-PAYMENT`, v2 `PAYMENT-SIGNATURE`) and similar schemes.
const PAYMENT_HEADERS: &[&str] = &["x-payment", "payment-signature", "x-402-payment"];

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.iter().all(is_empty),
        Value::Object(o) => o.values().all(is_empty),
        _ => false,
    }
}

/// The first payment credential in a body (its JSON path), if any. Empty placeholders
/// (`"payment": {}`) are not credentials.
pub fn payment_in_body(v: &Value) -> Option<String> {
    fn walk(v: &Value, path: &str, depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        match v {
            Value::Object(o) => o.iter().find_map(|(k, child)| {
                let here = format!("{path}/{k}");
                let key = k.to_ascii_lowercase();
                // What a client *supports* (ACP `capabilities.payment.handlers`, the UCP
                // envelope's `payment_handlers`) is not a credential.
                if key == "capabilities" || key == "ucp" {
                    return None;
                }
                if PAYMENT_KEYS.contains(&key.as_str()) && !is_empty(child) {
                    Some(here)
                } else {
                    walk(child, &here, depth + 1)
                }
            }),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, child)| walk(child, &format!("{path}/{i}"), depth + 1)),
            _ => None,
        }
    }
    walk(v, "", 0)
}

/// The first payment header of a request, if any.
pub fn payment_header(headers: &[(String, String)]) -> Option<&str> {
    headers
        .iter()
        .find(|(n, v)| {
            PAYMENT_HEADERS.iter().any(|p| n.eq_ignore_ascii_case(p)) && !v.trim().is_empty()
        })
        .map(|(n, _)| n.as_str())
}
