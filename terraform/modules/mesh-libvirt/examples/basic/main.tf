# 3 appliance VMs on an isolated network (libvirtd: terraform/hack/libvirt.sh start).
terraform {
  required_providers {
    libvirt = {
      source  = "dmacvicar/libvirt"
      version = "0.8.3"
    }
  }
}

provider "libvirt" {
  uri = "qemu:///system"
}

variable "image_path" {
  description = "The appliance VM image (make image-vm)."
  type        = string
  default     = "/var/lib/syncmesh/syncmesh-edge-vm-amd64.qcow2"
}

module "placement" {
  source     = "../../../placement"
  mode       = "list"
  node_count = 3
  locations  = [{ lat = 42.6977, lon = 23.3219 }, { lat = 42.651, lon = 23.379 }, { lat = 42.665, lon = 23.288 }]
}

module "mesh" {
  source     = "../.."
  name       = "smex"
  nodes      = module.placement.nodes
  image_path = var.image_path
  pool_dir   = "/var/lib/syncmesh/smex-pool"
  log_dir    = "/var/log/syncmesh"
}

output "nodes" {
  description = "Addresses, domains and taps."
  value       = module.mesh.nodes
}
