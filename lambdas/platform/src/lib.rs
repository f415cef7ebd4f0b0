//! Companion integration platform: domain, DynamoDB store, REST and MCP routers.

pub mod store;
