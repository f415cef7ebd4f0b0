//! A small Stripe client: request building (form encoding with Stripe's bracketed keys, the
//! pinned `Stripe-Version`, `Idempotency-Key` pass-through), response decoding into the few
//! fields we use, and typed errors from Stripe's error shape.
//!
//! No I/O happens here: a call is described as an [`HttpCall`], sent by whoever owns a network
//! (the Worker glue through `worker::Fetch`, a test double on the host), and the
//! [`HttpAnswer`] is decoded by [`decode`]. The secret key lives only in the `Authorization`
//! header of an `HttpCall`, whose `Debug` hides it.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;

/// Default API origin; tests point `STRIPE_API_BASE` at a local fake.
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The API version every request pins, so an account upgrade cannot change the shapes we read.
/// It matches the Stripe OpenAPI document the test fake is validated against.
pub const API_VERSION: &str = "2025-09-30.clover";
/// Time budget of one Stripe request (the glue enforces it).
pub const TIMEOUT_MS: u64 = 8_000;
/// Stripe's limit on `Idempotency-Key`.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// One outgoing HTTP request.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpCall {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `application/x-www-form-urlencoded` body of a POST.
    pub body: Option<String>,
}

impl std::fmt::Debug for HttpCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| {
                let shown = if n.eq_ignore_ascii_case("authorization") {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (n.as_str(), shown)
            })
            .collect();
        f.debug_struct("HttpCall")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

impl HttpCall {
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::reply::first_header(&self.headers, name)
    }
}

/// Status and body of the answer to an [`HttpCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why an [`HttpCall`] got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("no answer within {0} ms")]
    Timeout(u64),
    #[error("network error: {0}")]
    Network(String),
}

/// Everything that can go wrong talking to Stripe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StripeError {
    #[error("the shop is not configured (no STRIPE_SECRET_KEY)")]
    NotConfigured,
    #[error("Stripe did not answer within {0} ms")]
    Timeout(u64),
    #[error("could not reach Stripe: {0}")]
    Network(String),
    /// Stripe's own error object (`{"error": {"type", "code", "message", "param"}}`).
    #[error("Stripe answered {status} ({kind}{}): {message}", code.as_deref().map(|c| format!("/{c}")).unwrap_or_default())]
    Api {
        status: u16,
        kind: String,
        code: Option<String>,
        message: String,
        param: Option<String>,
    },
    #[error("unexpected answer from Stripe: {0}")]
    Decode(String),
}

impl StripeError {
    /// True when the failure is Stripe's, the network's or our set-up's (a rejected key), not
    /// the request's: the caller should answer 503 and retry later.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::NotConfigured | Self::Timeout(_) | Self::Network(_) | Self::Decode(_) => true,
            Self::Api { status, kind, .. } => {
                *status >= 500 || matches!(status, 401 | 403 | 429) || kind == "api_error"
            }
        }
    }

    /// True when Stripe refused our key: a set-up fault whose message must not reach clients
    /// (Stripe quotes a masked key in it).
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            Self::Api {
                status: 401 | 403,
                ..
            }
        )
    }

    /// True for Stripe's 404 `resource_missing`.
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Api { status: 404, .. })
            || matches!(self, Self::Api { code: Some(c), .. } if c == "resource_missing")
    }
}

impl From<TransportError> for StripeError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Timeout(ms) => Self::Timeout(ms),
            TransportError::Network(m) => Self::Network(m),
        }
    }
}

/// Form parameters in order, with Stripe's bracketed names (`line_items[0][price]`,
/// `expand[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form(pub Vec<(String, String)>);

impl Form {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.push((name.into(), value.into()));
        self
    }

    /// `application/x-www-form-urlencoded`, as Stripe's own libraries send it: names and values
    /// percent-encoded, except that the brackets of names stay readable (Stripe decodes both).
    pub fn encode(&self) -> String {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.0 {
            out.append_pair(k, v);
        }
        out.finish().replace("%5B", "[").replace("%5D", "]")
    }
}

/// A Stripe account's API: where it is and the key that opens it.
#[derive(Clone, PartialEq, Eq)]
pub struct Stripe {
    base: String,
    key: String,
}

impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe")
            .field("base", &self.base)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl Stripe {
    pub fn new(base: &str, key: &str) -> Self {
        let base = base.trim().trim_end_matches('/');
        Self {
            base: if base.is_empty() {
                DEFAULT_API_BASE.to_string()
            } else {
                base.to_string()
            },
            key: key.to_string(),
        }
    }

    fn call(
        &self,
        method: &'static str,
        path: &str,
        form: &Form,
        idempotency_key: Option<&str>,
    ) -> HttpCall {
        let mut headers = vec![
            ("authorization".to_string(), format!("Bearer {}", self.key)),
            ("stripe-version".to_string(), API_VERSION.to_string()),
            ("accept".to_string(), "application/json".to_string()),
        ];
        let (url, body) = if method == "GET" {
            let q = form.encode();
            let sep = if q.is_empty() { "" } else { "?" };
            (format!("{}{path}{sep}{q}", self.base), None)
        } else {
            headers.push((
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ));
            (format!("{}{path}", self.base), Some(form.encode()))
        };
        if let Some(k) = idempotency_key {
            headers.push(("idempotency-key".to_string(), k.to_string()));
        }
        HttpCall {
            method,
            url,
            headers,
            body,
        }
    }

    /// One page of active prices with their products expanded.
    pub fn list_prices(&self, starting_after: Option<&str>) -> HttpCall {
        let mut form = Form::new();
        form.push("active", "true")
            .push("expand[]", "data.product")
            .push("limit", "100");
        if let Some(after) = starting_after {
            form.push("starting_after", after);
        }
        self.call("GET", "/v1/prices", &form, None)
    }

    pub fn create_checkout_session(&self, form: &Form, idempotency_key: Option<&str>) -> HttpCall {
        self.call("POST", "/v1/checkout/sessions", form, idempotency_key)
    }

    /// `id` must already be validated with [`valid_session_id`] (it becomes part of the path).
    pub fn get_checkout_session(&self, id: &str) -> HttpCall {
        self.call(
            "GET",
            &format!("/v1/checkout/sessions/{id}"),
            &Form::new(),
            None,
        )
    }

    pub fn expire_checkout_session(&self, id: &str, idempotency_key: Option<&str>) -> HttpCall {
        self.call(
            "POST",
            &format!("/v1/checkout/sessions/{id}/expire"),
            &Form::new(),
            idempotency_key,
        )
    }
}

/// True for something shaped like a Checkout Session id (`cs_test_…`, `cs_live_…`), so a
/// caller's string never reaches a Stripe URL unchecked.
pub fn valid_session_id(id: &str) -> bool {
    id.starts_with("cs_")
        && id.len() <= 255
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorObject,
}

#[derive(Debug, Deserialize)]
struct ErrorObject {
    #[serde(rename = "type")]
    kind: Option<String>,
    code: Option<String>,
    message: Option<String>,
    param: Option<String>,
}

/// Decodes Stripe's answer: the object on 2xx, a typed error otherwise.
pub fn decode<T: DeserializeOwned>(
    answer: Result<HttpAnswer, TransportError>,
) -> Result<T, StripeError> {
    let answer = answer?;
    if (200..300).contains(&answer.status) {
        return serde_json::from_slice(&answer.body)
            .map_err(|e| StripeError::Decode(e.to_string()));
    }
    match serde_json::from_slice::<ErrorBody>(&answer.body) {
        Ok(ErrorBody { error }) => Err(StripeError::Api {
            status: answer.status,
            kind: error.kind.unwrap_or_else(|| "api_error".into()),
            code: error.code,
            message: error
                .message
                .unwrap_or_else(|| format!("HTTP {}", answer.status)),
            param: error.param,
        }),
        Err(_) => Err(StripeError::Api {
            status: answer.status,
            kind: "api_error".into(),
            code: None,
            message: format!("HTTP {} without a Stripe error body", answer.status),
            param: None,
        }),
    }
}

/// A list page (`{"object":"list","data":[…],"has_more":…}`).
#[derive(Debug, Clone, Deserialize)]
pub struct List<T> {
    pub data: Vec<T>,
    #[serde(default)]
    pub has_more: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Recurring {
    pub interval: String,
    #[serde(default)]
    pub interval_count: Option<u32>,
    #[serde(default)]
    pub trial_period_days: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Product {
    pub id: String,
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// `price.product`: an id, or the object when expanded (a deleted product has no `name`).
#[derive(Debug, Clone)]
pub enum ProductRef {
    Expanded(Product),
    Id(String),
    Other(Value),
}

// By hand rather than `#[serde(untagged)]`, which would link serde's buffering deserializer
// into the Worker.
impl<'de> Deserialize<'de> for ProductRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(id) => Self::Id(id),
            v @ Value::Object(_) => match serde_json::from_value::<Product>(v.clone()) {
                Ok(p) => Self::Expanded(p),
                Err(_) => Self::Other(v),
            },
            other => Self::Other(other),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Price {
    pub id: String,
    #[serde(default)]
    pub active: bool,
    pub currency: String,
    #[serde(default)]
    pub unit_amount: Option<i64>,
    #[serde(default)]
    pub lookup_key: Option<String>,
    pub product: ProductRef,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub recurring: Option<Recurring>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckoutSession {
    pub id: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub payment_status: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    pub expires_at: i64,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Id or expanded object.
    #[serde(default)]
    pub subscription: Option<Value>,
    #[serde(default)]
    pub payment_intent: Option<Value>,
}

impl CheckoutSession {
    /// The id of what the session produced (subscription, or payment for one-off goods).
    pub fn order_id(&self) -> Option<String> {
        let id_of = |v: &Option<Value>| match v {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        id_of(&self.subscription).or_else(|| id_of(&self.payment_intent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_keeps_brackets_and_encodes_the_rest() {
        let mut f = Form::new();
        f.push("expand[]", "data.product")
            .push("line_items[0][price]", "price_1")
            .push(
                "success_url",
                "https://x.test/p?a=1&b={CHECKOUT_SESSION_ID}",
            )
            .push("metadata[offer name]", "Pro plan: 9€");
        assert_eq!(
            f.encode(),
            "expand[]=data.product&line_items[0][price]=price_1\
             &success_url=https%3A%2F%2Fx.test%2Fp%3Fa%3D1%26b%3D%7BCHECKOUT_SESSION_ID%7D\
             &metadata[offer+name]=Pro+plan%3A+9%E2%82%AC"
        );
    }

    #[test]
    fn calls_pin_the_version_and_pass_the_idempotency_key() {
        let s = Stripe::new("http://127.0.0.1:9/", "sk_test_secret");
        let get = s.list_prices(Some("price_9"));
        assert_eq!(get.method, "GET");
        assert_eq!(
            get.url,
            "http://127.0.0.1:9/v1/prices?active=true&expand[]=data.product&limit=100&starting_after=price_9"
        );
        assert_eq!(get.header("stripe-version"), Some(API_VERSION));
        assert_eq!(get.header("idempotency-key"), None);
        assert!(get.body.is_none());
        let mut f = Form::new();
        f.push("mode", "payment");
        let post = s.create_checkout_session(&f, Some("k-1"));
        assert_eq!(post.url, "http://127.0.0.1:9/v1/checkout/sessions");
        assert_eq!(post.body.as_deref(), Some("mode=payment"));
        assert_eq!(post.header("idempotency-key"), Some("k-1"));
        assert_eq!(
            post.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(
            Stripe::new("", "k").get_checkout_session("cs_1").url,
            "https://api.stripe.com/v1/checkout/sessions/cs_1"
        );
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let s = Stripe::new("", "sk_test_secret");
        let call = s.list_prices(None);
        assert!(
            call.header("authorization")
                .is_some_and(|v| v.contains("sk_test_secret"))
        );
        assert!(!format!("{call:?}").contains("sk_test_secret"));
        assert!(!format!("{s:?}").contains("sk_test_secret"));
    }

    #[test]
    fn errors_are_typed_from_stripes_shape() {
        let answer = |status, body: &str| {
            Ok(HttpAnswer {
                status,
                body: body.as_bytes().to_vec(),
            })
        };
        let e = decode::<Value>(answer(
            404,
            r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such checkout.session: 'cs_x'","param":"session"}}"#,
        ))
        .unwrap_err();
        assert!(e.is_missing());
        assert!(!e.is_unavailable());
        assert!(e.to_string().contains("resource_missing"));
        let e = decode::<Value>(answer(
            500,
            r#"{"error":{"type":"api_error","message":"boom"}}"#,
        ))
        .unwrap_err();
        assert!(e.is_unavailable());
        let e = decode::<Value>(answer(
            401,
            r#"{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****1234"}}"#,
        ))
        .unwrap_err();
        assert!(e.is_unavailable() && e.is_auth());
        let e = decode::<Value>(answer(502, "<html>bad gateway</html>")).unwrap_err();
        assert!(e.is_unavailable());
        let e = decode::<Value>(Err(TransportError::Timeout(8000))).unwrap_err();
        assert_eq!(e, StripeError::Timeout(8000));
        assert!(e.is_unavailable());
        let e = decode::<Price>(answer(200, r#"{"id":1}"#)).unwrap_err();
        assert!(matches!(e, StripeError::Decode(_)));
        let e = decode::<Value>(answer(
            400,
            r#"{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}"#,
        ))
        .unwrap_err();
        assert!(matches!(&e, StripeError::Api { kind, .. } if kind == "idempotency_error"));
    }

    #[test]
    fn session_ids_are_checked_before_they_reach_a_url() {
        assert!(valid_session_id("cs_test_a1B2"));
        assert!(!valid_session_id("cs_test/../../v1/customers"));
        assert!(!valid_session_id("pi_123"));
        assert!(!valid_session_id("cs_a?x=1"));
    }

    #[test]
    fn prices_decode_with_expanded_or_bare_products() {
        let list: List<Price> = decode(Ok(HttpAnswer {
            status: 200,
            body: br#"{"object":"list","has_more":false,"data":[
              {"id":"price_1","active":true,"currency":"usd","unit_amount":900,"lookup_key":null,
               "product":{"id":"prod_1","active":true,"name":"Pro","metadata":{"presence_offer":"plan"}},
               "metadata":{},"recurring":{"interval":"month","interval_count":1,"trial_period_days":14}},
              {"id":"price_2","active":true,"currency":"usd","unit_amount":100,"product":"prod_2","metadata":{}}]}"#
                .to_vec(),
        }))
        .unwrap();
        assert_eq!(list.data.len(), 2);
        assert!(matches!(&list.data[0].product, ProductRef::Expanded(p) if p.name == "Pro"));
        assert!(matches!(&list.data[1].product, ProductRef::Id(id) if id == "prod_2"));
    }
}
