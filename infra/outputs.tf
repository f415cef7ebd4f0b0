output "platform_url" {
  description = "Base URL of the platform (SDKs, MCP clients): the custom domain when set, else the API's execute-api URL. REST is under /api/v1, MCP at /mcp."
  value       = local.custom_domain_set ? "https://${var.domain_name}" : aws_apigatewayv2_api.platform.api_endpoint
}

output "custom_domain_target" {
  description = "DNS target (CNAME or alias) for domain_name; null without a custom domain."
  value       = local.custom_domain_set ? aws_apigatewayv2_domain_name.platform[0].domain_name_configuration[0].target_domain_name : null
}

output "table_name" {
  description = "The platform table: export it as TABLE_NAME for `api admin ...` commands."
  value       = aws_dynamodb_table.platform.name
}

output "credentials_key_arn" {
  description = "ARN of the KMS key that encrypts connection credentials."
  value       = aws_kms_key.credentials.arn
}

output "jobs_dead_letter_queue_url" {
  description = "Dead-letter queue of the jobs function: failed scheduled runs land here."
  value       = aws_sqs_queue.jobs_dlq.url
}

output "api_function_name" {
  description = "Name of the api Lambda function."
  value       = aws_lambda_function.api.function_name
}

output "jobs_function_name" {
  description = "Name of the jobs Lambda function."
  value       = aws_lambda_function.jobs.function_name
}
