//! The checkout model: request parsing, payment detection, the Stripe session round trip and
//! each binding's rendering.

use super::payment::{payment_header, payment_in_body};
use super::request::{BodyError, Line, VersionError, acp_version, parse_create, parse_object};
use super::session::{Protocol, ReturnUrls, SessionError, State, from_session, session_form};
use crate::catalog::{Availability, Kind, Money, Offer, Trial};
use crate::meta::UCP_VERSION;
use crate::stripe::{CheckoutSession, Form};
use serde_json::{Value, json};
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
    assert_eq!(
        open.to_ucp("", UCP_VERSION)["status"],
        "requires_escalation"
    );
    assert_eq!(
        open.to_acp("", "2026-01-30")["status"],
        "requires_escalation"
    );
    assert_eq!(
        open.to_acp("", "2026-01-16")["status"],
        "not_ready_for_payment"
    );
    let done = from_session(&session("complete", &f), 1_000).unwrap();
    assert_eq!(done.to_ucp("", UCP_VERSION)["status"], "completed");
    assert_eq!(done.to_ucp("b", UCP_VERSION)["order"]["id"], "sub_1");
    assert_eq!(
        done.to_acp("", "2025-09-29")["order"]["checkout_session_id"],
        "cs_test_1"
    );
    assert!(done.to_ucp("", UCP_VERSION).get("continue_url").is_none());
    let canceled = from_session(&session("expired", &f), 1_000).unwrap();
    assert_eq!(canceled.state, State::Canceled);
    assert_eq!(canceled.to_ucp("", UCP_VERSION)["status"], "canceled");
    assert_eq!(canceled.to_acp("", "2026-04-17")["status"], "canceled");
    let expired = from_session(&session("expired", &f), 3_000).unwrap();
    assert_eq!(expired.to_ucp("", UCP_VERSION)["status"], "canceled");
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
    let v = c.to_ucp("https://s.test", UCP_VERSION);
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
    // Payment is never taken through the API: no payment provider, no expiry field (added in
    // 2026-01-30), and the item carries the quantity.
    assert!(old.get("payment_provider").is_none() && old.get("expires_at").is_none());
    assert_eq!(old["line_items"][0]["item"]["quantity"], 1);
    assert_eq!(old["line_items"][0]["total"], 900);
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
    assert_eq!(mid["line_items"][0]["quantity"], 1);
    assert!(mid["line_items"][0]["item"].get("quantity").is_none());
    let new = c.to_acp("https://s.test", "2026-04-17");
    assert_eq!(new["messages"][0]["code"], "intervention_required");
    assert_eq!(new["currency"], "usd");
    assert_eq!(new["totals"][1]["display_text"], "Total");
}
