# 3 e2-small instances in europe-west3, reachable from one operator address.
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

module "placement" {
  source     = "../../../placement"
  mode       = "grid"
  node_count = 3
}

module "mesh" {
  source         = "../.."
  project        = var.project
  name           = "smex"
  nodes          = module.placement.nodes
  zones          = ["europe-west3-a", "europe-west3-b", "europe-west3-c"]
  image_tarball  = "syncmesh-edge-vm-amd64.tar.gz"
  bucket_name    = "${var.project}-syncmesh-images"
  operator_cidrs = ["203.0.113.7/32"]

  ssh_authorized_keys = var.ssh_authorized_keys
}

output "nodes" {
  description = "Zones and addresses."
  value       = module.mesh.nodes
}
