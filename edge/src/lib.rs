//! Public agent API and MCP server, deployed as a Cloudflare Worker.
//!
//! Everything but the `glue` module at the bottom is plain Rust that compiles and is tested on
//! the host; the glue converts between `worker` types and [`request::Request`] /
//! [`reply::Reply`], and owns the two things that need Worker bindings: the Durable Object rate
//! limiter and fetching agents' key directories.

pub mod catalog;
pub mod checkout;
pub mod commerce;
pub mod config;
pub mod discovery;
pub mod headers;
pub mod idempotency;
pub mod mcp;
pub mod pages;
pub mod problem;
pub mod ratelimit;
pub mod reply;
pub mod request;
pub mod router;
pub mod search;
pub mod stripe;
pub mod tools;
pub mod webbotauth;

#[cfg(target_arch = "wasm32")]
mod glue {
    use crate::catalog::Catalog;
    use crate::commerce::Backend;
    use crate::config::Config;
    use crate::idempotency::{self, Begin, Record, StoredReply};
    use crate::ratelimit::{self, Decision};
    use crate::reply::Reply;
    use crate::stripe::{HttpAnswer, HttpCall, TransportError};
    use crate::webbotauth::{self, Check, DirectoryCache, Outcome};
    use std::cell::{Cell, RefCell};
    use worker::{
        Context, Date, DurableObject, Env, Fetch, Method, Request, RequestInit, RequestRedirect,
        Response, Result, State, console_log, durable_object, event,
    };

    /// Largest request body we read (MCP messages are small).
    const MAX_BODY_BYTES: usize = 256 * 1024;
    /// Time budget for fetching an agent's key directory.
    const DIRECTORY_TIMEOUT_MS: u64 = 2_000;

    thread_local! {
        static DIRECTORIES: RefCell<DirectoryCache> = RefCell::new(DirectoryCache::default());
        /// The offer catalogue, per isolate, for at most `CATALOG_CACHE_S` (≤ 60 s).
        static CATALOG: RefCell<Option<Catalog>> = const { RefCell::new(None) };
        static SEQ: Cell<u64> = const { Cell::new(0) };
    }

    fn text_var(env: &Env, name: &str) -> Option<String> {
        env.secret(name)
            .map(|s| s.to_string())
            .or_else(|_| env.var(name).map(|v| v.to_string()))
            .ok()
            .filter(|s| !s.is_empty())
    }

    fn config(env: &Env) -> Config {
        Config::from_vars(
            text_var(env, "PUBLIC_BASE_URL"),
            text_var(env, "ALLOWED_HOSTS"),
            text_var(env, "RATE_LIMIT_EXEMPT"),
            text_var(env, "SIGNING_KEY"),
        )
        .with_commerce(
            text_var(env, "STRIPE_API_BASE"),
            text_var(env, "STRIPE_SECRET_KEY"),
            text_var(env, "CATALOG_CACHE_S"),
            text_var(env, "SHIPPING_COUNTRIES"),
        )
    }

    fn request_id(req: &Request) -> String {
        if let Ok(Some(ray)) = req.headers().get("cf-ray") {
            return ray;
        }
        let n = SEQ.with(|s| {
            s.set(s.get().wrapping_add(1));
            s.get()
        });
        format!("{:x}-{n:x}", Date::now().as_millis())
    }

    #[event(fetch)]
    async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
        let cfg = config(&env);
        let rid = request_id(&req);
        let incoming = match to_incoming(&mut req).await {
            Ok(r) => r,
            Err(reply) => {
                let bare = crate::request::Request::new(req.method().as_ref(), "/");
                return into_response(crate::headers::finish(reply, &bare, &rid));
            }
        };
        let now_s = (Date::now().as_millis() / 1000) as i64;
        let outcome = match webbotauth::start(&incoming, now_s) {
            Check::Done(o) => o,
            Check::NeedsDirectory { url, pending } => {
                let body = directory(&url, now_s).await;
                webbotauth::finish(&pending, body.as_deref())
            }
        };
        match &outcome {
            Outcome::Verified { keyid, agent } => {
                console_log!("web-bot-auth verified keyid={keyid} agent={agent} rid={rid}")
            }
            Outcome::Invalid(why) => console_log!("web-bot-auth invalid ({why}) rid={rid}"),
            Outcome::Unsigned => {}
        }
        let ip = req.headers().get("cf-connecting-ip").ok().flatten();
        let key = ratelimit::client_key(outcome.agent_key(), ip.as_deref());
        // Preflights are free: a browser client must not spend its one request per second on
        // the preflight of the request it is about to make.
        let exempt = incoming.method == "OPTIONS" || cfg.rate_limit_exempt.contains(&key);
        let backend = WorkerBackend { env: &env };
        let reply = if exempt {
            crate::router::handle(&incoming, &cfg, &rid, &backend).await
        } else {
            match limit(&env, &key).await {
                Decision::Allow { .. } => ratelimit::allowed_headers(
                    crate::router::handle(&incoming, &cfg, &rid, &backend).await,
                ),
                Decision::Deny { retry_after_ms } => crate::headers::finish(
                    crate::headers::cors_any(ratelimit::too_many_requests(retry_after_ms)),
                    &incoming,
                    &rid,
                ),
            }
        };
        match into_response(reply.with_header("web-bot-auth", outcome.label())) {
            Ok(resp) => Ok(resp),
            Err(e) => {
                console_log!("could not build the response ({e}) rid={rid}");
                let problem = crate::problem::Problem::new(
                    500,
                    "Internal Server Error",
                    format!("The response could not be built; request id {rid}."),
                );
                into_response(crate::headers::finish(
                    problem.into_reply(),
                    &incoming,
                    &rid,
                ))
            }
        }
    }

    async fn to_incoming(req: &mut Request) -> std::result::Result<crate::request::Request, Reply> {
        // The runtime's own URL string, split rather than parsed with `Request::url()`, which
        // would link the `url` crate and its IDNA tables.
        let (origin, authority, path, query) = crate::request::split_url(&req.inner().url())
            .ok_or_else(|| {
                crate::problem::Problem::new(400, "Bad Request", "The request URL is not absolute.")
                    .into_reply()
            })?;
        let mut headers = Vec::new();
        for (name, value) in req.headers().entries() {
            headers.push((name.to_ascii_lowercase(), value));
        }
        let body = match req.method() {
            Method::Get | Method::Head | Method::Options => Vec::new(),
            _ => {
                let declared = req
                    .headers()
                    .get("content-length")
                    .ok()
                    .flatten()
                    .and_then(|v| v.parse::<usize>().ok());
                if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
                    return Err(crate::problem::Problem::new(
                        413,
                        "Content Too Large",
                        format!("Request bodies are limited to {MAX_BODY_BYTES} bytes."),
                    )
                    .into_reply());
                }
                let bytes = req.bytes().await.unwrap_or_default();
                if bytes.len() > MAX_BODY_BYTES {
                    return Err(crate::problem::Problem::new(
                        413,
                        "Content Too Large",
                        format!("Request bodies are limited to {MAX_BODY_BYTES} bytes."),
                    )
                    .into_reply());
                }
                bytes
            }
        };
        Ok(crate::request::Request {
            method: req.method().to_string(),
            origin,
            authority,
            path,
            query,
            headers,
            body,
            received_at_s: (Date::now().as_millis() / 1000) as i64,
        })
    }

    /// Fetches an agent's key directory (HTTPS, no redirects, 200 only, size-capped, with a
    /// timeout), through the per-isolate cache.
    async fn directory(url: &str, now_s: i64) -> Option<Vec<u8>> {
        if let Some(cached) =
            DIRECTORIES.with(|c| c.borrow().get(url, now_s).map(|b| b.map(<[u8]>::to_vec)))
        {
            return cached;
        }
        let fetched = fetch_directory(url).await;
        DIRECTORIES.with(|c| c.borrow_mut().put(url, now_s, fetched.clone()));
        fetched
    }

    async fn fetch_directory(url: &str) -> Option<Vec<u8>> {
        let mut init = RequestInit::new();
        init.with_method(Method::Get)
            .with_redirect(RequestRedirect::Manual);
        let req = Request::new_with_init(url, &init).ok()?;
        let _ = req
            .headers()
            .set("accept", webbotauth::DIRECTORY_CONTENT_TYPE);
        let send = Box::pin(async move {
            let mut resp = Fetch::Request(req).send().await.ok()?;
            if resp.status_code() != 200 {
                return None;
            }
            let declared = resp
                .headers()
                .get("content-length")
                .ok()
                .flatten()
                .and_then(|v| v.parse::<usize>().ok());
            if declared.is_some_and(|n| n > webbotauth::MAX_DIRECTORY_BYTES) {
                return None;
            }
            let bytes = resp.bytes().await.ok()?;
            (bytes.len() <= webbotauth::MAX_DIRECTORY_BYTES).then_some(bytes)
        });
        let timeout = Box::pin(worker::Delay::from(std::time::Duration::from_millis(
            DIRECTORY_TIMEOUT_MS,
        )));
        match futures_util::future::select(send, timeout).await {
            futures_util::future::Either::Left((body, _)) => body,
            futures_util::future::Either::Right(_) => None,
        }
    }

    /// Asks the client's Durable Object whether this request may pass. If the limiter itself is
    /// unavailable the request is served: a limiter outage must not take the site down.
    async fn limit(env: &Env, key: &str) -> Decision {
        let answer = async {
            let ns = env.durable_object("CLIENT_LIMITER")?;
            let stub = ns.id_from_name(key)?.get_stub()?;
            let mut resp = stub.fetch_with_str("https://limiter/check").await?;
            resp.text().await
        }
        .await;
        match answer {
            Ok(text) => match text.strip_prefix("deny ").and_then(|ms| ms.parse().ok()) {
                Some(retry_after_ms) => Decision::Deny { retry_after_ms },
                None => Decision::Allow { now_ms: 0 },
            },
            Err(e) => {
                console_log!("rate limiter unavailable: {e}");
                Decision::Allow { now_ms: 0 }
            }
        }
    }

    /// Stripe through `worker::Fetch`, idempotency through the `IDEMPOTENCY` Durable Object, the
    /// catalogue cache in isolate memory.
    struct WorkerBackend<'a> {
        env: &'a Env,
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

        async fn idem_begin(
            &self,
            key: &str,
            fingerprint: &str,
        ) -> std::result::Result<Begin, String> {
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

    /// One per `Idempotency-Key` (scoped by protocol): the request's fingerprint and, once it
    /// ran, its answer, kept 24 h. Being a single instance per key worldwide, it also stops two
    /// concurrent requests with one key from both running.
    #[durable_object]
    pub struct IdempotencyStore {
        state: State,
    }

    #[derive(serde::Deserialize)]
    struct StoreOp {
        fingerprint: String,
        #[serde(default)]
        reply: Option<StoredReply>,
    }

    impl DurableObject for IdempotencyStore {
        fn new(state: State, _env: Env) -> Self {
            Self { state }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let storage = self.state.storage();
            let op: StoreOp = serde_json::from_str(&req.text().await?)
                .map_err(|e| worker::Error::RustError(e.to_string()))?;
            let existing = storage.get::<Record>("r").await.ok().flatten();
            let now_ms = Date::now().as_millis();
            if req.path().ends_with("/begin") {
                let (begin, record) =
                    idempotency::begin(existing.as_ref(), &op.fingerprint, now_ms);
                if let Some(r) = record {
                    storage.put("r", &r).await?;
                    storage
                        .set_alarm(std::time::Duration::from_millis(idempotency::KEEP_MS))
                        .await?;
                }
                return Response::from_json(&begin);
            }
            match op
                .reply
                .and_then(|reply| idempotency::finish(existing.as_ref(), &op.fingerprint, reply))
            {
                Some(r) => storage.put("r", &r).await?,
                None if existing.is_some_and(|e| e.fingerprint == op.fingerprint) => {
                    storage.delete("r").await?;
                }
                None => {}
            }
            Response::ok("")
        }

        async fn alarm(&self) -> Result<Response> {
            self.state.storage().delete_all().await?;
            Response::ok("")
        }
    }

    fn into_response(reply: Reply) -> Result<Response> {
        let has_content_type = reply.header("content-type").is_some();
        // 204/304 (and HEAD) must have a null body, not an empty one.
        let resp = if reply.body.is_empty() {
            Response::empty()?
        } else {
            Response::from_bytes(reply.body)?
        };
        let mut resp = resp.with_status(reply.status);
        let headers = resp.headers_mut();
        // `from_bytes` sets a default content type; the first value of each name replaces
        // whatever is there, later values (several `Link`s) are appended.
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in &reply.headers {
            if seen.contains(&name.as_str()) {
                headers.append(name, value)?;
            } else {
                headers.set(name, value)?;
                seen.push(name);
            }
        }
        if !has_content_type {
            headers.delete("content-type")?;
        }
        Ok(resp)
    }

    /// One per client key: holds the time of the client's last allowed request. A Durable
    /// Object makes the limit exact (one instance worldwide per key), which the Rate Limiting
    /// binding (10 s or 60 s windows, per location) cannot.
    #[durable_object]
    pub struct ClientLimiter {
        state: State,
        last: Cell<Option<u64>>,
        loaded: Cell<bool>,
    }

    impl DurableObject for ClientLimiter {
        fn new(state: State, _env: Env) -> Self {
            Self {
                state,
                last: Cell::new(None),
                loaded: Cell::new(false),
            }
        }

        async fn fetch(&self, _req: Request) -> Result<Response> {
            let storage = self.state.storage();
            if !self.loaded.get() {
                self.last
                    .set(storage.get::<u64>("last").await.ok().flatten());
                self.loaded.set(true);
            }
            let now_ms = Date::now().as_millis();
            match ratelimit::decide(self.last.get(), now_ms) {
                Decision::Allow { now_ms } => {
                    self.last.set(Some(now_ms));
                    storage.put("last", now_ms).await?;
                    // Forget idle clients so storage does not grow with every address seen.
                    storage
                        .set_alarm(std::time::Duration::from_secs(60))
                        .await?;
                    Response::ok("allow")
                }
                Decision::Deny { retry_after_ms } => Response::ok(format!("deny {retry_after_ms}")),
            }
        }

        async fn alarm(&self) -> Result<Response> {
            let now_ms = Date::now().as_millis();
            if self
                .last
                .get()
                .is_none_or(|last| now_ms.saturating_sub(last) >= 60_000)
            {
                self.state.storage().delete_all().await?;
                self.last.set(None);
            }
            Response::ok("")
        }
    }
}
