//! What the commerce code needs from its host: the network (Stripe), the clock, the idempotency
//! store, the catalogue cache and a log. The Worker glue implements it with `worker::Fetch` and a
//! Durable Object; host tests with a scripted Stripe (`commerce::tests::Fake`).

use crate::catalog::Catalog;
use crate::idempotency::{Begin, StoredReply};
use crate::stripe::{HttpAnswer, HttpCall, TransportError};
use std::future::Future;

/// What the commerce code needs from its host.
pub trait Backend {
    fn now_ms(&self) -> u64;
    /// Sends one request to Stripe, within [`stripe::TIMEOUT_MS`].
    fn send(&self, call: HttpCall) -> impl Future<Output = Result<HttpAnswer, TransportError>>;
    /// Starts a keyed request (see [`idempotency::begin`]); `Err` when the store is unreachable.
    fn idem_begin(
        &self,
        key: &str,
        fingerprint: &str,
    ) -> impl Future<Output = Result<Begin, String>>;
    /// Stores the answer of a keyed request (2xx–4xx) or forgets the key (5xx).
    fn idem_finish(
        &self,
        key: &str,
        fingerprint: &str,
        reply: Option<StoredReply>,
    ) -> impl Future<Output = ()>;
    fn cached_catalog(&self) -> Option<Catalog>;
    fn store_catalog(&self, catalog: &Catalog);
    /// Records an operational event (server-side failures); never called with secrets.
    fn log(&self, line: &str);
}

/// A backend without network or storage, for code paths that never reach commerce.
pub struct Offline;

impl Backend for Offline {
    fn now_ms(&self) -> u64 {
        0
    }
    async fn send(&self, _call: HttpCall) -> Result<HttpAnswer, TransportError> {
        Err(TransportError::Network("offline".into()))
    }
    async fn idem_begin(&self, _key: &str, _fp: &str) -> Result<Begin, String> {
        Err("offline".into())
    }
    async fn idem_finish(&self, _key: &str, _fp: &str, _reply: Option<StoredReply>) {}
    fn cached_catalog(&self) -> Option<Catalog> {
        None
    }
    fn store_catalog(&self, _catalog: &Catalog) {}
    fn log(&self, _line: &str) {}
}
