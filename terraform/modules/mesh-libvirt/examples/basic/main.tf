# 3 appliance VMs on an isolated network (libvirtd: terraform/hack/libvirt.sh start), wired to
# modules/mesh as roots/local does: the VMs' addresses in, the node files out.
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

module "mesh" {
  source         = "../../../mesh"
  name           = "smex"
  node_count     = 3
  placement      = { mode = "grid" }
  static_network = { prefix_length = 24 }
  addresses      = module.vms.addresses
  machines       = module.vms.machines
  files          = { state_dir = "/var/lib/syncmesh/mesh" }
}

module "vms" {
  source     = "../.."
  name       = "smex"
  nodes      = module.mesh.nodes
  cloud_init = module.mesh.cloud_init
  vm         = { image_path = var.image_path, work_dir = "/var/lib/syncmesh/smex" }
}

output "machines" {
  description = "Addresses, domains and taps."
  value       = module.vms.machines
}
