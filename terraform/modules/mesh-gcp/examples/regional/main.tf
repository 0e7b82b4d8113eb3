# 3 e2-small instances in europe-west3, reachable from one operator address, wired to
# modules/mesh as roots/gcp does.
terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
  }
}

variable "project" {
  description = "Your GCP project id."
  type        = string
}

variable "ssh_authorized_keys" {
  description = "Your SSH public key line(s): root's on every instance."
  type        = list(string)
}

provider "google" {
  project = var.project
}

module "mesh" {
  source     = "../../../mesh"
  name       = "smex"
  node_count = 3
  placement  = { mode = "grid" }
  settings   = { ssh_authorized_keys = var.ssh_authorized_keys }
  addresses  = module.instances.addresses
  machines   = module.instances.machines
  files      = { state_dir = ".mesh" }
}

module "instances" {
  source         = "../.."
  project        = var.project
  name           = "smex"
  nodes          = module.mesh.nodes
  cloud_init     = module.mesh.cloud_init
  zones          = ["europe-west3-a", "europe-west3-b", "europe-west3-c"]
  image_tarball  = "syncmesh-edge-vm-amd64.tar.gz"
  bucket_name    = "${var.project}-syncmesh-images"
  operator_cidrs = ["203.0.113.7/32"]
}

output "machines" {
  description = "Zones and addresses."
  value       = module.instances.machines
}
