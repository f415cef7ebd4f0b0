# Three customer-managed keys, one per purpose, so each can be granted (and audited) alone:
# credentials (the functions encrypt third-party credentials with it before storing them),
# table (DynamoDB server-side encryption) and logs (CloudWatch Logs). All rotate yearly.
# Each policy keeps the account root statement: without it nobody could manage the key, and
# IAM policies (iam.tf) could not grant its use.

resource "aws_kms_key" "credentials" {
  description             = "${var.name}: encrypts connection credentials before they are stored in DynamoDB"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministers"
        Effect    = "Allow"
        Principal = { AWS = local.root_arn }
        Action    = "kms:*"
        Resource  = "*"
      },
    ]
  })
}

resource "aws_kms_alias" "credentials" {
  name          = "alias/${var.name}-credentials"
  target_key_id = aws_kms_key.credentials.key_id
}

resource "aws_kms_key" "table" {
  description             = "${var.name}: server-side encryption of the platform table"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministers"
        Effect    = "Allow"
        Principal = { AWS = local.root_arn }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        # The functions never call KMS for the table; DynamoDB does, on their behalf, and only
        # through DynamoDB (kms:ViaService), so this is no general use of the key.
        Sid       = "FunctionsThroughDynamoDB"
        Effect    = "Allow"
        Principal = { AWS = [aws_iam_role.api.arn, aws_iam_role.jobs.arn] }
        Action    = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey", "kms:CreateGrant"]
        Resource  = "*"
        Condition = {
          StringEquals = {
            "kms:ViaService"    = "dynamodb.${var.region}.amazonaws.com"
            "kms:CallerAccount" = local.account_id
          }
        }
      },
    ]
  })
}

resource "aws_kms_alias" "table" {
  name          = "alias/${var.name}-table"
  target_key_id = aws_kms_key.table.key_id
}

resource "aws_kms_key" "logs" {
  description             = "${var.name}: encrypts the functions' and the API's CloudWatch log groups"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministers"
        Effect    = "Allow"
        Principal = { AWS = local.root_arn }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        # CloudWatch Logs may use the key only for this stack's log groups.
        Sid       = "CloudWatchLogsForOurGroups"
        Effect    = "Allow"
        Principal = { Service = "logs.${var.region}.amazonaws.com" }
        Action    = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
        Resource  = "*"
        Condition = {
          ArnLike = {
            "kms:EncryptionContext:aws:logs:arn" = [
              "arn:${local.partition}:logs:${var.region}:${local.account_id}:log-group:${local.api_log_group}",
              "arn:${local.partition}:logs:${var.region}:${local.account_id}:log-group:${local.jobs_log_group}",
              "arn:${local.partition}:logs:${var.region}:${local.account_id}:log-group:${local.access_log_group}",
            ]
          }
        }
      },
    ]
  })
}

resource "aws_kms_alias" "logs" {
  name          = "alias/${var.name}-logs"
  target_key_id = aws_kms_key.logs.key_id
}
