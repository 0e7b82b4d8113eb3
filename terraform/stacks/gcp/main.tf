# A GCP mesh: placement + mesh-gcp + the shared outputs (inventory, topology.json).
# scenarios/gcp instantiates it with a preset's (or the operator's) node count and zones.
terraform {
  required_version = ">= 1.8.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
    local = {
      source  = "hashicorp/local"
      version = "2.9.0"
    }
    random = {
      source  = "hashicorp/random"
      version = "3.9.0"
    }
  }
}

variable "name" {
  description = "Prefix of every resource (2 to 8 lowercase letters and digits)."
  type        = string
}

variable "node_count" {
  description = "Nodes in the mesh (3 to 30)."
  type        = number
}

variable "zones" {
  description = "Zones the nodes are spread over, round robin."
  type        = list(string)
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
}

module "placement" {
  source     = "../../modules/placement"
  mode       = var.run.placement
  node_count = var.node_count
  sofia_dir  = var.run.sofia_dir
}

module "mesh" {
  source              = "../../modules/mesh-gcp"
  project             = var.run.project
  name                = var.name
  nodes               = module.placement.nodes
  zones               = var.zones
  machine_type        = var.run.machine_type
  image_tarball       = var.run.image_tarball
  bucket_name         = var.run.bucket_name
  operator_cidrs      = var.run.operator_cidrs
  ssh_authorized_keys = var.run.ssh_authorized_keys
}

module "files" {
  source      = "../../modules/mesh-files"
  mesh_name   = var.name
  state_dir   = var.run.state_dir
  mesh_secret = module.mesh.mesh_secret
  write_key   = module.mesh.write_key
  nodes = [for n in module.mesh.nodes : {
    id       = n.id
    address  = n.external_address
    lat      = n.lat
    lon      = n.lon
    ssh_user = module.mesh.ssh_user
  }]
}

output "nodes" {
  description = "Per node: id, zone, region, internal and external address, instance name."
  value       = module.mesh.nodes
}

output "topology_path" {
  description = "topology.json of this mesh (also copied to STATE_DIR/topology.json)."
  value       = module.files.topology_path
}

output "inventory_path" {
  description = "Ansible inventory of this mesh (ansible-playbook -i <this> syncmesh.edge.verify)."
  value       = module.files.inventory_path
}

output "inventory" {
  description = "The inventory's text (hosts, addresses, SSH user; no secret)."
  value       = module.files.inventory
}

output "write_key_file" {
  description = "The write key's file: .secrets/write-key beside the inventory, where the playbooks read it."
  value       = module.files.write_key_file
}
