//! Items as the SDK sees them: attribute values in and out, and one builder for the items every
//! module writes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use platform_domain::StoreError;

use crate::table::{PK, SK};

pub type Item = HashMap<String, AttributeValue>;

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub fn get_s(item: &Item, name: &str) -> Result<String, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .ok_or_else(|| StoreError::Corrupt(format!("missing string attribute {name}")))
}

pub fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("missing number attribute {name}")))
}

pub fn opt_s(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

/// A JSON document stored as text; `what` names it in the error.
pub fn json_s<T: serde::de::DeserializeOwned>(
    item: &Item,
    name: &str,
    what: &str,
) -> Result<Option<T>, StoreError> {
    opt_s(item, name)
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("{what} {name}: {e}")))
}

/// An item under construction: its key first, then attributes; absent optional values are left
/// out rather than stored as nulls.
pub struct ItemBuilder(Item);

impl ItemBuilder {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self(HashMap::from([
            (PK.to_owned(), s(pk)),
            (SK.to_owned(), s(sk)),
        ]))
    }

    pub fn s(mut self, name: &str, v: impl Into<String>) -> Self {
        self.0.insert(name.to_owned(), s(v));
        self
    }

    pub fn n(mut self, name: &str, v: impl ToString) -> Self {
        self.0.insert(name.to_owned(), n(v));
        self
    }

    pub fn opt_s(self, name: &str, v: Option<impl Into<String>>) -> Self {
        match v {
            Some(v) => self.s(name, v),
            None => self,
        }
    }

    pub fn opt_n(self, name: &str, v: Option<impl ToString>) -> Self {
        match v {
            Some(v) => self.n(name, v),
            None => self,
        }
    }

    pub fn attr(mut self, name: &str, v: AttributeValue) -> Self {
        self.0.insert(name.to_owned(), v);
        self
    }

    pub fn build(self) -> Item {
        self.0
    }
}
