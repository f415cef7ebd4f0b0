//! The platform's storage: every repository port of `platform-domain` implemented over one
//! DynamoDB table ([`DynamoStore`]), the table's layout ([`table`], [`layout`]) and secrets at rest
//! ([`sealed::Sealer`], local or KMS envelopes behind the domain's `SecretBox`).
//!
//! This is the only crate of the platform that talks to AWS (DynamoDB and KMS). It holds no
//! rules: what a conflict or a missing item means is the domain's business; here it is only how
//! items are keyed, written conditionally, claimed and read back.
//!
//! Modules, leaves first: `error` (SDK errors as `StoreError`), [`table`] (the table and its
//! index), [`layout`] (keys of every item type), [`item`] (attribute values, the item builder),
//! `dynamo` (the store, the one paging loop, the conditional put, the due-index claim), then one
//! module per port, [`sealed`] and [`aws`] (SDK configuration).

mod accounts;
pub mod aws;
mod connections;
mod custom;
mod dynamo;
mod error;
pub mod item;
pub mod layout;
mod outbox;
mod runs;
pub mod sealed;
pub mod table;
mod triggers;

pub use dynamo::DynamoStore;
pub use sealed::Sealer;
