# A local mesh: placement + mesh-libvirt + the shared outputs (inventory, topology.json).
# scenarios/local instantiates it with a preset's (or the operator's) node count.
terraform {
  required_version = ">= 1.8.0"
  required_providers {
    libvirt = {
      source  = "dmacvicar/libvirt"
      version = "0.8.3"
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
  description = "Prefix of every libvirt object and interface (2 to 8 lowercase letters and digits)."
  type        = string
}

variable "node_count" {
  description = "Nodes in the mesh (3 to 30)."
  type        = number
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

module "placement" {
  source     = "../../modules/placement"
  mode       = var.run.placement
  node_count = var.node_count
  sofia_dir  = var.run.sofia_dir
}

module "mesh" {
  source              = "../../modules/mesh-libvirt"
  name                = var.name
  nodes               = module.placement.nodes
  image_path          = var.run.image_path
  image_format        = var.run.image_format
  firmware            = var.run.firmware
  kernel              = var.run.kernel
  initrd              = var.run.initrd
  kernel_cmdline      = var.run.kernel_cmdline
  memory_mb           = var.run.memory_mb
  tcg_tb_cache_mb     = var.run.tcg_tb_cache_mb
  subnet              = var.run.subnet
  pool_dir            = "${var.run.work_dir}/pool"
  log_dir             = "${var.run.work_dir}/logs"
  ssh_authorized_keys = var.run.ssh_authorized_keys
  mongodb_publish     = var.run.mongodb_publish
  peer_timeout_s      = var.run.peer_timeout_s
}

module "files" {
  source       = "../../modules/mesh-files"
  mesh_name    = var.name
  state_dir    = var.run.state_dir
  subnet       = var.run.subnet
  host_address = var.run.host_address
  mesh_secret  = module.mesh.mesh_secret
  write_key    = module.mesh.write_key
  mongodb_port = var.run.mongodb_publish == "0.0.0.0" ? 27017 : null
  nodes = [for n in module.mesh.nodes : {
    id             = n.id
    address        = n.address
    lat            = n.lat
    lon            = n.lon
    ssh_user       = "root" # the appliance image has no other user (SSH by key, node file or cloud-init)
    host_interface = n.tap
    namespace      = var.run.libvirt_netns
  }]
}

output "nodes" {
  description = "Per node: id, address, lat, lon, domain, tap."
  value       = module.mesh.nodes
}

output "network" {
  description = "The isolated network (name, bridge, subnet, gateway)."
  value       = module.mesh.network
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
