//! The commerce operations both bindings (REST and MCP) call: load the catalogue, create, read
//! and cancel a checkout. Each talks to Stripe through the [`Backend`].

use super::backend::Backend;
use super::failure::{Failure, Ucp};
use crate::catalog::{self, Catalog, Kind};
use crate::checkout::{self, BodyError, Checkout, Protocol, ReturnUrls};
use crate::config::Config;
use crate::meta::PRODUCTS_PATH;
use crate::stripe::{self, CheckoutSession, List, Price, StripeError};
use serde_json::Value;

/// Most price pages read for one catalogue (100 prices each).
const MAX_PRICE_PAGES: usize = 10;

/// Loads the catalogue from the cache or Stripe.
pub async fn catalog<B: Backend>(cfg: &Config, b: &B) -> Result<Catalog, StripeError> {
    let s = cfg.stripe.as_ref().ok_or(StripeError::NotConfigured)?;
    let now = b.now_ms();
    if let Some(c) = b.cached_catalog()
        && c.is_fresh(now, cfg.catalog_ttl_ms)
    {
        return Ok(c);
    }
    let mut prices: Vec<Price> = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PRICE_PAGES {
        let page: List<Price> = stripe::decode(b.send(s.list_prices(after.as_deref())).await)?;
        let more = page.has_more;
        after = page.data.last().map(|p| p.id.clone());
        prices.extend(page.data);
        if !more || after.is_none() {
            break;
        }
    }
    let c = catalog::from_prices(&prices, now);
    if cfg.catalog_ttl_ms > 0 {
        b.store_catalog(&c);
    }
    Ok(c)
}

/// Why a checkout could not be created.
pub(super) enum CreateError {
    Body(BodyError),
    UnknownOffer(String),
    Unavailable(String),
    Quantity(String),
    Currency(String),
    Stripe(StripeError),
    Session(String),
}

impl CreateError {
    pub(super) fn failure(&self) -> Failure {
        match self {
            Self::Body(e) => Failure::body(e),
            Self::UnknownOffer(id) => Failure::input(
                422,
                "unknown_offer",
                format!(
                    "No offer {id:?}. List the offers with GET {PRODUCTS_PATH} (MCP: list_products)."
                ),
            )
            .param("$.line_items[0].id"),
            Self::Unavailable(id) => Failure::input(
                409,
                "out_of_stock",
                format!(
                    "Offer {id:?} is not available right now; see {PRODUCTS_PATH} for what is."
                ),
            )
            .param("$.line_items[0].id"),
            Self::Quantity(d) => {
                Failure::input(400, "invalid", d.clone()).param("$.line_items[0].quantity")
            }
            Self::Currency(d) => Failure::input(400, "invalid", d.clone()).param("$.currency"),
            Self::Stripe(e) => Failure::stripe(e),
            Self::Session(d) => Failure::new(502, "processing_error", d.clone(), Ucp::Protocol),
        }
    }
}

/// Creates a Stripe Checkout Session for a parsed request.
pub(super) async fn create<B: Backend>(
    cfg: &Config,
    b: &B,
    base: &str,
    body: &Value,
    protocol: Protocol,
    idempotency_key: Option<&str>,
) -> Result<Checkout, CreateError> {
    let wanted = checkout::parse_create(body).map_err(CreateError::Body)?;
    let cat = catalog(cfg, b).await.map_err(CreateError::Stripe)?;
    let offer = cat
        .find(&wanted.line.offer_id)
        .ok_or_else(|| CreateError::UnknownOffer(wanted.line.offer_id.clone()))?;
    if !offer.available {
        return Err(CreateError::Unavailable(offer.id.clone()));
    }
    if offer.kind == Kind::Subscription && wanted.line.quantity != 1 {
        return Err(CreateError::Quantity(
            "A plan is bought one at a time: quantity must be 1.".into(),
        ));
    }
    if let Some(c) = &wanted.currency
        && *c != offer.price.currency
    {
        return Err(CreateError::Currency(format!(
            "Offer {} is priced in {}, not {c}.",
            offer.id, offer.price.currency
        )));
    }
    let s = cfg
        .stripe
        .as_ref()
        .ok_or(CreateError::Stripe(StripeError::NotConfigured))?;
    let form = checkout::session_form(
        offer,
        wanted.line.quantity,
        wanted.email.as_deref(),
        &ReturnUrls::for_site(base),
        protocol,
        &cfg.shipping_countries,
    );
    let session: CheckoutSession = stripe::decode(
        b.send(s.create_checkout_session(&form, idempotency_key))
            .await,
    )
    .map_err(CreateError::Stripe)?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64)
        .map_err(|e| CreateError::Session(e.to_string()))
}

/// Reads a checkout live from Stripe.
pub(super) async fn read<B: Backend>(cfg: &Config, b: &B, id: &str) -> Result<Checkout, Failure> {
    if !stripe::valid_session_id(id) {
        return Err(Failure::not_found(id));
    }
    let s = cfg
        .stripe
        .as_ref()
        .ok_or_else(|| Failure::stripe(&StripeError::NotConfigured))?;
    let session: CheckoutSession = stripe::decode(b.send(s.get_checkout_session(id)).await)
        .map_err(|e| Failure::stripe(&e))?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64).map_err(|_| Failure::not_found(id))
}

/// Expires an open session on Stripe.
pub(super) async fn cancel<B: Backend>(
    cfg: &Config,
    b: &B,
    id: &str,
    key: Option<&str>,
) -> Result<Checkout, Failure> {
    let s = cfg
        .stripe
        .as_ref()
        .ok_or_else(|| Failure::stripe(&StripeError::NotConfigured))?;
    let session: CheckoutSession = stripe::decode(b.send(s.expire_checkout_session(id, key)).await)
        .map_err(|e| Failure::stripe(&e))?;
    checkout::from_session(&session, (b.now_ms() / 1000) as i64)
        .map_err(|e| Failure::new(502, "processing_error", e.to_string(), Ucp::Protocol))
}
