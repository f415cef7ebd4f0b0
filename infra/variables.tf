variable "region" {
  description = "AWS region of the platform (Lambda, API Gateway, DynamoDB)."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Prefix of every resource name; also the default tag `project`."
  type        = string
  default     = "companion"
}

variable "lambda_architecture" {
  description = "CPU architecture of both functions: x86_64 (what CI builds: `cargo lambda build --profile lambda --x86-64`) or arm64 (`--arm64`, needs the aarch64 Rust target). Must match the zips."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.lambda_architecture)
    error_message = "The lambda_architecture must be arm64 or x86_64."
  }
}

variable "api_zip_path" {
  description = "Path of the api function's package, as written by `cargo lambda build --profile lambda --x86-64 --output-format zip --lambda-dir target/lambda` (relative to infra/)."
  type        = string
  default     = "../target/lambda/api/bootstrap.zip"
}

variable "jobs_zip_path" {
  description = "Path of the jobs function's package (relative to infra/)."
  type        = string
  default     = "../target/lambda/jobs/bootstrap.zip"
}

variable "api_memory_mb" {
  description = "Memory of the api function in MB (CPU share grows with it)."
  type        = number
  default     = 512
}

variable "api_timeout_s" {
  description = "Timeout of the api function in seconds; API Gateway gives up after 30 s anyway."
  type        = number
  default     = 29
}

variable "jobs_memory_mb" {
  description = "Memory of the jobs function in MB."
  type        = number
  default     = 256
}

variable "jobs_timeout_s" {
  description = "Timeout of the jobs function in seconds; below the schedule period so runs do not pile up."
  type        = number
  default     = 55
}

variable "jobs_reserved_concurrency" {
  description = "Reserved concurrency of the jobs function: 1 keeps scheduled runs from overlapping. Accounts still at Lambda's default limit of 10 cannot reserve any (10 must stay unreserved): raise the limit, or set -1 (no reservation) until then."
  type        = number
  default     = 1
}

variable "jobs_schedule" {
  description = "EventBridge schedule expression of the jobs function."
  type        = string
  default     = "rate(1 minute)"
}

variable "log_level" {
  description = "RUST_LOG of both functions (a tracing filter, e.g. `info` or `platform=debug,info`)."
  type        = string
  default     = "info"
}

variable "catalog_path" {
  description = "CATALOG_PATH of the api function: the catalog artifact inside the package (`--include lambdas/catalog/dist/catalog.bin.zst` keeps that path under /var/task). Null leaves it unset and the catalog empty."
  type        = string
  default     = "/var/task/lambdas/catalog/dist/catalog.bin.zst"
}

variable "log_retention_days" {
  description = "Retention of the functions' and the API's log groups, in days."
  type        = number
  default     = 365
}

variable "throttle_rate_limit" {
  description = "Steady-state requests per second the API stage accepts (all clients together); the per-key 120/min limit is the function's."
  type        = number
  default     = 100
}

variable "throttle_burst_limit" {
  description = "Burst size of the API stage's token bucket."
  type        = number
  default     = 200
}

variable "table_deletion_protection" {
  description = "Refuse to delete the table (turn off only to tear down a test stack)."
  type        = bool
  default     = true
}

variable "domain_name" {
  description = "Optional custom domain of the platform, e.g. platform.example.com. Empty: use the API's execute-api URL."
  type        = string
  default     = ""
}

variable "certificate_arn" {
  description = "ACM certificate (same region) covering domain_name; required when domain_name is set."
  type        = string
  default     = ""
}
