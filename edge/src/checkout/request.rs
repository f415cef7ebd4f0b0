//! Reading what a client sent: the ACP `API-Version` header and a checkout body's line items,
//! buyer email and currency, in every form the protocols use.

use crate::meta::ACP_VERSIONS;
use serde_json::{Value, json};

/// Most units of one hardware offer per checkout.
pub const MAX_QUANTITY: u32 = 10;

/// Why an ACP `API-Version` header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("the API-Version header is required; supported: {}", newest_first().join(", "))]
    Missing,
    #[error("API-Version {0} is not supported; supported: {list}", list = newest_first().join(", "))]
    Unsupported(String),
}

impl VersionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "missing_api_version",
            Self::Unsupported(_) => "unsupported_api_version",
        }
    }
}

pub fn newest_first() -> Vec<&'static str> {
    ACP_VERSIONS.iter().rev().copied().collect()
}

/// Validates `API-Version`.
pub fn acp_version(header: Option<&str>) -> Result<&'static str, VersionError> {
    let v = header.map(str::trim).filter(|v| !v.is_empty());
    let Some(v) = v else {
        return Err(VersionError::Missing);
    };
    ACP_VERSIONS
        .iter()
        .find(|s| **s == v)
        .copied()
        .ok_or_else(|| VersionError::Unsupported(v.chars().take(40).collect()))
}

/// A malformed checkout request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body is not JSON: {0}")]
    NotJson(String),
    #[error("the body must be a JSON object")]
    NotObject,
    #[error(
        "line_items (or items) must list exactly one offer, e.g. [{{\"id\": \"<offer id>\", \"quantity\": 1}}]; offer ids come from /agent/commerce/products"
    )]
    NoItems,
    #[error("one checkout buys one offer; start one checkout per offer")]
    TooManyItems,
    #[error("a line item needs the offer id as `id` or `item.id`")]
    NoOfferId,
    #[error("quantity must be an integer from 1 to {MAX_QUANTITY}")]
    BadQuantity,
    #[error("buyer email is not an email address")]
    BadEmail,
    #[error("currency must be a three-letter code")]
    BadCurrency,
}

impl BodyError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotJson(_) | Self::NotObject => "invalid_body",
            Self::NoItems | Self::NoOfferId => "missing",
            Self::TooManyItems | Self::BadQuantity | Self::BadEmail | Self::BadCurrency => {
                "invalid"
            }
        }
    }

    /// The member at fault, as an RFC 9535 JSONPath (ACP `param`, UCP `path`).
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Self::NoItems | Self::TooManyItems | Self::NoOfferId => Some("$.line_items"),
            Self::BadQuantity => Some("$.line_items[0].quantity"),
            Self::BadEmail => Some("$.buyer.email"),
            Self::BadCurrency => Some("$.currency"),
            _ => None,
        }
    }
}

/// What a client asked to buy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub offer_id: String,
    pub quantity: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    pub line: Line,
    pub email: Option<String>,
    /// Lower case.
    pub currency: Option<String>,
}

/// Parses a JSON body into an object.
pub fn parse_object(body: &[u8]) -> Result<Value, BodyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(BodyError::NotObject)
    }
}

/// The line items of a body, in any of the accepted forms: `line_items` or `items`, each
/// `{id, quantity?}` (ACP), `{item: {id}, quantity}` (UCP) or `{offer_id, quantity?}` (MCP);
/// quantity defaults to 1. `None` when the body names no items.
pub fn parse_lines(body: &Value) -> Result<Option<Vec<Line>>, BodyError> {
    let Some(items) = body.get("line_items").or_else(|| body.get("items")) else {
        return Ok(None);
    };
    let Some(items) = items.as_array() else {
        return Err(BodyError::NoItems);
    };
    let mut lines = Vec::new();
    for it in items {
        let id = it
            .get("item")
            .and_then(|i| i.get("id"))
            .or_else(|| it.get("offer_id"))
            .or_else(|| it.get("id"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 200)
            .ok_or(BodyError::NoOfferId)?;
        lines.push(Line {
            offer_id: id.to_string(),
            quantity: parse_quantity(it.get("quantity"))?,
        });
    }
    Ok(Some(lines))
}

pub fn parse_quantity(v: Option<&Value>) -> Result<u32, BodyError> {
    match v {
        None | Some(Value::Null) => Ok(1),
        Some(q) => q
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_QUANTITY).contains(n))
            .ok_or(BodyError::BadQuantity),
    }
}

/// A create body (any protocol's form).
pub fn parse_create(body: &Value) -> Result<CreateRequest, BodyError> {
    let lines = parse_lines(body)?.ok_or(BodyError::NoItems)?;
    let mut lines = lines.into_iter();
    let line = lines.next().ok_or(BodyError::NoItems)?;
    if lines.next().is_some() {
        return Err(BodyError::TooManyItems);
    }
    let email = body
        .get("buyer")
        .and_then(|b| b.get("email"))
        .or_else(|| body.get("email"));
    let email = match email {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if plausible_email(e) => Some(e.trim().to_string()),
        Some(_) => return Err(BodyError::BadEmail),
    };
    let currency = match body.get("currency") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.len() == 3 && c.chars().all(|c| c.is_ascii_alphabetic()) => {
            Some(c.to_ascii_lowercase())
        }
        Some(_) => return Err(BodyError::BadCurrency),
    };
    Ok(CreateRequest {
        line,
        email,
        currency,
    })
}

fn plausible_email(e: &str) -> bool {
    let e = e.trim();
    e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control())
        && e.split_once('@')
            .is_some_and(|(l, d)| !l.is_empty() && d.contains('.') && !d.contains('@'))
}
