# The Google Cloud scenarios: N appliance instances spread over zones, round robin. One root for
# every size: the preset names gcp-regional-3 and gcp-regional-12 (../presets.json: 3 or 12 nodes
# in europe-west3-a/b/c, the paper's setting) give node count and zones; node_count and zones
# override them. Step by step: docs/guides/terraform-scenarios.md, "Google Cloud".
#   tofu init && tofu apply -var preset=gcp-regional-3 -var-file=gcp.tfvars
terraform {
  # 1.9: the preset validation reads presets.json
  required_version = ">= 1.9.0"
  # local state; give a path per mesh at init (-backend-config=path=...) to keep several.
  # hashicorp/google is the default source of the provider block below; modules/mesh-gcp pins its version.
  backend "local" {}
}

variable "preset" {
  description = "Named scenario from ../presets.json: gcp-regional-3 or gcp-regional-12 (node count and zones)."
  type        = string
  default     = "gcp-regional-3"
  validation {
    condition     = try(jsondecode(file("${path.module}/../presets.json"))[var.preset].target == "gcp", false)
    error_message = "preset must be one of ${join(", ", [for n, p in jsondecode(file("${path.module}/../presets.json")) : n if p.target == "gcp"])} (terraform/roots/presets.json)."
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
  description = "What the operator provides (TF_VAR_run, JSON, or a .tfvars file): project, image, bucket, operator CIDRs, root's SSH keys (at least one: Ansible and the checks log in as root with them); optional fields have the defaults shown."
  type = object({
    project             = string
    image_tarball       = string
    bucket_name         = string
    operator_cidrs      = list(string)
    state_dir           = string
    machine_type        = optional(string, "e2-small")
    placement           = optional(string, "sofia")
    sofia_dir           = optional(string)
    ssh_authorized_keys = list(string)
  })
  validation {
    condition     = length(var.run.ssh_authorized_keys) >= 1
    error_message = "run.ssh_authorized_keys must hold at least one OpenSSH public key line (root's; e.g. the content of ~/.ssh/id_ed25519.pub): without one no playbook can reach the instances."
  }
}

# Credentials come from the environment (gcloud auth application-default login, or
# GOOGLE_APPLICATION_CREDENTIALS); nothing about the account is written here.
provider "google" {
  project = var.run.project
}

locals {
  preset     = jsondecode(file("${path.module}/../presets.json"))[var.preset]
  node_count = coalesce(var.node_count, local.preset.node_count)
  name       = coalesce(var.name, "smg${local.node_count}")
}

module "mesh" {
  source     = "../../modules/mesh"
  name       = local.name
  node_count = local.node_count
  placement  = { mode = var.run.placement, sofia_dir = var.run.sofia_dir }
  settings   = { ssh_authorized_keys = var.run.ssh_authorized_keys }
  addresses  = module.instances.addresses
  machines   = module.instances.machines
  files      = { state_dir = var.run.state_dir }
}

module "instances" {
  source         = "../../modules/mesh-gcp"
  project        = var.run.project
  name           = local.name
  nodes          = module.mesh.nodes
  cloud_init     = module.mesh.cloud_init
  zones          = coalesce(var.zones, local.preset.zones)
  machine_type   = var.run.machine_type
  image_tarball  = var.run.image_tarball
  bucket_name    = var.run.bucket_name
  operator_cidrs = var.run.operator_cidrs
}

output "stack" {
  description = "nodes (id, zone, region, internal and external address, instance) and the files written (topology_path, inventory_path, inventory, write_key_file, registry_auth_files)."
  value = merge(module.mesh.files, {
    nodes = [for n in module.mesh.nodes : merge(n, module.instances.machines[n.id])]
  })
}
