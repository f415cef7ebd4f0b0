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
