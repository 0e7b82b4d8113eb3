# The Google Cloud scenarios: N appliance instances spread over zones, round robin. One root for
# every size: the preset names gcp-regional-3 and gcp-regional-12 (../presets.json: 3 or 12 nodes
# in europe-west3-a/b/c, the paper's setting) give node count and zones; node_count and zones
# override them. Step by step: docs/guides/terraform-scenarios.md, "Google Cloud".
#   tofu init && tofu apply -var preset=gcp-regional-3 -var-file=gcp.tfvars
terraform {
  # 1.9: the preset validation reads presets.json
  required_version = ">= 1.9.0"
  # local state; give a path per mesh at init (-backend-config=path=...) to keep several
  backend "local" {}
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
  }
}

locals {
  presets    = { for name, p in jsondecode(file("${path.module}/../presets.json")) : name => p if p.target == "gcp" }
  node_count = coalesce(var.node_count, local.presets[var.preset].node_count)
  zones      = coalesce(var.zones, local.presets[var.preset].zones)
}

variable "preset" {
  description = "Named scenario from ../presets.json: gcp-regional-3 or gcp-regional-12 (node count and zones)."
  type        = string
  default     = "gcp-regional-3"
  validation {
    condition     = try(jsondecode(file("${path.module}/../presets.json"))[var.preset].target == "gcp", false)
    error_message = "preset must be one of ${join(", ", [for n, p in jsondecode(file("${path.module}/../presets.json")) : n if p.target == "gcp"])} (terraform/scenarios/presets.json)."
  }
}

variable "node_count" {
  description = "Nodes in the mesh (3 to 30); null: the preset's."
  type        = number
  default     = null
}

variable "zones" {
  description = "Zones the nodes are spread over, round robin; null: the preset's."
  type        = list(string)
  default     = null
}

variable "name" {
  description = "Prefix of every resource (2 to 8 lowercase letters and digits); null: smg<node count>."
  type        = string
  default     = null
}

variable "run" {
  description = "What the operator provides (project, image tarball, bucket, operator CIDRs, SSH keys); typed in stacks/gcp."
  type        = any
}

# Credentials come from the environment (gcloud auth application-default login, or
# GOOGLE_APPLICATION_CREDENTIALS); nothing about the account is written here.
provider "google" {
  project = var.run.project
}

module "stack" {
  source     = "../../stacks/gcp"
  name       = coalesce(var.name, "smg${local.node_count}")
  node_count = local.node_count
  zones      = local.zones
  run        = var.run
}

output "stack" {
  description = "Nodes (zones, addresses), topology and inventory paths."
  value       = module.stack
}
