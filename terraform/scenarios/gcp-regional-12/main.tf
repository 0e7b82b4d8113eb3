# gcp-regional-12: 12 appliance instances of one region (europe-west3-a,europe-west3-b,europe-west3-c), the paper's setting.
# Plan or apply with your own project: docs/guides/terraform-scenarios.md.
terraform {
  required_version = ">= 1.8.0"
  # the state path is given by terraform/hack/tf.sh (-backend-config=path=...)
  backend "local" {}
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
  }
}

variable "run" {
  description = "What the operator provides (project, image tarball, bucket, operator CIDRs); typed in stacks/gcp."
  type        = any
}

# Credentials come from the environment (gcloud auth application-default login, or
# GOOGLE_APPLICATION_CREDENTIALS); nothing about the account is written here.
provider "google" {
  project = var.run.project
}

module "stack" {
  source     = "../../stacks/gcp"
  name       = "smg12"
  node_count = 12
  zones      = ["europe-west3-a", "europe-west3-b", "europe-west3-c"]
  run        = var.run
}

output "stack" {
  description = "Nodes (zones, addresses), topology and inventory paths."
  value       = module.stack
}
