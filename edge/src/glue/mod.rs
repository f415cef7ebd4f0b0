//! The Worker glue, the only code that touches `worker` types (wasm32 only): the fetch event
//! converts a `worker::Request` into [`crate::request::Request`], runs Web Bot Auth, the rate
//! limiter and the router, and converts the [`Reply`] back.
//!
//! - `directory`: fetching agents' key directories (HTTPS, no redirects, size and time capped),
//!   through a per-isolate cache.
//! - `limiter`: the `ClientLimiter` Durable Object and the call that asks it.
//! - `backend`: [`crate::commerce::Backend`] over `worker::Fetch` (Stripe), the `IdempotencyStore`
//!   Durable Object and the per-isolate catalogue cache.
//! - `idempotency`: the `IdempotencyStore` Durable Object.

mod backend;
mod directory;
mod idempotency;
mod limiter;

use crate::config::Config;
use crate::ratelimit::{self, Decision};
use crate::reply::Reply;
use crate::webbotauth::{self, Check, KeyDirectory, Outcome};
use backend::WorkerBackend;
use std::cell::Cell;
use worker::{Context, Date, Env, Method, Request, Response, Result, console_log, event};

/// Largest request body we read (MCP messages are small).
const MAX_BODY_BYTES: usize = 256 * 1024;

thread_local! {
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
    .with_ucp_dev_profiles(text_var(env, "UCP_DEV_PROFILE_ORIGINS"))
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
    let ip = req.headers().get("cf-connecting-ip").ok().flatten();
    let incoming = match to_incoming(&mut req).await {
        Ok(r) => r,
        Err(reply) => {
            // Refused before it could be read (too large). It still costs the client its
            // request (an oversized body must not be a way around the limit), and the answer
            // keeps the path's protocol shape.
            let path = crate::request::split_url(&req.inner().url()).map(|(_, _, p, _)| p);
            let bare =
                crate::request::Request::new(req.method().as_ref(), path.as_deref().unwrap_or("/"));
            let key = ratelimit::client_key(None, ip.as_deref());
            let reply = if ratelimit::is_exempt(&cfg.rate_limit_exempt, &key) {
                reply
            } else {
                match limiter::limit(&env, &key).await {
                    Decision::Allow { .. } => reply,
                    Decision::Deny { retry_after_ms } => {
                        crate::headers::cors_any(ratelimit::too_many_requests(retry_after_ms))
                    }
                }
            };
            let reply = crate::router::refusal(&bare, reply);
            return into_response(crate::headers::finish(reply, &bare, &rid));
        }
    };
    let now_s = (Date::now().as_millis() / 1000) as i64;
    let outcome = match webbotauth::start(&incoming, now_s) {
        Check::Done(o) => o,
        Check::NeedsDirectory { url, pending } => {
            let (body, cached) = directory::directory(&url, now_s).await;
            webbotauth::finish(&pending, body.as_deref(), cached)
        }
    };
    match &outcome {
        Outcome::Verified { keyid, directory } => {
            let from = match directory {
                KeyDirectory::Inline => "inline (self-asserted: limited by address)".to_string(),
                KeyDirectory::Fetched {
                    origin,
                    cached: true,
                } => origin.clone(),
                KeyDirectory::Fetched {
                    origin,
                    cached: false,
                } => format!("{origin} (just fetched: limited by address)"),
            };
            console_log!("web-bot-auth verified keyid={keyid} directory={from} rid={rid}")
        }
        Outcome::Invalid(why) => console_log!("web-bot-auth invalid ({why}) rid={rid}"),
        Outcome::Unsigned => {}
    }
    let key = ratelimit::client_key(outcome.agent_key(), ip.as_deref());
    // Preflights are free: a browser client must not spend its one request per second on
    // the preflight of the request it is about to make.
    let exempt = incoming.method == "OPTIONS" || ratelimit::is_exempt(&cfg.rate_limit_exempt, &key);
    let backend = WorkerBackend { env: &env };
    let reply = if exempt {
        crate::router::handle(&incoming, &cfg, &rid, &backend).await
    } else {
        match limiter::limit(&env, &key).await {
            Decision::Allow { .. } => ratelimit::allowed_headers(
                crate::router::handle(&incoming, &cfg, &rid, &backend).await,
            ),
            Decision::Deny { retry_after_ms } => crate::headers::finish(
                crate::headers::cors_any(crate::router::refusal(
                    &incoming,
                    ratelimit::too_many_requests(retry_after_ms),
                )),
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
