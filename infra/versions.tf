terraform {
  # 1.0 is the oldest release whose language features this module uses; the offline checks run
  # Terraform 1.0.3 (the last release on PyPI), so a higher floor would refuse to parse.
  required_version = ">= 1.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
  }
}
