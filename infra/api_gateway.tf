# The platform's public URL: an HTTP API whose routes all reach the api function (payload 2.0,
# which lambda_http decodes). The function authenticates (Bearer or /mcp/k/<KEY>) and rate-limits
# per key itself, so the routes carry no API Gateway authorizer; the stage throttles everyone
# together as a backstop.
#
# Routes:
#   ANY /api/v1/{proxy+}   REST API (including the public /catalog, /health, /openapi.json)
#   ANY /mcp               MCP server, key in `Authorization: Bearer`
#   ANY /mcp/k/{key}       MCP server, key in the path (clients that cannot send headers)
#   ANY /connect/{proxy+}  hosted connect pages (/connect/<id>, single use, 30 min)
#   GET /oauth/callback    OAuth redirect URI registered with each app's provider
# Anything else gets API Gateway's 404 without invoking the function.

resource "aws_apigatewayv2_api" "platform" {
  name          = "${var.name}-http"
  description   = "Companion platform: REST, MCP, connect pages, OAuth callback"
  protocol_type = "HTTP"
  # With a custom domain, clients must use it (so MCP Host checks and links see one origin).
  disable_execute_api_endpoint = local.custom_domain_set
}

resource "aws_apigatewayv2_integration" "api" {
  api_id                 = aws_apigatewayv2_api.platform.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.api.invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = 29000
}

locals {
  route_keys = toset([
    "ANY /api/v1/{proxy+}",
    "ANY /mcp",
    "ANY /mcp/k/{key}",
    "ANY /connect/{proxy+}",
    "GET /oauth/callback",
    # Trigger webhook ingress: the token in the path is the credential (the access log records
    # only the route template).
    "POST /hooks/{trigger}/{token}",
  ])
}

resource "aws_apigatewayv2_route" "api" {
  # checkov:skip=CKV_AWS_309:Authorization is the function's: API keys are checked against their SHA-256 in DynamoDB on every call (Bearer or the /mcp/k/ path), and the catalog, health, connect pages and OAuth callback must stay anonymous. A Lambda authorizer would double the DynamoDB reads for nothing.
  for_each           = local.route_keys
  api_id             = aws_apigatewayv2_api.platform.id
  route_key          = each.value
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "NONE"
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.platform.id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    throttling_rate_limit  = var.throttle_rate_limit
    throttling_burst_limit = var.throttle_burst_limit
  }

  # The format never contains the request path: /mcp/k/<KEY> carries an API key and
  # /connect/<id> a single-use link, and $context.path would write both into the logs.
  # $context.routeKey names the matched route template instead ("ANY /mcp/k/{key}"), which says
  # which endpoint was called and nothing secret. Query strings (OAuth code and state) are left
  # out for the same reason.
  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.access.arn
    format = jsonencode({
      requestId          = "$context.requestId"
      requestTime        = "$context.requestTime"
      sourceIp           = "$context.identity.sourceIp"
      routeKey           = "$context.routeKey"
      status             = "$context.status"
      protocol           = "$context.protocol"
      responseLength     = "$context.responseLength"
      responseLatency    = "$context.responseLatency"
      integrationLatency = "$context.integrationLatency"
      integrationError   = "$context.integrationErrorMessage"
    })
  }
}

resource "aws_cloudwatch_log_group" "access" {
  name              = local.access_log_group
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.logs.arn
}

resource "aws_lambda_permission" "api_gateway" {
  statement_id  = "AllowApiGateway"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.api.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.platform.execution_arn}/*"
}

# Optional custom domain (only when both domain_name and certificate_arn are set): a regional domain with TLS 1.2, mapped to the
# stage. Point a DNS CNAME/alias at the output custom_domain_target.
resource "aws_apigatewayv2_domain_name" "platform" {
  count       = local.custom_domain_set ? 1 : 0
  domain_name = var.domain_name

  domain_name_configuration {
    certificate_arn = var.certificate_arn
    endpoint_type   = "REGIONAL"
    security_policy = "TLS_1_2"
  }
}

resource "aws_apigatewayv2_api_mapping" "platform" {
  count       = local.custom_domain_set ? 1 : 0
  api_id      = aws_apigatewayv2_api.platform.id
  domain_name = aws_apigatewayv2_domain_name.platform[0].id
  stage       = aws_apigatewayv2_stage.default.id
}
