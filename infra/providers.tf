provider "aws" {
  region = var.region

  default_tags {
    tags = {
      project = var.name
      managed = "terraform"
    }
  }
}
