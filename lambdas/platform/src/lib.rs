//! Companion integration platform: domain, DynamoDB store, REST and MCP routers.

pub mod catalog;
pub mod search;
pub mod store;
