//! The commerce endpoints and tools against a scripted Stripe ([`Fake`]).

use super::backend::Backend;
use super::problems::RETRY_AFTER_S;
use super::routes::route;
use super::tools::{CommerceTool, CommerceTools};
use crate::catalog::Catalog;
use crate::checkout;
use crate::config::Config;
use crate::idempotency::{self, Begin, StoredReply};
use crate::meta::{ACP_SESSIONS, PRODUCTS_PATH, UCP_SESSIONS};
use crate::reply::Reply;
use crate::request::Request;
use crate::stripe::{self, HttpAnswer, HttpCall, TransportError};
use crate::testing::block_on;
use crate::tool::ToolOutcome;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::HashMap;

/// A scripted Stripe and an in-memory idempotency store.
pub(crate) struct Fake {
    pub calls: RefCell<Vec<HttpCall>>,
    pub fail: RefCell<Option<TransportError>>,
    pub records: RefCell<HashMap<String, idempotency::Record>>,
    pub cache: RefCell<Option<Catalog>>,
    pub logs: RefCell<Vec<String>>,
    pub now: u64,
}

impl Fake {
    pub(crate) fn new() -> Self {
        Self {
            calls: RefCell::default(),
            fail: RefCell::default(),
            records: RefCell::default(),
            cache: RefCell::default(),
            logs: RefCell::default(),
            now: 1_763_805_600_000,
        }
    }
}

const PRICES: &str = r#"{"object":"list","has_more":false,"data":[
  {"id":"price_pro","active":true,"currency":"usd","unit_amount":900,"lookup_key":"pro_monthly",
   "product":{"id":"prod_p","active":true,"name":"Pro","metadata":{"presence_offer":"plan"}},
   "metadata":{},"recurring":{"interval":"month","interval_count":1,"trial_period_days":14}},
  {"id":"price_hub","active":true,"currency":"usd","unit_amount":12900,
   "product":{"id":"prod_h","active":true,"name":"Hub","metadata":{"presence_offer":"hardware","availability":"out_of_stock"}},"metadata":{}}]}"#;

fn session_from_form(body: &str, status: &str) -> Value {
    let mut meta = serde_json::Map::new();
    for (k, v) in form_urlencoded::parse(body.as_bytes()) {
        if let Some(k) = k
            .strip_prefix("metadata[")
            .and_then(|k| k.strip_suffix(']'))
        {
            meta.insert(k.to_string(), json!(v));
        }
    }
    json!({"id": "cs_test_1", "url": "https://checkout.stripe.com/c/pay/cs_test_1",
           "status": status, "expires_at": 1_763_892_000, "metadata": meta})
}

impl Backend for Fake {
    fn now_ms(&self) -> u64 {
        self.now
    }
    async fn send(&self, call: HttpCall) -> Result<HttpAnswer, TransportError> {
        self.calls.borrow_mut().push(call.clone());
        if let Some(e) = self.fail.borrow().clone() {
            return Err(e);
        }
        let ok = |v: Value| {
            Ok(HttpAnswer {
                status: 200,
                body: v.to_string().into_bytes(),
            })
        };
        if call.url.contains("/v1/prices") {
            return Ok(HttpAnswer {
                status: 200,
                body: PRICES.as_bytes().to_vec(),
            });
        }
        // The created session's form is the first POST; later reads return it.
        let created = self
            .calls
            .borrow()
            .iter()
            .find(|c| c.method == "POST")
            .cloned();
        match (call.method, created) {
            ("POST", Some(first)) if call.url.ends_with("/expire") => {
                ok(session_from_form(first.body.as_deref().unwrap_or(""), "expired"))
            }
            (_, Some(first)) if call.url.contains("cs_test_1") || call.method == "POST" => {
                ok(session_from_form(first.body.as_deref().unwrap_or(""), "open"))
            }
            _ => Ok(HttpAnswer {
                status: 404,
                body: br#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such checkout.session"}}"#.to_vec(),
            }),
        }
    }
    async fn idem_begin(&self, key: &str, fp: &str) -> Result<Begin, String> {
        let mut recs = self.records.borrow_mut();
        let (b, rec) = idempotency::begin(recs.get(key), fp, self.now);
        if let Some(r) = rec {
            recs.insert(key.to_string(), r);
        }
        Ok(b)
    }
    async fn idem_finish(&self, key: &str, fp: &str, reply: Option<StoredReply>) {
        let mut recs = self.records.borrow_mut();
        match reply.and_then(|r| idempotency::finish(recs.get(key), fp, r)) {
            Some(r) => {
                recs.insert(key.to_string(), r);
            }
            None => {
                recs.remove(key);
            }
        }
    }
    fn cached_catalog(&self) -> Option<Catalog> {
        self.cache.borrow().clone()
    }
    fn store_catalog(&self, c: &Catalog) {
        *self.cache.borrow_mut() = Some(c.clone());
    }
    fn log(&self, line: &str) {
        self.logs.borrow_mut().push(line.to_string());
    }
}

pub(crate) fn cfg() -> Config {
    Config::from_vars(None, None, None, None).with_commerce(
        Some("http://stripe.test".into()),
        Some("sk_test_1".into()),
        None,
        None,
    )
}

fn call(fake: &Fake, req: Request) -> (Reply, Value) {
    let r = block_on(route(&req, &cfg(), "https://s.test", fake)).expect("commerce route");
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r, v)
}

fn acp_post(path: &str, body: &str, key: &str) -> Request {
    Request::new("POST", path)
        .with_header("api-version", "2026-01-30")
        .with_header("idempotency-key", key)
        .with_body(body.as_bytes().to_vec())
}

#[test]
fn products_come_from_stripe_and_are_cached() {
    let fake = Fake::new();
    let (r, v) = call(&fake, Request::new("GET", PRODUCTS_PATH));
    assert_eq!(r.status, 200);
    assert_eq!(v["offers"][0]["id"], "pro_monthly");
    assert_eq!(v["offers"][1]["available"], false);
    call(&fake, Request::new("GET", PRODUCTS_PATH));
    assert_eq!(
        fake.calls.borrow().len(),
        1,
        "second read served from the cache"
    );
}

#[test]
fn stripe_down_is_a_503_with_retry_after() {
    let fake = Fake::new();
    *fake.fail.borrow_mut() = Some(TransportError::Timeout(stripe::TIMEOUT_MS));
    let (r, v) = call(&fake, Request::new("GET", PRODUCTS_PATH));
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some(RETRY_AFTER_S));
    assert_eq!(v["code"], "service_unavailable");
    let logs = fake.logs.borrow();
    assert_eq!(logs.len(), 1);
    assert!(
        logs[0].starts_with("commerce GET products -> 503"),
        "{logs:?}"
    );
    assert!(!logs[0].contains("sk_test_1"));
}

#[test]
fn acp_create_is_idempotent_and_forwards_the_key() {
    let fake = Fake::new();
    let body = r#"{"items":[{"id":"pro_monthly","quantity":1}]}"#;
    let (r, v) = call(&fake, acp_post(ACP_SESSIONS, body, "k1"));
    assert_eq!(r.status, 201, "{v}");
    assert_eq!(v["status"], "requires_escalation");
    assert_eq!(
        v["continue_url"],
        "https://checkout.stripe.com/c/pay/cs_test_1"
    );
    assert_eq!(r.header("idempotency-key"), Some("k1"));
    let post = fake
        .calls
        .borrow()
        .iter()
        .find(|c| c.method == "POST")
        .cloned()
        .unwrap();
    assert_eq!(post.header("idempotency-key"), Some("k1"));
    assert!(
        post.body
            .unwrap()
            .contains("subscription_data[trial_period_days]=14")
    );
    let n = fake.calls.borrow().len();
    let (again, v2) = call(&fake, acp_post(ACP_SESSIONS, body, "k1"));
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(v2, v);
    assert_eq!(
        fake.calls.borrow().len(),
        n,
        "a replay does not reach Stripe"
    );
    let (conflict, cv) = call(
        &fake,
        acp_post(ACP_SESSIONS, r#"{"items":[{"id":"x"}]}"#, "k1"),
    );
    assert_eq!(conflict.status, 422);
    assert_eq!(cv["code"], "idempotency_conflict");
}

#[test]
fn acp_requires_version_and_key() {
    let fake = Fake::new();
    let (r, v) = call(
        &fake,
        Request::new("POST", ACP_SESSIONS).with_header("idempotency-key", "k"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(v["code"], "missing_api_version");
    assert_eq!(v["supported_versions"][0], "2026-04-17");
    let (r, v) = call(
        &fake,
        Request::new("POST", ACP_SESSIONS).with_header("api-version", "2026-01-30"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(v["code"], "idempotency_key_required");
    assert!(fake.calls.borrow().is_empty());
}

#[test]
fn bad_requests_get_clear_problems() {
    let fake = Fake::new();
    let ucp = |body: &str| Request::new("POST", UCP_SESSIONS).with_body(body.as_bytes().to_vec());
    let (r, v) = call(&fake, ucp(r#"{"line_items":[{"item":{"id":"nope"}}]}"#));
    assert_eq!((r.status, v["code"].as_str()), (422, Some("unknown_offer")));
    let (r, v) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"price_hub"}}]}"#),
    );
    assert_eq!((r.status, v["code"].as_str()), (409, Some("out_of_stock")));
    let (r, v) = call(&fake, ucp("{not json"));
    assert_eq!((r.status, v["code"].as_str()), (400, Some("invalid_body")));
    let (r, v) = call(
        &fake,
        ucp(
            r#"{"line_items":[{"item":{"id":"pro_monthly"}}],"payment":{"instruments":[{"id":"tok"}]}}"#,
        ),
    );
    assert_eq!(
        (r.status, v["code"].as_str()),
        (400, Some("payment_not_accepted"))
    );
    assert!(v["detail"].as_str().unwrap().contains("continue_url"));
    let (r, v) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"},"quantity":2}]}"#),
    );
    assert_eq!((r.status, v["code"].as_str()), (400, Some("invalid")));
    let (r, _) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#).with_header("X-PAYMENT", "abc"),
    );
    assert_eq!(r.status, 400);
    assert!(
        !fake.calls.borrow().iter().any(|c| c.method == "POST"),
        "nothing reached checkout"
    );
}

#[test]
fn ucp_flow_create_get_complete_cancel() {
    let fake = Fake::new();
    let (r, v) = call(
        &fake,
        Request::new("POST", UCP_SESSIONS)
            .with_body(br#"{"line_items":[{"item":{"id":"pro_monthly"},"quantity":1}]}"#.to_vec()),
    );
    assert_eq!(r.status, 201, "{v}");
    assert_eq!(v["status"], "requires_escalation");
    let path = format!("{UCP_SESSIONS}/cs_test_1");
    let (_, got) = call(&fake, Request::new("GET", &path));
    assert_eq!(got, v);
    let (r, done) = call(&fake, Request::new("POST", &format!("{path}/complete")));
    assert_eq!(r.status, 200);
    assert_eq!(done["continue_url"], v["continue_url"]);
    let (r, _) = call(
        &fake,
        Request::new("PUT", &path)
            .with_body(br#"{"line_items":[{"item":{"id":"other"}}]}"#.to_vec()),
    );
    assert_eq!(r.status, 409);
    let (r, c) = call(&fake, Request::new("POST", &format!("{path}/cancel")));
    assert_eq!(r.status, 200);
    assert_eq!(c["status"], "canceled");
    let (r, _) = call(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/cs_other")),
    );
    assert_eq!(r.status, 404);
    let (r, _) = call(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/..%2Fv1")),
    );
    assert_eq!(r.status, 404);
}

#[test]
fn tool_schemas_parse_and_match_the_limits() {
    let specs: Vec<_> = CommerceTool::specs().into_iter().map(|(_, s)| s).collect();
    assert_eq!(specs.len(), 3);
    for s in &specs {
        assert_eq!(s.input_schema["type"], "object", "{}", s.name);
        assert_eq!(s.output_schema["type"], "object", "{}", s.name);
        assert!(
            s.output_schema.get("required").is_some(),
            "{} parsed",
            s.name
        );
    }
    assert_eq!(
        specs[1].input_schema["properties"]["quantity"]["maximum"],
        checkout::MAX_QUANTITY
    );
}

#[test]
fn mcp_tools_return_only_the_link_and_id() {
    let fake = Fake::new();
    let c = cfg();
    let tools = CommerceTools {
        cfg: &c,
        base: "https://s.test",
        backend: &fake,
    };
    let out = block_on(tools.run(
        CommerceTool::CreateCheckout,
        &json!({"offer_id": "pro_monthly"}),
    ));
    match out {
        ToolOutcome::Ok(v) => {
            assert_eq!(
                v,
                json!({"id": "cs_test_1", "continue_url": "https://checkout.stripe.com/c/pay/cs_test_1"})
            );
        }
        other => panic!("{other:?}"),
    }
    let got = block_on(tools.run(CommerceTool::GetCheckout, &json!({"id": "cs_test_1"})));
    assert!(matches!(got, ToolOutcome::Ok(v) if v["status"] == "requires_escalation"));
    let bad = block_on(tools.run(CommerceTool::CreateCheckout, &json!({"offer_id": "nope"})));
    assert!(matches!(bad, ToolOutcome::Error(m) if m.contains("list_products")));
    let pay = block_on(tools.run(
        CommerceTool::CreateCheckout,
        &json!({"offer_id": "pro_monthly", "payment_data": {"token": "t"}}),
    ));
    assert!(matches!(pay, ToolOutcome::Error(m) if m.contains("continue_url")));
}
