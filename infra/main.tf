data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  partition  = data.aws_partition.current.partition
  root_arn   = "arn:${local.partition}:iam::${local.account_id}:root"

  table_name = "${var.name}-platform"
  api_name   = "${var.name}-api"
  jobs_name  = "${var.name}-jobs"

  # Log group names are fixed by Lambda (/aws/lambda/<function>); creating them here sets the
  # retention and the key before the first invocation would create them without either.
  api_log_group    = "/aws/lambda/${local.api_name}"
  jobs_log_group   = "/aws/lambda/${local.jobs_name}"
  access_log_group = "/aws/apigateway/${var.name}-http"
  # Both must be given (preconditions would need Terraform 1.2; the floor is 1.0).
  custom_domain_set = var.domain_name != "" && var.certificate_arn != ""
}
