//! The platform's domain: accounts and keys, apps, connections, runs, triggers and custom
//! connectors as types, rules and typed errors, with the repository ports (traits) their use
//! cases need.
//!
//! What it must not do: speak HTTP (neither serve nor call), touch AWS, or read the environment.
//! Storage sits behind the ports ([`repositories::Repositories`]; `platform-store` implements
//! them on DynamoDB), secrets at rest behind [`secrets::SecretBox`], and everything that calls a
//! third party (tool runs, token refresh, webhook delivery) lives in `platform-exec` on top of
//! this crate. Services here ([`accounts`], [`tools::Toolbox`], the list/get/delete of
//! [`custom`]) are used as they are by both REST and MCP.
//!
//! Modules, leaves first: [`error`], [`ids`], [`clock`], [`validation`], [`secrets`], [`keys`],
//! [`ratelimit`], [`runs`], [`events`], [`oauth`], [`apps`] (the catalog port), [`webhooks`],
//! [`accounts`], [`connections`], [`custom`], [`triggers`], [`tools`], [`repositories`].

pub mod accounts;
pub mod apps;
pub mod clock;
pub mod connections;
pub mod custom;
pub mod error;
pub mod events;
pub mod ids;
pub mod keys;
pub mod oauth;
pub mod ratelimit;
pub mod repositories;
pub mod runs;
pub mod secrets;
pub mod tools;
pub mod triggers;
pub mod validation;
pub mod webhooks;

pub use error::StoreError;
pub use repositories::Repositories;
