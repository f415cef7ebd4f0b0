//! The platform's one DynamoDB table: its definition, shared by the store, the tests (which
//! create a table per test from it) and the Terraform in `infra/` (checked against these
//! constants, through `platform`'s `print-infra-contract` example). The keys of each item type are
//! in [`crate::layout`]; the item types are documented in `lambdas/README.md`.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};

use platform_domain::StoreError;

use crate::error::{build_error, unavailable};

/// Partition key (string).
pub const PK: &str = "pk";
/// Sort key (string).
pub const SK: &str = "sk";
/// The one global secondary index: an overloaded lookup index.
pub const GSI1: &str = "gsi1";
/// Partition key of [`GSI1`] (string).
pub const GSI1_PK: &str = "gsi1pk";
/// Sort key of [`GSI1`] (string).
pub const GSI1_SK: &str = "gsi1sk";
/// TTL attribute (epoch seconds); DynamoDB deletes items after this time.
pub const TTL_ATTRIBUTE: &str = "expires_at";

fn attr(name: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(build_error)
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(build_error)
}

/// Creates the table (on-demand billing, [`GSI1`] projecting all attributes, TTL on
/// [`TTL_ATTRIBUTE`]) and waits until it is active. Used by tests and `api admin create-table`
/// for development; production tables come from Terraform.
pub async fn create_table(client: &Client, name: &str) -> Result<(), StoreError> {
    let gsi = GlobalSecondaryIndex::builder()
        .index_name(GSI1)
        .key_schema(key(GSI1_PK, KeyType::Hash)?)
        .key_schema(key(GSI1_SK, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .map_err(build_error)?;
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr(PK)?)
        .attribute_definitions(attr(SK)?)
        .attribute_definitions(attr(GSI1_PK)?)
        .attribute_definitions(attr(GSI1_SK)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?)
        .global_secondary_indexes(gsi)
        .send()
        .await
        .map_err(unavailable)?;

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let d = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(unavailable)?;
        if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        if Instant::now() > deadline {
            return Err(StoreError::Unavailable(format!(
                "table {name} did not become active within 60 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name(TTL_ATTRIBUTE)
                .enabled(true)
                .build()
                .map_err(build_error)?,
        )
        .send()
        .await
        .map_err(unavailable)?;
    Ok(())
}
