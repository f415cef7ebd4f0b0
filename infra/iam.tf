# One role per function, each allowed only what its code does.
#
# DynamoDB: the store (lambdas/platform-store/src/) calls get_item, put_item, update_item,
# query and transact_write_items. A transaction is authorised per item action (ours hold Put and
# Update), so the actions are GetItem, PutItem, UpdateItem and Query: on the table, and Query
# alone on the index. No Scan, no DeleteItem, no BatchWriteItem; create_table,
# describe_table and update_time_to_live belong to `api admin create-table` (development only,
# with an operator's credentials). infra/test/consistency.test.mjs keeps this list in step
# with the SDK calls in the Rust source.

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "api" {
  name               = "${local.api_name}-role"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role" "jobs" {
  name               = "${local.jobs_name}-role"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

locals {
  # DeleteItem: DELETE /triggers/{id} removes the trigger item; connect links and OAuth states
  # are consumed with conditional deletes.
  table_actions = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"]
  index_actions = ["dynamodb:Query"]
  # Envelope encryption of credentials: GenerateDataKey for new ones, Decrypt to read them,
  # Encrypt for small values sealed directly.
  credentials_key_actions = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"]
}

data "aws_iam_policy_document" "api" {
  statement {
    sid       = "Table"
    actions   = local.table_actions
    resources = [aws_dynamodb_table.platform.arn]
  }
  statement {
    sid       = "Index"
    actions   = local.index_actions
    resources = ["${aws_dynamodb_table.platform.arn}/index/gsi1"]
  }
  statement {
    sid       = "CredentialsKey"
    actions   = local.credentials_key_actions
    resources = [aws_kms_key.credentials.arn]
  }
  statement {
    sid       = "OwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.api.arn}:*"]
  }
  statement {
    # X-Ray has no resource-level permissions: these two actions only accept "*".
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }
}

data "aws_iam_policy_document" "jobs" {
  statement {
    sid       = "Table"
    actions   = local.table_actions
    resources = [aws_dynamodb_table.platform.arn]
  }
  statement {
    sid       = "Index"
    actions   = local.index_actions
    resources = ["${aws_dynamodb_table.platform.arn}/index/gsi1"]
  }
  statement {
    sid       = "CredentialsKey"
    actions   = local.credentials_key_actions
    resources = [aws_kms_key.credentials.arn]
  }
  statement {
    sid       = "OwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.jobs.arn}:*"]
  }
  statement {
    # Lambda sends failed asynchronous invocations to the queue with the function's role.
    sid       = "DeadLetters"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.jobs_dlq.arn]
  }
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "api" {
  name   = "${local.api_name}-policy"
  role   = aws_iam_role.api.id
  policy = data.aws_iam_policy_document.api.json
}

resource "aws_iam_role_policy" "jobs" {
  name   = "${local.jobs_name}-policy"
  role   = aws_iam_role.jobs.id
  policy = data.aws_iam_policy_document.jobs.json
}
