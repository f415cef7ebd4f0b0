//! The commerce endpoints and tools against a scripted Stripe ([`Fake`]).

use super::backend::Backend;
use super::failure::RETRY_AFTER_S;
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
    /// The answer to the next POST or non-Stripe GET (a platform profile), once.
    pub answer: RefCell<Option<HttpAnswer>>,
    /// The idempotency store's next answer, once.
    pub store: RefCell<Option<Result<Begin, String>>>,
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
            answer: RefCell::default(),
            store: RefCell::default(),
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
        if (call.method == "POST" || !call.url.starts_with("http://stripe.test"))
            && let Some(a) = self.answer.borrow_mut().take()
        {
            return Ok(a);
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
        if let Some(b) = self.store.borrow_mut().take() {
            return b;
        }
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

/// A UCP business outcome: HTTP 200, `ucp.status: "error"`, and the first message's code and
/// severity.
fn ucp_outcome(r: &Reply, v: &Value) -> (String, String) {
    assert_eq!(r.status, 200, "{v}");
    assert_eq!(v["ucp"]["status"], "error", "{v}");
    let m = &v["messages"][0];
    assert_eq!(m["type"], "error");
    assert!(m["content"].as_str().is_some_and(|c| !c.is_empty()));
    (
        m["code"].as_str().unwrap_or("").to_string(),
        m["severity"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn bad_requests_answer_in_the_protocols_shapes() {
    let fake = Fake::new();
    let ucp = |body: &str| Request::new("POST", UCP_SESSIONS).with_body(body.as_bytes().to_vec());
    let (r, v) = call(&fake, ucp(r#"{"line_items":[{"item":{"id":"nope"}}]}"#));
    assert_eq!(
        ucp_outcome(&r, &v),
        ("unknown_offer".into(), "recoverable".into())
    );
    assert_eq!(v["messages"][0]["path"], "$.line_items[0].id");
    let (r, v) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"price_hub"}}]}"#),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "out_of_stock");
    // A body that is not JSON cannot be served: a protocol error, `{code, content}`.
    let (r, v) = call(&fake, ucp("{not json"));
    assert_eq!(r.status, 400);
    assert_eq!(v["code"], "invalid_body");
    assert!(v["content"].is_string() && v.get("ucp").is_none());
    let (r, v) = call(
        &fake,
        ucp(
            r#"{"line_items":[{"item":{"id":"pro_monthly"}}],"payment":{"instruments":[{"id":"tok"}]}}"#,
        ),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "payment_not_accepted");
    assert_eq!(v["messages"][0]["path"], "$.payment");
    assert!(
        v["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("continue_url")
    );
    let (r, v) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"},"quantity":2}]}"#),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "invalid");
    let (r, v) = call(
        &fake,
        ucp(r#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#).with_header("X-PAYMENT", "abc"),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "payment_not_accepted");
    // The same failures in ACP's flat Error object.
    let acp = |body: &str| {
        Request::new("POST", ACP_SESSIONS)
            .with_header("api-version", "2026-04-17")
            .with_header("idempotency-key", body)
            .with_body(body.as_bytes().to_vec())
    };
    let (r, v) = call(&fake, acp(r#"{"line_items":[{"id":"nope"}]}"#));
    assert_eq!(r.status, 422);
    assert_eq!(v["type"], "invalid_request");
    assert_eq!(v["code"], "unknown_offer");
    assert_eq!(v["param"], "$.line_items[0].id");
    assert!(v["message"].is_string() && v.get("detail").is_none());
    let (r, v) = call(
        &fake,
        acp(r#"{"line_items":[{"id":"pro_monthly"}],"payment_data":{"token":"t"}}"#),
    );
    assert_eq!(
        (r.status, v["code"].as_str()),
        (400, Some("payment_not_accepted"))
    );
    assert_eq!(v["param"], "$.payment_data");
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
    let (r, v) = call(
        &fake,
        Request::new("PUT", &path)
            .with_body(br#"{"line_items":[{"item":{"id":"other"}}]}"#.to_vec()),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "line_items_fixed");
    let (r, c) = call(&fake, Request::new("POST", &format!("{path}/cancel")));
    assert_eq!(r.status, 200);
    assert_eq!(c["status"], "canceled");
    // An unknown checkout is UCP's error response: the ucp object and a not_found message.
    let (r, v) = call(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/cs_other")),
    );
    assert_eq!(
        ucp_outcome(&r, &v),
        ("not_found".into(), "unrecoverable".into())
    );
    assert_eq!(v["ucp"]["version"], crate::meta::UCP_VERSION);
    let (r, v) = call(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/..%2Fv1")),
    );
    assert_eq!(ucp_outcome(&r, &v).0, "not_found");
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

/// The failure-table rows no e2e run can trigger on demand: a key still in flight, Stripe
/// refusing a request, the idempotency store down. Each in both protocols' shapes.
#[test]
fn in_flight_refused_and_store_down_answer_in_both_shapes() {
    let ucp = |key: &str| {
        Request::new("POST", UCP_SESSIONS)
            .with_header("idempotency-key", key)
            .with_body(br#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#.to_vec())
    };
    let acp = |key: &str| {
        acp_post(
            ACP_SESSIONS,
            r#"{"line_items":[{"id":"pro_monthly"}]}"#,
            key,
        )
    };
    for (req, ucp_binding) in [(ucp("k1"), true), (acp("k2"), false)] {
        let fake = Fake::new();
        *fake.store.borrow_mut() = Some(Ok(Begin::InFlight));
        let (r, v) = call(&fake, req.clone());
        assert_eq!(
            (r.status, v["code"].as_str()),
            (409, Some("idempotency_in_flight"))
        );
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(
            v.get("type").is_some(),
            !ucp_binding,
            "ACP Error or UCP {{code, content}}"
        );

        let fake = Fake::new();
        *fake.store.borrow_mut() = Some(Err("storage down".into()));
        let (r, v) = call(&fake, req.clone());
        assert_eq!(
            (r.status, v["code"].as_str()),
            (503, Some("service_unavailable"))
        );
        assert_eq!(r.header("retry-after"), Some(RETRY_AFTER_S));

        let fake = Fake::new();
        *fake.answer.borrow_mut() = Some(HttpAnswer {
            status: 400,
            body: br#"{"error":{"type":"invalid_request_error","code":"parameter_invalid_integer","message":"Invalid integer"}}"#.to_vec(),
        });
        let (r, v) = call(&fake, req);
        assert_eq!(
            (r.status, v["code"].as_str()),
            (502, Some("processing_error")),
            "{v}"
        );
        if !ucp_binding {
            assert_eq!(v["type"], "processing_error");
        } else {
            assert!(v["content"].is_string());
        }
    }
}

/// UCP request-time version validation: the profile named in `UCP-Agent` is fetched and its
/// version checked before anything reaches Stripe.
#[test]
fn ucp_agent_profiles_are_fetched_and_their_version_checked() {
    let create = |agent: Option<&str>| {
        let r = Request::new("POST", UCP_SESSIONS)
            .with_body(br#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#.to_vec());
        match agent {
            Some(a) => r.with_header("ucp-agent", a),
            None => r,
        }
    };
    let agent = Some(r#"profile="https://agent.example/ucp.json""#);
    let answer = |status: u16, body: &str| HttpAnswer {
        status,
        body: body.as_bytes().to_vec(),
    };
    for (reply, status, code) in [
        (
            answer(200, r#"{"ucp":{"version":"2026-01-11"}}"#),
            422,
            "version_unsupported",
        ),
        (
            answer(200, r#"{"ucp":{"version":"2026-07-01"}}"#),
            422,
            "version_unsupported",
        ),
        (answer(200, "<html>"), 422, "profile_malformed"),
        (answer(503, "{}"), 424, "profile_unreachable"),
    ] {
        let fake = Fake::new();
        *fake.answer.borrow_mut() = Some(reply);
        let (r, v) = call(&fake, create(agent));
        assert_eq!((r.status, v["code"].as_str()), (status, Some(code)), "{v}");
        assert_eq!(v["continue_url"], "https://s.test/pricing");
        let calls = fake.calls.borrow();
        assert_eq!(calls[0].url, "https://agent.example/ucp.json");
        assert!(
            !calls.iter().any(|c| c.method == "POST"),
            "nothing reached Stripe"
        );
    }
    let fake = Fake::new();
    let (r, v) = call(&fake, create(Some(r#"profile="https://10.0.0.1/p""#)));
    assert_eq!(
        (r.status, v["code"].as_str()),
        (400, Some("invalid_profile_url"))
    );
    assert!(
        fake.calls.borrow().is_empty(),
        "a private address is never fetched"
    );

    // Both versions we implement are served, each in its own version.
    for version in ["2026-04-08", "2026-01-23"] {
        let fake = Fake::new();
        *fake.answer.borrow_mut() = Some(answer(
            200,
            &format!(r#"{{"ucp":{{"version":"{version}"}}}}"#),
        ));
        let (r, v) = call(&fake, create(agent));
        assert_eq!(r.status, 201, "{v}");
        assert_eq!(v["ucp"]["version"], version);
        assert_eq!(
            v["ucp"]["capabilities"]["dev.ucp.shopping.checkout"][0]["version"],
            version
        );
    }
    let fake = Fake::new();
    assert_eq!(
        call(&fake, create(None)).0.status,
        201,
        "UCP-Agent is optional"
    );
}

/// A platform that declares UCP 2026-01-23 gets that version's shapes: the checkout with its
/// version, and every failure as its HTTP status with `{ucp, status: "requires_escalation",
/// messages}` (2026-01-23 has no error response and no `unrecoverable` severity). A request
/// that declares nothing is answered as 2026-04-08.
#[test]
fn ucp_2026_01_23_answers_in_its_own_shapes() {
    const OLD: &str = "2026-01-23";
    let agent = r#"profile="https://agent.example/ucp.json""#;
    let profile = || HttpAnswer {
        status: 200,
        body: br#"{"ucp":{"version":"2026-01-23"}}"#.to_vec(),
    };
    // Each request fetches the profile first (no cache), so script it before each call.
    let old = |fake: &Fake, req: Request| {
        *fake.answer.borrow_mut() = Some(profile());
        call(fake, req.with_header("ucp-agent", agent))
    };
    let legacy = |r: &Reply, v: &Value, status: u16, code: &str, severity: &str| {
        assert_eq!(
            (r.status, v["status"].as_str()),
            (status, Some("requires_escalation")),
            "{v}"
        );
        assert_eq!(v["ucp"]["version"], OLD, "{v}");
        assert!(
            v["ucp"].get("status").is_none(),
            "no ucp.status before 2026-04-08: {v}"
        );
        let m = &v["messages"][0];
        assert_eq!(
            (m["type"].as_str(), m["code"].as_str()),
            (Some("error"), Some(code))
        );
        assert_eq!(m["severity"], severity, "{v}");
        assert!(m["content"].as_str().is_some_and(|c| !c.is_empty()));
    };
    let fake = Fake::new();
    let (r, v) = old(
        &fake,
        Request::new("POST", UCP_SESSIONS)
            .with_body(br#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#.to_vec()),
    );
    assert_eq!(
        (r.status, v["status"].as_str()),
        (201, Some("requires_escalation")),
        "{v}"
    );
    assert_eq!(v["ucp"]["version"], OLD);
    assert_eq!(v["messages"][0]["severity"], "requires_buyer_input");
    assert_eq!(
        v["continue_url"],
        "https://checkout.stripe.com/c/pay/cs_test_1"
    );
    let path = format!("{UCP_SESSIONS}/cs_test_1");
    let (r, got) = old(&fake, Request::new("GET", &path));
    assert_eq!((r.status, &got), (200, &v));
    // Business outcomes of 2026-04-08 are HTTP errors here.
    let (r, e) = old(
        &fake,
        Request::new("PUT", &path).with_body(br#"{"line_items":[{"item":{"id":"x"}}]}"#.to_vec()),
    );
    legacy(&r, &e, 409, "line_items_fixed", "recoverable");
    assert_eq!(e["messages"][0]["path"], "$.line_items");
    let (r, c) = old(&fake, Request::new("POST", &format!("{path}/cancel")));
    assert_eq!((r.status, c["status"].as_str()), (200, Some("canceled")));
    // (Cancelling a final session, 405 with `Allow: GET`, needs a Stripe that keeps state:
    // the e2e failure table runs it.)
    let (r, e) = old(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/cs_other")),
    );
    legacy(&r, &e, 404, "not_found", "recoverable");
    let (r, e) = old(
        &fake,
        Request::new("POST", UCP_SESSIONS)
            .with_body(br#"{"line_items":[{"item":{"id":"nope"}}]}"#.to_vec()),
    );
    legacy(&r, &e, 422, "unknown_offer", "recoverable");
    // Protocol errors too, and an unknown endpoint (negotiated before routing).
    let (r, e) = old(
        &fake,
        Request::new("POST", UCP_SESSIONS).with_body(b"{".to_vec()),
    );
    legacy(&r, &e, 400, "invalid_body", "recoverable");
    assert!(e.get("code").is_none());
    let (r, e) = old(&fake, Request::new("POST", &format!("{path}/pay")));
    legacy(&r, &e, 404, "not_found", "recoverable");
    // The same unknown session without a profile: 2026-04-08's error response.
    let (r, v) = call(
        &fake,
        Request::new("GET", &format!("{UCP_SESSIONS}/cs_other")),
    );
    assert_eq!(
        ucp_outcome(&r, &v),
        ("not_found".into(), "unrecoverable".into())
    );
    assert_eq!(v["ucp"]["version"], "2026-04-08");
}

/// A stored answer is replayed only to a request in the same protocol version: the same key
/// and body under another version is a conflict, never the other version's shape.
#[test]
fn idempotency_keys_do_not_cross_versions() {
    let fake = Fake::new();
    let body = br#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#;
    let req = || {
        Request::new("POST", UCP_SESSIONS)
            .with_header("idempotency-key", "k-versions")
            .with_body(body.to_vec())
    };
    assert_eq!(call(&fake, req()).0.status, 201);
    let (r, _) = call(&fake, req());
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    *fake.answer.borrow_mut() = Some(HttpAnswer {
        status: 200,
        body: br#"{"ucp":{"version":"2026-01-23"}}"#.to_vec(),
    });
    let (r, v) = call(
        &fake,
        req().with_header("ucp-agent", r#"profile="https://agent.example/p""#),
    );
    assert_eq!(
        (r.status, v["status"].as_str()),
        (409, Some("requires_escalation")),
        "{v}"
    );
    assert_eq!(v["messages"][0]["code"], "idempotency_conflict");
}

/// The failure-table rows of UCP 2026-01-23 that no e2e run can trigger on demand: a key still
/// in flight and the idempotency store down, as that version's HTTP errors.
#[test]
fn ucp_2026_01_23_in_flight_and_store_down() {
    for (store, status, code) in [
        (Ok(Begin::InFlight), 409, "idempotency_in_flight"),
        (Err("storage down".to_string()), 503, "service_unavailable"),
    ] {
        let fake = Fake::new();
        *fake.answer.borrow_mut() = Some(HttpAnswer {
            status: 200,
            body: br#"{"ucp":{"version":"2026-01-23"}}"#.to_vec(),
        });
        *fake.store.borrow_mut() = Some(store);
        let req = Request::new("POST", UCP_SESSIONS)
            .with_header("ucp-agent", r#"profile="https://agent.example/p""#)
            .with_header("idempotency-key", "k")
            .with_body(br#"{"line_items":[{"item":{"id":"pro_monthly"}}]}"#.to_vec());
        let (r, v) = call(&fake, req);
        assert_eq!(
            (r.status, v["status"].as_str()),
            (status, Some("requires_escalation")),
            "{v}"
        );
        assert_eq!(v["ucp"]["version"], "2026-01-23");
        assert_eq!(v["messages"][0]["code"], code);
        assert!(r.header("retry-after").is_some());
    }
}
