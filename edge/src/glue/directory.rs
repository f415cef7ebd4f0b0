//! Fetching an agent's key directory for Web Bot Auth, through a per-isolate cache.

use crate::webbotauth::{self, DirectoryCache};
use std::cell::RefCell;
use worker::{Fetch, Method, Request, RequestInit, RequestRedirect};

/// Time budget for fetching an agent's key directory.
const DIRECTORY_TIMEOUT_MS: u64 = 2_000;

thread_local! {
    static DIRECTORIES: RefCell<DirectoryCache> = RefCell::new(DirectoryCache::default());
}

/// Fetches an agent's key directory (HTTPS, no redirects, 200 only, size-capped, with a
/// timeout), through the per-isolate cache. The flag is true when the answer came from the
/// cache, i.e. the directory was fetched for an earlier request.
pub(super) async fn directory(url: &str, now_s: i64) -> (Option<Vec<u8>>, bool) {
    if let Some(cached) =
        DIRECTORIES.with(|c| c.borrow().get(url, now_s).map(|b| b.map(<[u8]>::to_vec)))
    {
        return (cached, true);
    }
    let fetched = fetch_directory(url).await;
    DIRECTORIES.with(|c| c.borrow_mut().put(url, now_s, fetched.clone()));
    (fetched, false)
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
