# The two Rust functions on the OS-only runtime. Their environment is exactly what the code
# reads (lambdas/platform/src/env.rs; checked by infra/test/consistency.test.mjs): names of
# things, never secrets. DDB_ENDPOINT is for DynamoDB Local only and is never set here.

locals {
  # Origin of connect links, webhook ingress URLs and the OAuth redirect URI registered with
  # providers. The API resource does not depend on the functions, so this makes no cycle.
  public_base_url = local.custom_domain_set ? "https://${var.domain_name}" : aws_apigatewayv2_api.platform.api_endpoint
  api_environment = {
    TABLE_NAME              = aws_dynamodb_table.platform.name
    RUST_LOG                = var.log_level
    CREDENTIALS_KMS_KEY_ARN = aws_kms_key.credentials.arn
    PUBLIC_BASE_URL         = local.public_base_url
  }
  # Set only when given: an empty CATALOG_PATH would be read as a path and fail the start-up.
  api_optional_environment = {
    CATALOG_PATH = var.catalog_path
    OAUTH_APPS   = var.oauth_apps_path
  }
  jobs_environment = {
    TABLE_NAME              = aws_dynamodb_table.platform.name
    RUST_LOG                = var.log_level
    CREDENTIALS_KMS_KEY_ARN = aws_kms_key.credentials.arn
    PUBLIC_BASE_URL         = local.public_base_url
  }
  # Polls run tools through the executor: the same catalog and OAuth settings as api.
  jobs_optional_environment = {
    CATALOG_PATH = var.catalog_path
    OAUTH_APPS   = var.oauth_apps_path
  }
}

resource "aws_lambda_function" "api" {
  # checkov:skip=CKV_AWS_117:No VPC: the function reaches DynamoDB and KMS over their public endpoints and third-party APIs on the internet; a VPC would add NAT gateways and nothing to protect.
  # checkov:skip=CKV_AWS_116:Invoked synchronously by API Gateway only; a dead-letter queue applies to asynchronous invocations, and failed requests are answered to the caller.
  # checkov:skip=CKV_AWS_115:Concurrency is bounded by the API stage's throttling; reserving concurrency takes it from the account pool (new accounts have 10 in all) and would fail the apply there.
  # checkov:skip=CKV_AWS_272:Packages are built by cargo lambda from the reviewed repository; there is no AWS Signer profile to sign them with.
  # checkov:skip=CKV_AWS_173:The environment holds no secret (table name, log filter, a key ARN, a path); it is encrypted at rest with the AWS-managed key, and a customer key would need kms:Decrypt on a second key for no gain.
  function_name    = local.api_name
  description      = "Companion platform: REST /api/v1, MCP, connect pages and OAuth callback"
  role             = aws_iam_role.api.arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.lambda_architecture]
  filename         = var.api_zip_path
  source_code_hash = filebase64sha256(var.api_zip_path)
  memory_size      = var.api_memory_mb
  timeout          = var.api_timeout_s

  environment {
    variables = merge(
      local.api_environment,
      { for k, v in local.api_optional_environment : k => v if v != null },
    )
  }

  tracing_config {
    mode = "Active"
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.api.name
  }

  depends_on = [aws_iam_role_policy.api]
}

resource "aws_lambda_function" "jobs" {
  # checkov:skip=CKV_AWS_117:No VPC: the function reaches DynamoDB, KMS and users' webhook endpoints over the internet; a VPC would add NAT gateways and nothing to protect.
  # checkov:skip=CKV_AWS_272:Packages are built by cargo lambda from the reviewed repository; there is no AWS Signer profile to sign them with.
  # checkov:skip=CKV_AWS_173:The environment holds no secret (table name, log filter, a key ARN); it is encrypted at rest with the AWS-managed key.
  function_name                  = local.jobs_name
  description                    = "Companion platform: trigger polling and webhook deliveries (scheduled)"
  role                           = aws_iam_role.jobs.arn
  runtime                        = "provided.al2023"
  handler                        = "bootstrap"
  architectures                  = [var.lambda_architecture]
  filename                       = var.jobs_zip_path
  source_code_hash               = filebase64sha256(var.jobs_zip_path)
  memory_size                    = var.jobs_memory_mb
  timeout                        = var.jobs_timeout_s
  reserved_concurrent_executions = var.jobs_reserved_concurrency

  environment {
    variables = merge(
      local.jobs_environment,
      { for k, v in local.jobs_optional_environment : k => v if v != null },
    )
  }

  dead_letter_config {
    target_arn = aws_sqs_queue.jobs_dlq.arn
  }

  tracing_config {
    mode = "Active"
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.jobs.name
  }

  depends_on = [aws_iam_role_policy.jobs]
}

# Our logs are JSON lines already (tracing-subscriber), so the Text format passes them through.
resource "aws_cloudwatch_log_group" "api" {
  name              = local.api_log_group
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.logs.arn
}

resource "aws_cloudwatch_log_group" "jobs" {
  name              = local.jobs_log_group
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.logs.arn
}
