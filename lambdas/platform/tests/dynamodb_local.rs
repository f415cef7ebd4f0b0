//! The store talks to a real DynamoDB engine: DynamoDB Local, started by the test command.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};

fn endpoint() -> String {
    std::env::var(platform::env::ENDPOINT_VAR)
        .expect("DDB_ENDPOINT must point at DynamoDB Local (the test command starts it)")
}

#[tokio::test]
async fn conditional_put_refuses_a_duplicate_key() {
    let _ = endpoint();
    let client = platform::bootstrap::dynamodb_client().await;
    let table = format!("t-{}-{}", std::process::id(), line!());
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attribute definition"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .expect("key schema"),
        )
        .send()
        .await
        .expect("create table");

    let put = |v: &'static str| {
        client
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S("key#1".into()))
            .item("v", AttributeValue::S(v.into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
    };
    put("first").await.expect("first write succeeds");
    let second = put("second").await;
    let err = second.expect_err("a second write to the same key must be refused");
    assert!(
        err.as_service_error()
            .is_some_and(|e| e.is_conditional_check_failed_exception()),
        "unexpected error: {err:?}"
    );

    let got = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("key#1".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("get item");
    let item = got.item().expect("item exists");
    assert_eq!(
        item.get("v")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str),
        Some("first")
    );

    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .expect("delete table");
}
