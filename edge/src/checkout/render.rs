//! A checkout as each binding shows it: the UCP checkout object (2026-04-08 and 2026-01-23), the
//! ACP checkout session of every API version, and the MCP `get_checkout` result.

use super::session::{Checkout, State};
use crate::catalog::{Kind, display, rfc3339};
use serde_json::{Value, json};

/// The first UCP version with the error response (business outcomes as HTTP 200 with
/// `ucp.status: "error"`), `{code, content}` protocol errors and the `unrecoverable` severity.
/// Before it every failure is its HTTP status with `{status: "requires_escalation", messages}`.
pub const UCP_OUTCOMES_FROM: &str = "2026-04-08";
/// The first ACP version with `requires_escalation` and `continue_url`.
pub const ACP_ESCALATION_FROM: &str = "2026-01-30";
/// The first ACP version whose error messages have `intervention_required`.
const ACP_INTERVENTION_FROM: &str = "2026-04-17";

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

    /// The UCP checkout object. Its shape is the same in both versions we speak (what we fill
    /// in of it did not change from 2026-01-23 to 2026-04-08); only `ucp.version` differs.
    pub fn to_ucp(&self, base: &str, version: &str) -> Value {
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
            "ucp": ucp_envelope(version),
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
        // Line items changed shape in 2026-01-30: before, `item` carried the quantity and the
        // line its amounts; since, the line carries `quantity` and a `totals` list.
        let line = if escalation {
            json!({
                "id": "li_1",
                "item": {"id": self.offer_id, "name": self.name, "unit_amount": self.unit_amount},
                "quantity": self.quantity,
                "name": self.name,
                "unit_amount": self.unit_amount,
                "totals": [{"type": "total", "display_text": "Total", "amount": sub}],
            })
        } else {
            json!({
                "id": "li_1",
                "item": {"id": self.offer_id, "quantity": self.quantity},
                "base_amount": sub, "discount": 0, "subtotal": sub, "tax": 0, "total": sub,
            })
        };
        let mut v = json!({
            "id": self.id,
            "status": status,
            "currency": self.currency.to_ascii_lowercase(),
            "line_items": [line],
            "totals": totals,
            "fulfillment_options": [],
            "messages": messages,
            "links": Self::links(base, "terms_of_use"),
        });
        // Before 2026-01-30 a session has no capabilities, continue_url or expires_at; payment
        // happens on the hosted page, so no `payment_provider` is offered either.
        if escalation {
            v["capabilities"] = json!({"payment": {"handlers": []}});
            v["expires_at"] = json!(rfc3339(self.expires_at));
            if let Some(u) = &self.continue_url {
                v["continue_url"] = json!(u);
            }
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

/// The `ucp` member of every UCP checkout response, for the negotiated `version`.
pub fn ucp_envelope(version: &str) -> Value {
    json!({
        "version": version,
        "capabilities": {"dev.ucp.shopping.checkout": [{"version": version}]},
        "payment_handlers": {},
    })
}
