# The local scenarios: N appliance VMs (libvirt, software emulation) on one isolated bridge, placed
# at the Sofia sensors 1..N (or a grid). One root for every size: the preset names local-3,
# local-12 and local-30 (../presets.json) give the node count; node_count overrides it.
#   make tf-up SCENARIO=local-3          (terraform/hack/tf.sh passes preset, prefix and run)
terraform {
  # 1.9: the preset validation reads presets.json
  required_version = ">= 1.9.0"
  # the state path is given at init (-backend-config=path=...; tf.sh keeps one per preset under .cache)
  backend "local" {}
  # the provider's source, for the provider block below; its version is pinned in modules/mesh-libvirt
  required_providers {
    libvirt = { source = "dmacvicar/libvirt" }
  }
}

variable "preset" {
  description = "Named scenario from ../presets.json: local-3, local-12 or local-30 (its node count)."
  type        = string
  default     = "local-3"
  validation {
    condition     = try(jsondecode(file("${path.module}/../presets.json"))[var.preset].target == "local", false)
    error_message = "preset must be one of ${join(", ", [for n, p in jsondecode(file("${path.module}/../presets.json")) : n if p.target == "local"])} (terraform/roots/presets.json)."
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
  description = "What terraform/hack/tf.sh passes for this machine (TF_VAR_run, JSON): image, folders, placement, network; optional fields have the defaults shown."
  type = object({
    image_path          = string
    state_dir           = string
    work_dir            = string
    image_format        = optional(string, "qcow2")
    placement           = optional(string, "sofia")
    sofia_dir           = optional(string)
    firmware            = optional(string, "/usr/share/OVMF/OVMF_CODE_4M.fd")
    mongodb_publish     = optional(string)
    peer_timeout_s      = optional(number)
    kernel              = optional(string)
    initrd              = optional(string)
    kernel_cmdline      = optional(string, "root=/dev/vda rw console=ttyS0 no_timer_check")
    memory_mb           = optional(number, 1024)
    tcg_tb_cache_mb     = optional(number, 256)
    subnet              = optional(string, "10.61.0.0/24")
    host_address        = optional(string)
    libvirt_netns       = optional(string)
    ssh_authorized_keys = optional(list(string), [])
  })
}

provider "libvirt" {
  uri = var.libvirt_uri
}

locals {
  node_count = coalesce(var.node_count, jsondecode(file("${path.module}/../presets.json"))[var.preset].node_count)
  name       = "${var.prefix}${local.node_count}"
}

module "mesh" {
  source         = "../../modules/mesh"
  name           = local.name
  node_count     = local.node_count
  placement      = { mode = var.run.placement, sofia_dir = var.run.sofia_dir }
  settings       = { for k in ["ssh_authorized_keys", "mongodb_publish", "peer_timeout_s"] : k => var.run[k] }
  static_network = { prefix_length = 24 }
  addresses      = module.vms.addresses
  machines       = module.vms.machines
  files = {
    state_dir    = var.run.state_dir
    subnet       = var.run.subnet
    host_address = var.run.host_address
    mongodb_port = var.run.mongodb_publish == "0.0.0.0" ? 27017 : null
  }
}

module "vms" {
  source     = "../../modules/mesh-libvirt"
  name       = local.name
  nodes      = module.mesh.nodes
  cloud_init = module.mesh.cloud_init
  vm = merge(
    { for k, v in var.run : k => v if contains(["image_path", "image_format", "work_dir", "subnet", "memory_mb", "tcg_tb_cache_mb", "firmware", "kernel", "initrd", "kernel_cmdline"], k) },
    { netns = var.run.libvirt_netns },
  )
}

output "stack" {
  description = "nodes (id, address, domain, tap as host_interface, mac), network (name, bridge, subnet, gateway) and the files written (topology_path, inventory_path, inventory, write_key_file, registry_auth_files)."
  value = merge(module.mesh.files, {
    nodes   = [for n in module.mesh.nodes : merge(n, module.vms.machines[n.id])]
    network = module.vms.network
  })
}
