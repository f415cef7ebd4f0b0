//! A checkout *is* a Stripe Checkout Session: the session form written at creation (with the
//! offer in its metadata) and the reading of a session back into a [`Checkout`].

use crate::catalog::{Kind, Offer};
use crate::stripe::{CheckoutSession, Form};

/// Marks sessions this API created; other sessions of the account are not readable here.
const CHANNEL: &str = "agent_api";

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
