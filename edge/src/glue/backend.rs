//! The commerce [`Backend`] in the Worker: Stripe through `worker::Fetch` (8 s timeout), the
//! idempotency store through the `IDEMPOTENCY` Durable Object, the catalogue cache in isolate
//! memory.

use crate::catalog::Catalog;
use crate::commerce::Backend;
use crate::idempotency::{Begin, StoredReply};
use crate::stripe::{HttpAnswer, HttpCall, TransportError};
use std::cell::RefCell;
use worker::{
    Date, Env, Fetch, Method, Request, RequestInit, RequestRedirect, Result, console_log,
};

thread_local! {
    /// The offer catalogue, per isolate, for at most `CATALOG_CACHE_S` (≤ 60 s).
    static CATALOG: RefCell<Option<Catalog>> = const { RefCell::new(None) };
}

/// Stripe through `worker::Fetch`, idempotency through the `IDEMPOTENCY` Durable Object, the
/// catalogue cache in isolate memory.
pub(super) struct WorkerBackend<'a> {
    pub(super) env: &'a Env,
}

impl WorkerBackend<'_> {
    async fn store(&self, key: &str, op: &str, body: &serde_json::Value) -> Result<String> {
        let ns = self.env.durable_object("IDEMPOTENCY")?;
        let stub = ns.id_from_name(key)?.get_stub()?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body.to_string())));
        let req = Request::new_with_init(&format!("https://idempotency/{op}"), &init)?;
        let mut resp = stub.fetch_with_request(req).await?;
        resp.text().await
    }
}

impl Backend for WorkerBackend<'_> {
    fn now_ms(&self) -> u64 {
        Date::now().as_millis()
    }

    async fn send(&self, call: HttpCall) -> std::result::Result<HttpAnswer, TransportError> {
        let net = |e: worker::Error| TransportError::Network(e.to_string());
        let headers = worker::Headers::new();
        for (n, v) in &call.headers {
            headers.set(n, v).map_err(net)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::from(call.method.to_string()))
            .with_headers(headers)
            .with_redirect(RequestRedirect::Manual);
        if let Some(body) = &call.body {
            init.with_body(Some(wasm_bindgen::JsValue::from_str(body)));
        }
        let req = Request::new_with_init(&call.url, &init).map_err(net)?;
        let send = Box::pin(async move {
            let mut resp = Fetch::Request(req).send().await.map_err(net)?;
            let status = resp.status_code();
            let body = resp.bytes().await.map_err(net)?;
            Ok(HttpAnswer { status, body })
        });
        let timeout = Box::pin(worker::Delay::from(std::time::Duration::from_millis(
            crate::stripe::TIMEOUT_MS,
        )));
        match futures_util::future::select(send, timeout).await {
            futures_util::future::Either::Left((answer, _)) => answer,
            futures_util::future::Either::Right(_) => {
                Err(TransportError::Timeout(crate::stripe::TIMEOUT_MS))
            }
        }
    }

    async fn idem_begin(&self, key: &str, fingerprint: &str) -> std::result::Result<Begin, String> {
        let text = self
            .store(
                key,
                "begin",
                &serde_json::json!({"fingerprint": fingerprint}),
            )
            .await
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    async fn idem_finish(&self, key: &str, fingerprint: &str, reply: Option<StoredReply>) {
        let body = serde_json::json!({"fingerprint": fingerprint, "reply": reply});
        if let Err(e) = self.store(key, "finish", &body).await {
            console_log!("idempotency store: could not record an answer: {e}");
        }
    }

    fn cached_catalog(&self) -> Option<Catalog> {
        CATALOG.with(|c| c.borrow().clone())
    }

    fn store_catalog(&self, catalog: &Catalog) {
        CATALOG.with(|c| *c.borrow_mut() = Some(catalog.clone()));
    }

    fn log(&self, line: &str) {
        console_log!("{line}");
    }
}
