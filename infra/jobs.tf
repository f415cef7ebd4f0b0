# The jobs function runs on a schedule. EventBridge invokes it asynchronously: Lambda retries a
# failed run twice, then puts the event in the dead-letter queue, where an alarm or an operator
# can see that polling stopped (the silent-trigger failure the notes warn about).

resource "aws_cloudwatch_event_rule" "jobs" {
  name                = "${local.jobs_name}-schedule"
  description         = "Runs trigger polling and webhook deliveries"
  schedule_expression = var.jobs_schedule
}

resource "aws_cloudwatch_event_target" "jobs" {
  rule = aws_cloudwatch_event_rule.jobs.name
  arn  = aws_lambda_function.jobs.arn
}

resource "aws_lambda_permission" "jobs_schedule" {
  statement_id  = "AllowEventBridgeSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.jobs.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.jobs.arn
}

# SSE-SQS (queue encryption with SQS-owned keys): encrypted at rest without giving the function
# a second KMS key to use; the events it holds are schedule ticks, not user data.
resource "aws_sqs_queue" "jobs_dlq" {
  name                      = "${local.jobs_name}-dlq"
  sqs_managed_sse_enabled   = true
  message_retention_seconds = 1209600
}
