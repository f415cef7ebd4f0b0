//! One checkout model behind two protocol bindings (UCP 2026-04-08 and ACP, every API version)
//! and the MCP tools.
//!
//! A checkout *is* a Stripe Checkout Session: its id is the session id, its `continue_url` the
//! session's hosted `url`, and reading it re-reads the session. What the protocols need that
//! Stripe does not keep (the offer id, name, unit amount and quantity) travels in the session's
//! metadata, written at creation. Payment never passes through this API: a request carrying a
//! payment instrument, delegated token, x402 payment header or AP2 mandate is refused with a
//! problem that names the one payment path, the hosted page.

use crate::catalog::{Kind, Offer, display, rfc3339};
use crate::stripe::{CheckoutSession, Form};
use serde_json::{Value, json};

pub const UCP_VERSION: &str = "2026-04-08";
/// ACP API versions we answer, oldest first (as `/.well-known/acp.json` lists them).
pub const ACP_VERSIONS: &[&str] = &[
    "2025-09-29",
    "2025-12-12",
    "2026-01-16",
    "2026-01-30",
    "2026-04-17",
];
/// The first ACP version with `requires_escalation` and `continue_url`.
pub const ACP_ESCALATION_FROM: &str = "2026-01-30";
/// The first ACP version whose error messages have `intervention_required`.
const ACP_INTERVENTION_FROM: &str = "2026-04-17";
/// Most units of one hardware offer per checkout.
pub const MAX_QUANTITY: u32 = 10;

/// Marks sessions this API created; other sessions of the account are not readable here.
const CHANNEL: &str = "agent_api";

pub const PAYMENT_PATH: &str = "This API takes no payment details. The only way to pay is \
    Stripe's hosted checkout page: create a checkout session and give the buyer its \
    continue_url; they pay there themselves.";

/// Which binding a request came through (written to the session metadata, for support).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Ucp,
    Acp,
    Mcp,
}

impl Protocol {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ucp => "ucp",
            Self::Acp => "acp",
            Self::Mcp => "mcp",
        }
    }
}

/// Why an ACP `API-Version` header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("the API-Version header is required; supported: {}", newest_first().join(", "))]
    Missing,
    #[error("API-Version {0} is not supported; supported: {list}", list = newest_first().join(", "))]
    Unsupported(String),
}

impl VersionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "missing_api_version",
            Self::Unsupported(_) => "unsupported_api_version",
        }
    }
}

pub fn newest_first() -> Vec<&'static str> {
    ACP_VERSIONS.iter().rev().copied().collect()
}

/// Validates `API-Version`.
pub fn acp_version(header: Option<&str>) -> Result<&'static str, VersionError> {
    let v = header.map(str::trim).filter(|v| !v.is_empty());
    let Some(v) = v else {
        return Err(VersionError::Missing);
    };
    ACP_VERSIONS
        .iter()
        .find(|s| **s == v)
        .copied()
        .ok_or_else(|| VersionError::Unsupported(v.chars().take(40).collect()))
}

/// A malformed checkout request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body is not JSON: {0}")]
    NotJson(String),
    #[error("the body must be a JSON object")]
    NotObject,
    #[error(
        "line_items (or items) must list exactly one offer, e.g. [{{\"id\": \"<offer id>\", \"quantity\": 1}}]; offer ids come from /agent/commerce/products"
    )]
    NoItems,
    #[error("one checkout buys one offer; start one checkout per offer")]
    TooManyItems,
    #[error("a line item needs the offer id as `id` or `item.id`")]
    NoOfferId,
    #[error("quantity must be an integer from 1 to {MAX_QUANTITY}")]
    BadQuantity,
    #[error("buyer email is not an email address")]
    BadEmail,
    #[error("currency must be a three-letter code")]
    BadCurrency,
}

impl BodyError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotJson(_) | Self::NotObject => "invalid_body",
            Self::NoItems | Self::NoOfferId => "missing",
            Self::TooManyItems | Self::BadQuantity | Self::BadEmail | Self::BadCurrency => {
                "invalid"
            }
        }
    }

    pub fn param(&self) -> Option<&'static str> {
        match self {
            Self::NoItems | Self::TooManyItems | Self::NoOfferId => Some("line_items"),
            Self::BadQuantity => Some("line_items[0].quantity"),
            Self::BadEmail => Some("buyer.email"),
            Self::BadCurrency => Some("currency"),
            _ => None,
        }
    }
}

/// What a client asked to buy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub offer_id: String,
    pub quantity: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    pub line: Line,
    pub email: Option<String>,
    /// Lower case.
    pub currency: Option<String>,
}

/// Parses a JSON body into an object.
pub fn parse_object(body: &[u8]) -> Result<Value, BodyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(BodyError::NotObject)
    }
}

/// The line items of a body, in any of the accepted forms: `line_items` or `items`, each
/// `{id, quantity?}` (ACP), `{item: {id}, quantity}` (UCP) or `{offer_id, quantity?}` (MCP);
/// quantity defaults to 1. `None` when the body names no items.
pub fn parse_lines(body: &Value) -> Result<Option<Vec<Line>>, BodyError> {
    let Some(items) = body.get("line_items").or_else(|| body.get("items")) else {
        return Ok(None);
    };
    let Some(items) = items.as_array() else {
        return Err(BodyError::NoItems);
    };
    let mut lines = Vec::new();
    for it in items {
        let id = it
            .get("item")
            .and_then(|i| i.get("id"))
            .or_else(|| it.get("offer_id"))
            .or_else(|| it.get("id"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 200)
            .ok_or(BodyError::NoOfferId)?;
        lines.push(Line {
            offer_id: id.to_string(),
            quantity: parse_quantity(it.get("quantity"))?,
        });
    }
    Ok(Some(lines))
}

pub fn parse_quantity(v: Option<&Value>) -> Result<u32, BodyError> {
    match v {
        None | Some(Value::Null) => Ok(1),
        Some(q) => q
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_QUANTITY).contains(n))
            .ok_or(BodyError::BadQuantity),
    }
}

/// A create body (any protocol's form).
pub fn parse_create(body: &Value) -> Result<CreateRequest, BodyError> {
    let lines = parse_lines(body)?.ok_or(BodyError::NoItems)?;
    let mut lines = lines.into_iter();
    let line = lines.next().ok_or(BodyError::NoItems)?;
    if lines.next().is_some() {
        return Err(BodyError::TooManyItems);
    }
    let email = body
        .get("buyer")
        .and_then(|b| b.get("email"))
        .or_else(|| body.get("email"));
    let email = match email {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if plausible_email(e) => Some(e.trim().to_string()),
        Some(_) => return Err(BodyError::BadEmail),
    };
    let currency = match body.get("currency") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.len() == 3 && c.chars().all(|c| c.is_ascii_alphabetic()) => {
            Some(c.to_ascii_lowercase())
        }
        Some(_) => return Err(BodyError::BadCurrency),
    };
    Ok(CreateRequest {
        line,
        email,
        currency,
    })
}

fn plausible_email(e: &str) -> bool {
    let e = e.trim();
    e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control())
        && e.split_once('@')
            .is_some_and(|(l, d)| !l.is_empty() && d.contains('.') && !d.contains('@'))
}

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

/// Where a checkout stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for the buyer on the hosted page.
    Open,
    Complete,
    /// Ended before its expiry time, i.e. canceled through this API.
    Canceled,
    /// Ended at its expiry time.
    Expired,
}

/// A checkout as the protocols present it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    pub id: String,
    pub state: State,
    pub offer_id: String,
    pub name: String,
    pub kind: Kind,
    pub unit_amount: i64,
    pub quantity: u32,
    pub currency: String,
    pub interval: Option<String>,
    pub trial_days: Option<u32>,
    pub continue_url: Option<String>,
    pub expires_at: i64,
    pub order_id: Option<String>,
}

/// Why a Stripe session cannot be shown as a checkout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("checkout session {0} was not created through this API")]
    NotOurs(String),
    #[error("checkout session {0} has unexpected status {1}")]
    Status(String, String),
}

/// Reads a Stripe session into a checkout. `now_s` tells an expired session (time ran out) from
/// a canceled one (expired early through `/cancel`).
pub fn from_session(s: &CheckoutSession, now_s: i64) -> Result<Checkout, SessionError> {
    let m = |k: &str| s.metadata.get(k).map(String::as_str);
    if m("presence_channel") != Some(CHANNEL) {
        return Err(SessionError::NotOurs(s.id.clone()));
    }
    let not_ours = || SessionError::NotOurs(s.id.clone());
    let state = match s.status.as_deref() {
        None | Some("open") => State::Open,
        Some("complete") => State::Complete,
        Some("expired") if now_s < s.expires_at => State::Canceled,
        Some("expired") => State::Expired,
        Some(other) => return Err(SessionError::Status(s.id.clone(), other.to_string())),
    };
    let kind = match m("presence_kind") {
        Some("subscription") => Kind::Subscription,
        Some("hardware") => Kind::Hardware,
        _ => return Err(not_ours()),
    };
    Ok(Checkout {
        id: s.id.clone(),
        state,
        offer_id: m("presence_offer_id").ok_or_else(not_ours)?.to_string(),
        name: m("presence_offer_name").unwrap_or("").to_string(),
        kind,
        unit_amount: m("presence_unit_amount")
            .and_then(|a| a.parse().ok())
            .ok_or_else(not_ours)?,
        quantity: m("presence_quantity")
            .and_then(|q| q.parse().ok())
            .unwrap_or(1),
        currency: m("presence_currency").unwrap_or("usd").to_string(),
        interval: m("presence_interval")
            .filter(|i| !i.is_empty())
            .map(str::to_string),
        trial_days: m("presence_trial_days").and_then(|d| d.parse().ok()),
        continue_url: s
            .url
            .clone()
            .filter(|_| state == State::Open)
            .filter(|u| !u.is_empty()),
        expires_at: s.expires_at,
        order_id: if state == State::Complete {
            Some(s.order_id().unwrap_or_else(|| s.id.clone()))
        } else {
            None
        },
    })
}

/// Where checkout URLs send the buyer back to.
pub struct ReturnUrls {
    pub success: String,
    pub cancel: String,
}

impl ReturnUrls {
    pub fn for_site(base: &str) -> Self {
        Self {
            success: format!("{base}/pricing?checkout=complete&session_id={{CHECKOUT_SESSION_ID}}"),
            cancel: format!("{base}/pricing?checkout=canceled"),
        }
    }
}

/// The form of `POST /v1/checkout/sessions` for one offer. Every value is a function of the
/// request (no clock), so a retry with the same `Idempotency-Key` sends the same parameters, as
/// Stripe requires; Stripe's default expiry (24 h) applies.
pub fn session_form(
    offer: &Offer,
    quantity: u32,
    email: Option<&str>,
    urls: &ReturnUrls,
    protocol: Protocol,
    shipping_countries: &[String],
) -> Form {
    let mut f = Form::new();
    let mode = match offer.kind {
        Kind::Subscription => "subscription",
        Kind::Hardware => "payment",
    };
    f.push("mode", mode)
        .push("line_items[0][price]", &offer.price_id)
        .push("line_items[0][quantity]", quantity.to_string())
        .push("success_url", &urls.success)
        .push("cancel_url", &urls.cancel);
    if let Some(e) = email {
        f.push("customer_email", e);
    }
    match offer.kind {
        Kind::Subscription => {
            if let Some(t) = &offer.trial {
                // Checkout has no `trial_from_plan`: the trial must be sent explicitly.
                f.push("subscription_data[trial_period_days]", t.days.to_string())
                    .push("payment_method_collection", "if_required")
                    .push(
                        "subscription_data[trial_settings][end_behavior][missing_payment_method]",
                        "cancel",
                    );
            }
        }
        Kind::Hardware => {
            for (i, c) in shipping_countries.iter().enumerate() {
                f.push(
                    format!("shipping_address_collection[allowed_countries][{i}]"),
                    c,
                );
            }
        }
    }
    let kind = match offer.kind {
        Kind::Subscription => "subscription",
        Kind::Hardware => "hardware",
    };
    let name: String = offer.name.chars().take(400).collect();
    f.push("metadata[presence_channel]", CHANNEL)
        .push("metadata[presence_protocol]", protocol.as_str())
        .push("metadata[presence_offer_id]", &offer.id)
        .push("metadata[presence_offer_name]", name)
        .push("metadata[presence_kind]", kind)
        .push(
            "metadata[presence_unit_amount]",
            offer.price.amount.to_string(),
        )
        .push("metadata[presence_quantity]", quantity.to_string())
        .push("metadata[presence_currency]", &offer.price.currency)
        .push(
            "metadata[presence_interval]",
            offer.interval.clone().unwrap_or_default(),
        );
    if let Some(t) = &offer.trial {
        f.push("metadata[presence_trial_days]", t.days.to_string());
    }
    f
}

impl Checkout {
    pub fn subtotal(&self) -> i64 {
        self.unit_amount.saturating_mul(i64::from(self.quantity))
    }

    fn pay_message(&self) -> String {
        let what = match self.kind {
            Kind::Subscription => "start the subscription and enter their email",
            Kind::Hardware => "pay, enter their email and the shipping address",
        };
        format!(
            "The buyer must open continue_url to {what} on Stripe's hosted checkout page. \
             Payment is taken only there; this API accepts no card, token or mandate."
        )
    }

    fn trial_message(&self) -> Option<String> {
        let days = self.trial_days?;
        let per = self
            .interval
            .as_deref()
            .map(|i| format!(" per {i}"))
            .unwrap_or_default();
        Some(format!(
            "{} due today: {days}-day free trial, then {}{per}.",
            display(0, &self.currency),
            display(self.subtotal(), &self.currency)
        ))
    }

    fn state_message(&self) -> Option<String> {
        match self.state {
            State::Open => None,
            State::Complete => Some(format!(
                "Completed on Stripe's hosted page; order {}.",
                self.order_id.as_deref().unwrap_or(&self.id)
            )),
            State::Canceled => Some("This checkout was canceled.".into()),
            State::Expired => Some("This checkout expired before the buyer paid.".into()),
        }
    }

    fn links(base: &str, terms: &str) -> Value {
        json!([
            {"type": terms, "url": format!("{base}/pricing")},
            {"type": "privacy_policy", "url": format!("{base}/privacy")},
        ])
    }

    /// The UCP 2026-04-08 checkout object.
    pub fn to_ucp(&self, base: &str) -> Value {
        let status = match self.state {
            State::Open => "requires_escalation",
            State::Complete => "completed",
            State::Canceled | State::Expired => "canceled",
        };
        let sub = self.subtotal();
        let totals = json!([{"type": "subtotal", "amount": sub}, {"type": "total", "amount": sub}]);
        let mut messages = Vec::new();
        if self.state == State::Open {
            messages.push(json!({
                "type": "error", "code": "payment_required",
                "severity": "requires_buyer_input", "content": self.pay_message(),
            }));
        }
        if let Some(t) = self.trial_message().filter(|_| self.state == State::Open) {
            messages.push(json!({"type": "info", "code": "free_trial", "content": t}));
        }
        if let Some(s) = self.state_message() {
            messages.push(json!({"type": "info", "content": s}));
        }
        let mut v = json!({
            "ucp": ucp_envelope(),
            "id": self.id,
            "status": status,
            "currency": self.currency.to_ascii_uppercase(),
            "line_items": [{
                "id": "li_1",
                "item": {"id": self.offer_id, "title": self.name, "price": self.unit_amount},
                "quantity": self.quantity,
                "totals": totals,
            }],
            "totals": totals,
            "messages": messages,
            "links": Self::links(base, "terms_of_service"),
            "expires_at": rfc3339(self.expires_at),
        });
        if let Some(u) = &self.continue_url {
            v["continue_url"] = json!(u);
        }
        if let Some(o) = &self.order_id {
            v["order"] = json!({
                "id": o,
                "permalink_url": format!("{base}/agent/commerce/ucp/checkout-sessions/{}", self.id),
            });
        }
        v
    }

    /// The ACP checkout session for `version` (one of [`ACP_VERSIONS`]).
    pub fn to_acp(&self, base: &str, version: &str) -> Value {
        let escalation = version >= ACP_ESCALATION_FROM;
        let status = match (self.state, escalation) {
            (State::Open, true) => "requires_escalation",
            (State::Open, false) => "not_ready_for_payment",
            (State::Complete, _) => "completed",
            (State::Expired, true) => "expired",
            (State::Canceled, _) | (State::Expired, false) => "canceled",
        };
        let sub = self.subtotal();
        let totals = json!([
            {"type": "subtotal", "display_text": "Subtotal", "amount": sub},
            {"type": "total", "display_text": "Total", "amount": sub},
        ]);
        let mut messages = Vec::new();
        if self.state == State::Open {
            if escalation && version >= ACP_INTERVENTION_FROM {
                messages.push(json!({
                    "type": "error", "code": "intervention_required",
                    "content_type": "plain", "content": self.pay_message(),
                }));
            } else {
                // Before 2026-01-30 there is no continue_url field: the link goes in a message.
                let text = match (&self.continue_url, escalation) {
                    (Some(u), false) => format!("{} continue_url: {u}", self.pay_message()),
                    _ => self.pay_message(),
                };
                messages.push(json!({"type": "info", "content_type": "plain", "content": text}));
            }
            if let Some(t) = self.trial_message() {
                messages.push(json!({"type": "info", "content_type": "plain", "content": t}));
            }
        }
        if let Some(s) = self.state_message() {
            messages.push(json!({"type": "info", "content_type": "plain", "content": s}));
        }
        let mut v = json!({
            "id": self.id,
            "status": status,
            "currency": self.currency.to_ascii_lowercase(),
            "line_items": [{
                "id": "li_1",
                "item": {"id": self.offer_id, "quantity": self.quantity},
                "quantity": self.quantity,
                "base_amount": sub,
                "discount": 0,
                "subtotal": sub,
                "tax": 0,
                "total": sub,
                "totals": [{"type": "total", "display_text": "Total", "amount": sub}],
            }],
            "totals": totals,
            "fulfillment_options": [],
            "messages": messages,
            "links": Self::links(base, "terms_of_use"),
            "expires_at": rfc3339(self.expires_at),
        });
        if escalation {
            v["capabilities"] = json!({"payment": {"handlers": []}});
            if let Some(u) = &self.continue_url {
                v["continue_url"] = json!(u);
            }
        } else {
            v["payment_provider"] =
                json!({"provider": "stripe", "supported_payment_methods": ["card"]});
        }
        if let Some(o) = &self.order_id {
            v["order"] = json!({
                "id": o,
                "checkout_session_id": self.id,
                "permalink_url": format!("{base}/agent/commerce/acp/checkout_sessions/{}", self.id),
            });
        }
        v
    }

    /// The MCP `get_checkout` result: the essentials, with UCP's status names.
    pub fn to_tool(&self) -> Value {
        let status = match self.state {
            State::Open => "requires_escalation",
            State::Complete => "completed",
            State::Canceled | State::Expired => "canceled",
        };
        let mut v = json!({
            "id": self.id,
            "status": status,
            "offer_id": self.offer_id,
            "name": self.name,
            "quantity": self.quantity,
            "total": {
                "amount": self.subtotal(),
                "currency": self.currency,
                "display": display(self.subtotal(), &self.currency),
            },
            "expires_at": rfc3339(self.expires_at),
        });
        if let Some(u) = &self.continue_url {
            v["continue_url"] = json!(u);
        }
        if let Some(o) = &self.order_id {
            v["order_id"] = json!(o);
        }
        v
    }
}

/// The `ucp` member of every UCP response.
pub fn ucp_envelope() -> Value {
    json!({
        "version": UCP_VERSION,
        "capabilities": {"dev.ucp.shopping.checkout": [{"version": UCP_VERSION}]},
        "payment_handlers": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Availability, Money, Trial};
    use std::collections::BTreeMap;

    fn offer(kind: Kind) -> Offer {
        Offer {
            id: "pro_monthly".into(),
            name: "Pro".into(),
            description: String::new(),
            kind,
            price: Money::new(900, "usd"),
            interval: (kind == Kind::Subscription).then(|| "month".into()),
            trial: (kind == Kind::Subscription).then_some(Trial { days: 14 }),
            available: true,
            availability: Availability::InStock,
            price_id: "price_123".into(),
        }
    }

    fn session(status: &str, form: &Form) -> CheckoutSession {
        let metadata: BTreeMap<String, String> = form
            .0
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("metadata[")
                    .and_then(|k| k.strip_suffix(']'))
                    .map(|k| (k.to_string(), v.clone()))
            })
            .collect();
        serde_json::from_value(json!({
            "id": "cs_test_1", "url": "https://checkout.stripe.com/c/pay/cs_test_1",
            "status": status, "expires_at": 2_000, "metadata": metadata,
            "subscription": if status == "complete" { json!("sub_1") } else { Value::Null },
        }))
        .unwrap()
    }

    fn form(kind: Kind) -> Form {
        session_form(
            &offer(kind),
            1,
            None,
            &ReturnUrls::for_site("https://s.test"),
            Protocol::Ucp,
            &["US".to_string(), "CA".to_string()],
        )
    }

    #[test]
    fn acp_versions_are_checked() {
        assert_eq!(acp_version(Some("2026-01-30")), Ok("2026-01-30"));
        assert_eq!(acp_version(None), Err(VersionError::Missing));
        assert_eq!(acp_version(Some(" ")), Err(VersionError::Missing));
        let e = acp_version(Some("2024-01-01")).unwrap_err();
        assert_eq!(e.code(), "unsupported_api_version");
        assert!(
            e.to_string()
                .starts_with("API-Version 2024-01-01 is not supported; supported: 2026-04-17")
        );
    }

    #[test]
    fn every_line_item_form_is_accepted() {
        for body in [
            json!({"line_items": [{"id": "a"}]}),
            json!({"items": [{"id": "a", "quantity": 1}]}),
            json!({"line_items": [{"item": {"id": "a"}, "quantity": 1}]}),
            json!({"line_items": [{"offer_id": "a"}]}),
        ] {
            let r = parse_create(&body).unwrap();
            assert_eq!(
                r.line,
                Line {
                    offer_id: "a".into(),
                    quantity: 1
                },
                "{body}"
            );
        }
        let r = parse_create(&json!({"items": [{"id": "a", "quantity": 3}], "buyer": {"email": "a@b.co"}, "currency": "USD"})).unwrap();
        assert_eq!(r.line.quantity, 3);
        assert_eq!(r.email.as_deref(), Some("a@b.co"));
        assert_eq!(r.currency.as_deref(), Some("usd"));
        assert_eq!(parse_create(&json!({})), Err(BodyError::NoItems));
        assert_eq!(
            parse_create(&json!({"line_items": []})),
            Err(BodyError::NoItems)
        );
        assert_eq!(
            parse_create(&json!({"line_items": "a"})),
            Err(BodyError::NoItems)
        );
        assert_eq!(
            parse_create(&json!({"line_items": [{"id": "a"}, {"id": "b"}]})),
            Err(BodyError::TooManyItems)
        );
        assert_eq!(
            parse_create(&json!({"line_items": [{"quantity": 1}]})),
            Err(BodyError::NoOfferId)
        );
        for q in [json!(0), json!(11), json!(-1), json!(1.5), json!("1")] {
            assert_eq!(
                parse_create(&json!({"line_items": [{"id": "a", "quantity": q}]})),
                Err(BodyError::BadQuantity)
            );
        }
        assert_eq!(
            parse_create(&json!({"line_items": [{"id": "a"}], "buyer": {"email": "nope"}})),
            Err(BodyError::BadEmail)
        );
        assert!(matches!(parse_object(b"{"), Err(BodyError::NotJson(_))));
        assert_eq!(parse_object(b"[1]"), Err(BodyError::NotObject));
        assert_eq!(parse_object(b"  "), Ok(json!({})));
    }

    #[test]
    fn payment_credentials_are_found_anywhere() {
        assert_eq!(
            payment_in_body(&json!({"payment_data": {"token": "spt_123", "provider": "stripe"}})),
            Some("/payment_data".into())
        );
        assert_eq!(
            payment_in_body(
                &json!({"checkout": {"payment": {"instruments": [{"id": "i1", "handler_id": "gpay"}]}}})
            ),
            Some("/checkout/payment".into())
        );
        assert_eq!(
            payment_in_body(&json!({"meta": [{"AP2": {"intent_mandate": "x"}}]})),
            Some("/meta/0/AP2".into())
        );
        assert_eq!(
            payment_in_body(&json!({"payment": {"instruments": []}})),
            None
        );
        assert_eq!(
            payment_in_body(&json!({"line_items": [{"id": "card_reader"}]})),
            None
        );
        let h = vec![("x-payment".to_string(), "eyJ4".to_string())];
        assert_eq!(payment_header(&h), Some("x-payment"));
        assert_eq!(payment_header(&[("accept".into(), "*/*".into())]), None);
    }

    #[test]
    fn session_form_for_a_plan_sends_the_trial() {
        let f = form(Kind::Subscription);
        let get = |k: &str| f.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("mode"), Some("subscription"));
        assert_eq!(get("line_items[0][price]"), Some("price_123"));
        assert_eq!(get("subscription_data[trial_period_days]"), Some("14"));
        assert_eq!(get("payment_method_collection"), Some("if_required"));
        assert_eq!(
            get("shipping_address_collection[allowed_countries][0]"),
            None
        );
        assert_eq!(get("metadata[presence_offer_id]"), Some("pro_monthly"));
        assert!(
            get("success_url")
                .unwrap()
                .contains("{CHECKOUT_SESSION_ID}")
        );
        assert!(get("expires_at").is_none(), "no clock in the form");
    }

    #[test]
    fn session_form_for_hardware_collects_shipping() {
        let f = form(Kind::Hardware);
        let get = |k: &str| f.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("mode"), Some("payment"));
        assert_eq!(
            get("shipping_address_collection[allowed_countries][1]"),
            Some("CA")
        );
        assert_eq!(get("subscription_data[trial_period_days]"), None);
    }

    #[test]
    fn stripe_status_maps_to_each_protocol() {
        let f = form(Kind::Subscription);
        let open = from_session(&session("open", &f), 1_000).unwrap();
        assert_eq!(open.state, State::Open);
        assert_eq!(open.to_ucp("")["status"], "requires_escalation");
        assert_eq!(
            open.to_acp("", "2026-01-30")["status"],
            "requires_escalation"
        );
        assert_eq!(
            open.to_acp("", "2026-01-16")["status"],
            "not_ready_for_payment"
        );
        let done = from_session(&session("complete", &f), 1_000).unwrap();
        assert_eq!(done.to_ucp("")["status"], "completed");
        assert_eq!(done.to_ucp("b")["order"]["id"], "sub_1");
        assert_eq!(
            done.to_acp("", "2025-09-29")["order"]["checkout_session_id"],
            "cs_test_1"
        );
        assert!(done.to_ucp("").get("continue_url").is_none());
        let canceled = from_session(&session("expired", &f), 1_000).unwrap();
        assert_eq!(canceled.state, State::Canceled);
        assert_eq!(canceled.to_ucp("")["status"], "canceled");
        assert_eq!(canceled.to_acp("", "2026-04-17")["status"], "canceled");
        let expired = from_session(&session("expired", &f), 3_000).unwrap();
        assert_eq!(expired.to_ucp("")["status"], "canceled");
        assert_eq!(expired.to_acp("", "2026-04-17")["status"], "expired");
        assert_eq!(expired.to_acp("", "2025-12-12")["status"], "canceled");
        let mut other = session("open", &f);
        other.metadata.clear();
        assert!(matches!(
            from_session(&other, 0),
            Err(SessionError::NotOurs(_))
        ));
    }

    #[test]
    fn ucp_escalation_has_the_link_and_a_buyer_input_message() {
        let c = from_session(&session("open", &form(Kind::Subscription)), 1_000).unwrap();
        let v = c.to_ucp("https://s.test");
        assert_eq!(
            v["continue_url"],
            "https://checkout.stripe.com/c/pay/cs_test_1"
        );
        assert_eq!(v["currency"], "USD");
        assert_eq!(v["messages"][0]["severity"], "requires_buyer_input");
        assert!(
            v["messages"][1]["content"]
                .as_str()
                .unwrap()
                .starts_with("$0.00 due today: 14-day free trial, then $9.00 per month")
        );
        let line_total = &v["line_items"][0]["totals"][1]["amount"];
        assert_eq!(
            line_total, &v["totals"][1]["amount"],
            "lines add up to the total"
        );
        assert_eq!(v["ucp"]["version"], UCP_VERSION);
    }

    #[test]
    fn acp_shape_follows_the_version() {
        let c = from_session(&session("open", &form(Kind::Subscription)), 1_000).unwrap();
        let old = c.to_acp("https://s.test", "2025-09-29");
        assert!(old.get("continue_url").is_none());
        assert!(old.get("capabilities").is_none());
        assert_eq!(old["payment_provider"]["provider"], "stripe");
        assert!(
            old["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("https://checkout.stripe.com/c/pay/cs_test_1")
        );
        let mid = c.to_acp("https://s.test", "2026-01-30");
        assert_eq!(
            mid["continue_url"],
            "https://checkout.stripe.com/c/pay/cs_test_1"
        );
        assert_eq!(mid["capabilities"]["payment"]["handlers"], json!([]));
        assert_eq!(mid["messages"][0]["type"], "info");
        let new = c.to_acp("https://s.test", "2026-04-17");
        assert_eq!(new["messages"][0]["code"], "intervention_required");
        assert_eq!(new["currency"], "usd");
        assert_eq!(new["totals"][1]["display_text"], "Total");
    }
}
