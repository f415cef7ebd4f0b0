# The platform's one table, exactly as lambdas/platform-store/src/table.rs defines it (names
# checked by infra/test/consistency.test.mjs against the Rust constants): string keys pk/sk, the
# overloaded index gsi1 (gsi1pk/gsi1sk, all attributes projected) and TTL on expires_at (epoch
# seconds; rate counters and runs expire through it).
resource "aws_dynamodb_table" "platform" {
  name                        = local.table_name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.table_deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  attribute {
    name = "gsi1pk"
    type = "S"
  }

  attribute {
    name = "gsi1sk"
    type = "S"
  }

  global_secondary_index {
    name            = "gsi1"
    hash_key        = "gsi1pk"
    range_key       = "gsi1sk"
    projection_type = "ALL"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.table.arn
  }
}
