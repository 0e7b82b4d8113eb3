# The local scenarios: N appliance VMs (libvirt, software emulation) on one isolated bridge, placed
# at the Sofia sensors 1..N (or a grid). One root for every size: the preset names local-3,
# local-12 and local-30 (../presets.json) give the node count; node_count overrides it.
#   make tf-up SCENARIO=local-3          (terraform/hack/tf.sh passes preset, prefix and run)
terraform {
  # 1.9: the preset validation reads presets.json
  required_version = ">= 1.9.0"
  # the state path is given at init (-backend-config=path=...; tf.sh keeps one per preset under .cache)
  backend "local" {}
  required_providers {
    libvirt = {
      source  = "dmacvicar/libvirt"
      version = "0.8.3"
    }
  }
}

locals {
  presets    = { for name, p in jsondecode(file("${path.module}/../presets.json")) : name => p if p.target == "local" }
  node_count = coalesce(var.node_count, local.presets[var.preset].node_count)
}

variable "preset" {
  description = "Named scenario from ../presets.json: local-3, local-12 or local-30 (its node count)."
  type        = string
  default     = "local-3"
  validation {
    condition     = try(jsondecode(file("${path.module}/../presets.json"))[var.preset].target == "local", false)
    error_message = "preset must be one of ${join(", ", [for n, p in jsondecode(file("${path.module}/../presets.json")) : n if p.target == "local"])} (terraform/scenarios/presets.json)."
  }
}

variable "node_count" {
  description = "Nodes in the mesh (3 to 30); null: the preset's."
  type        = number
  default     = null
}

variable "libvirt_uri" {
  description = "libvirt connection URI (terraform/hack/libvirt.sh starts the daemon)."
  type        = string
  default     = "qemu:///system"
}

variable "prefix" {
  description = "Name prefix of every libvirt object and interface of this machine's run (terraform/hack/tf.sh sets it from TF_PREFIX); the mesh is PREFIX<node count>."
  type        = string
  default     = "smt"
}

variable "run" {
  description = "What this machine provides (image, folders, placement); typed in stacks/local. terraform/hack/tf.sh sets it."
  type        = any
}

provider "libvirt" {
  uri = var.libvirt_uri
}

module "stack" {
  source     = "../../stacks/local"
  name       = "${var.prefix}${local.node_count}"
  node_count = local.node_count
  run        = var.run
}

output "stack" {
  description = "Nodes, network, topology and inventory paths."
  value       = module.stack
}
