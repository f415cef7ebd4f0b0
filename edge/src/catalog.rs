//! The offers agents may buy, read live from Stripe prices.
//!
//! A price is offered when its product's metadata (or the price's own, which wins) has
//! `presence_offer` = `plan` (a recurring monthly or yearly price) or `hardware` (a one-time
//! price), both are active, and it has a fixed `unit_amount`. `availability` in the same metadata
//! is `in_stock` (default), `out_of_stock` or `preorder`; anything else reads as out of stock, so
//! a typo never sells something that cannot ship. A plan's trial is the price's
//! `recurring.trial_period_days`, else the metadata `trial_days`. The offer id is the price's
//! `lookup_key` when set (stable across price changes), else the price id.

use crate::stripe::{Price, ProductRef};
use serde::Serialize;

/// Largest trial Stripe Checkout accepts.
pub const MAX_TRIAL_DAYS: u32 = 730;
/// Upper bound of the edge cache of the catalogue.
pub const MAX_CACHE_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Subscription,
    Hardware,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    InStock,
    OutOfStock,
    Preorder,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Money {
    /// Minor units.
    pub amount: i64,
    /// Lower case ISO 4217, as Stripe writes it.
    pub currency: String,
    pub display: String,
}

impl Money {
    pub fn new(amount: i64, currency: &str) -> Self {
        let currency = currency.to_ascii_lowercase();
        Self {
            amount,
            display: display(amount, &currency),
            currency,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Trial {
    pub days: u32,
}

/// One entry of `GET /agent/commerce/products`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offer {
    pub id: String,
    pub name: String,
    pub description: String,
    pub kind: Kind,
    pub price: Money,
    /// `month` or `year` for plans, `None` for hardware.
    pub interval: Option<String>,
    pub trial: Option<Trial>,
    pub available: bool,
    pub availability: Availability,
    /// The Stripe price a checkout uses; not part of the public document.
    #[serde(skip)]
    pub price_id: String,
}

/// The offers and when they were read from Stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub offers: Vec<Offer>,
    pub fetched_at_ms: u64,
}

impl Catalog {
    pub fn find(&self, id: &str) -> Option<&Offer> {
        self.offers.iter().find(|o| o.id == id)
    }

    /// Usable from a cache while younger than `ttl_ms` (capped at [`MAX_CACHE_MS`]).
    pub fn is_fresh(&self, now_ms: u64, ttl_ms: u64) -> bool {
        now_ms.saturating_sub(self.fetched_at_ms) < ttl_ms.min(MAX_CACHE_MS)
            && now_ms >= self.fetched_at_ms
    }

    /// The public document (CONTRACTS "Public agent API").
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "offers": self.offers,
            "fetched_at": rfc3339((self.fetched_at_ms / 1000) as i64),
            "source": "stripe",
        })
    }
}

/// Builds the catalogue from every page of active prices.
pub fn from_prices(prices: &[Price], fetched_at_ms: u64) -> Catalog {
    let mut offers: Vec<Offer> = prices.iter().filter_map(offer_from_price).collect();
    offers.sort_by(|a, b| {
        (a.kind as u8, a.price.amount, &a.id).cmp(&(b.kind as u8, b.price.amount, &b.id))
    });
    // Two prices with one lookup key cannot both be offered under one id; keep the first.
    offers.dedup_by(|b, a| a.id == b.id);
    Catalog {
        offers,
        fetched_at_ms,
    }
}

fn offer_from_price(price: &Price) -> Option<Offer> {
    let ProductRef::Expanded(product) = &price.product else {
        return None;
    };
    let meta = |k: &str| {
        price
            .metadata
            .get(k)
            .or_else(|| product.metadata.get(k))
            .map(|v| v.trim().to_ascii_lowercase())
    };
    let unit_amount = price.unit_amount.filter(|a| *a >= 0)?;
    let (kind, interval) = match (meta("presence_offer").as_deref(), &price.recurring) {
        (Some("plan"), Some(r))
            if r.interval_count.unwrap_or(1) == 1
                && (r.interval == "month" || r.interval == "year") =>
        {
            (Kind::Subscription, Some(r.interval.clone()))
        }
        (Some("hardware"), None) => (Kind::Hardware, None),
        _ => return None,
    };
    let availability = match meta("availability").as_deref() {
        None | Some("in_stock") => Availability::InStock,
        Some("preorder") => Availability::Preorder,
        Some(_) => Availability::OutOfStock,
    };
    let trial = match kind {
        Kind::Hardware => None,
        Kind::Subscription => price
            .recurring
            .as_ref()
            .and_then(|r| r.trial_period_days)
            .or_else(|| meta("trial_days").and_then(|d| d.parse().ok()))
            .filter(|d| (1..=MAX_TRIAL_DAYS).contains(d))
            .map(|days| Trial { days }),
    };
    let id = price
        .lookup_key
        .clone()
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| price.id.clone());
    Some(Offer {
        id,
        name: product.name.clone(),
        description: product.description.clone().unwrap_or_default(),
        kind,
        price: Money::new(unit_amount, &price.currency),
        interval,
        trial,
        available: price.active && product.active && availability != Availability::OutOfStock,
        availability,
        price_id: price.id.clone(),
    })
}

/// Currencies without minor units (Stripe's list, the common ones).
const ZERO_DECIMAL: &[&str] = &[
    "jpy", "krw", "vnd", "clp", "isk", "ugx", "xaf", "xof", "pyg",
];

/// A price for people: `$9.00`, `€12.50`, `¥900`, `12.00 CHF`.
pub fn display(amount: i64, currency: &str) -> String {
    let c = currency.to_ascii_lowercase();
    let sign = if amount < 0 { "-" } else { "" };
    let abs = amount.unsigned_abs();
    let number = if ZERO_DECIMAL.contains(&c.as_str()) {
        abs.to_string()
    } else {
        format!("{}.{:02}", abs / 100, abs % 100)
    };
    match c.as_str() {
        "usd" => format!("{sign}${number}"),
        "eur" => format!("{sign}€{number}"),
        "gbp" => format!("{sign}£{number}"),
        "jpy" => format!("{sign}¥{number}"),
        _ => format!("{sign}{number} {}", c.to_ascii_uppercase()),
    }
}

/// Unix seconds → `2026-11-22T10:00:00Z`.
pub fn rfc3339(unix_s: i64) -> String {
    let days = unix_s.div_euclid(86_400);
    let secs = unix_s.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stripe::{List, decode};

    fn prices(json: &str) -> Vec<Price> {
        decode::<List<Price>>(Ok(crate::stripe::HttpAnswer {
            status: 200,
            body: json.as_bytes().to_vec(),
        }))
        .unwrap()
        .data
    }

    const PRICES: &str = r#"{"object":"list","has_more":false,"data":[
      {"id":"price_node","active":true,"currency":"usd","unit_amount":4900,"lookup_key":"sensor_node",
       "product":{"id":"prod_n","active":true,"name":"Sensor node","description":"ESP32 node","metadata":{"presence_offer":"hardware","availability":"in_stock"}},"metadata":{}},
      {"id":"price_pro_y","active":true,"currency":"usd","unit_amount":9000,"lookup_key":"pro_yearly",
       "product":{"id":"prod_p","active":true,"name":"Pro","metadata":{"presence_offer":"plan","trial_days":"30"}},
       "metadata":{},"recurring":{"interval":"year","interval_count":1,"trial_period_days":null}},
      {"id":"price_pro_m","active":true,"currency":"usd","unit_amount":900,
       "product":{"id":"prod_p","active":true,"name":"Pro","metadata":{"presence_offer":"plan"}},
       "metadata":{},"recurring":{"interval":"month","interval_count":1,"trial_period_days":14}},
      {"id":"price_hub","active":true,"currency":"usd","unit_amount":12900,
       "product":{"id":"prod_h","active":true,"name":"Hub","metadata":{"presence_offer":"hardware","availability":"sold out"}},"metadata":{}},
      {"id":"price_pre","active":true,"currency":"eur","unit_amount":2500,
       "product":{"id":"prod_x","active":true,"name":"Node v2","metadata":{"presence_offer":"hardware"}},"metadata":{"availability":"preorder"}},
      {"id":"price_other","active":true,"currency":"usd","unit_amount":100,
       "product":{"id":"prod_o","active":true,"name":"Not ours","metadata":{}},"metadata":{}},
      {"id":"price_weekly","active":true,"currency":"usd","unit_amount":100,
       "product":{"id":"prod_w","active":true,"name":"Weekly","metadata":{"presence_offer":"plan"}},"metadata":{},"recurring":{"interval":"week","interval_count":1}},
      {"id":"price_archived","active":true,"currency":"usd","unit_amount":100,
       "product":{"id":"prod_a","active":false,"name":"Old","metadata":{"presence_offer":"hardware"}},"metadata":{}},
      {"id":"price_tiered","active":true,"currency":"usd","unit_amount":null,
       "product":{"id":"prod_t","active":true,"name":"Tiered","metadata":{"presence_offer":"hardware"}},"metadata":{}}
    ]}"#;

    #[test]
    fn offers_are_selected_by_metadata_and_ordered() {
        let c = from_prices(&prices(PRICES), 1_700_000_000_000);
        let ids: Vec<_> = c.offers.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "price_pro_m",
                "pro_yearly",
                "price_archived",
                "price_pre",
                "sensor_node",
                "price_hub"
            ]
        );
        let m = c.find("price_pro_m").unwrap();
        assert_eq!(m.kind, Kind::Subscription);
        assert_eq!(m.interval.as_deref(), Some("month"));
        assert_eq!(m.trial, Some(Trial { days: 14 }));
        assert_eq!(m.price.display, "$9.00");
        let y = c.find("pro_yearly").unwrap();
        assert_eq!(
            y.trial,
            Some(Trial { days: 30 }),
            "trial from product metadata"
        );
        assert_eq!(y.price_id, "price_pro_y");
        let hub = c.find("price_hub").unwrap();
        assert_eq!(hub.availability, Availability::OutOfStock);
        assert!(!hub.available);
        let pre = c.find("price_pre").unwrap();
        assert_eq!(pre.availability, Availability::Preorder);
        assert!(pre.available);
        assert_eq!(pre.price.display, "€25.00");
        assert!(!c.find("price_archived").unwrap().available);
        assert!(c.find("price_other").is_none());
        assert!(c.find("price_weekly").is_none());
        assert!(c.find("price_tiered").is_none());
    }

    #[test]
    fn the_document_has_the_contract_fields_and_hides_price_ids() {
        let c = from_prices(&prices(PRICES), 1_763_805_600_000);
        let v = c.to_json();
        assert_eq!(v["source"], "stripe");
        assert_eq!(v["fetched_at"], "2025-11-22T10:00:00Z");
        let node = &v["offers"][4];
        assert_eq!(node["id"], "sensor_node");
        assert_eq!(node["kind"], "hardware");
        assert_eq!(node["interval"], serde_json::Value::Null);
        assert_eq!(node["trial"], serde_json::Value::Null);
        assert_eq!(node["availability"], "in_stock");
        assert_eq!(node["price"]["amount"], 4900);
        assert!(node.get("price_id").is_none());
    }

    #[test]
    fn cache_freshness_is_capped_at_a_minute() {
        let c = Catalog {
            offers: vec![],
            fetched_at_ms: 10_000,
        };
        assert!(c.is_fresh(10_000 + 59_999, 60_000));
        assert!(!c.is_fresh(10_000 + 60_000, 60_000));
        assert!(!c.is_fresh(10_000 + 61_000, 600_000), "capped at 60 s");
        assert!(!c.is_fresh(10_001, 0), "ttl 0 disables the cache");
        assert!(
            !c.is_fresh(9_000, 60_000),
            "a clock going back is not fresh"
        );
    }

    #[test]
    fn money_and_time_format() {
        assert_eq!(display(900, "usd"), "$9.00");
        assert_eq!(display(12345, "chf"), "123.45 CHF");
        assert_eq!(display(900, "JPY"), "¥900");
        assert_eq!(display(-500, "gbp"), "-£5.00");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
    }
}
