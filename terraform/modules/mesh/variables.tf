variable "name" {
  description = "The mesh's name, validated here for every platform: prefix of everything the platform module creates (VMs, networks, instances) and the folder under state_dir; 2 to 8 lowercase letters and digits, starting with a letter (so libvirt's tap NAME-t30 fits an interface name)."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9]{1,7}$", var.name))
    error_message = "name must be 2 to 8 lowercase letters and digits, starting with a letter (e.g. smt3): interface names like NAME-t30 must fit 15 characters."
  }
}

variable "node_count" {
  description = "Nodes in the mesh (3 to 30; modules/placement checks it)."
  type        = number
}

variable "placement" {
  description = "Where the nodes are (modules/placement): mode \"sofia\" (the Sofia sensors 1..N, read from sofia_dir at plan time) or \"grid\" (around Sofia, 2 km apart)."
  type = object({
    mode      = optional(string, "sofia")
    sofia_dir = optional(string)
  })
  default = {}
}

variable "settings" {
  description = "The nodes' settings (secrets, root's SSH keys, mongodb_publish, peer_timeout_s, log_level, node_file_path): passed as given to modules/node-config, which types and validates them."
  type        = any
  default     = {}
  sensitive   = true
}

variable "static_network" {
  description = "Static addressing of the node files (modules/node-config), null for the image's DHCP."
  type        = any
  default     = null
}

variable "addresses" {
  description = "From the platform module, known at plan time: map node id => the address its peers use (the node files' peers and address)."
  type        = map(string)
}

variable "machines" {
  description = "From the platform module, after apply: map node id => address the applying machine reaches, and where to capture its traffic (host_interface in namespace; null when there is none)."
  type = map(object({
    address        = string
    host_interface = optional(string)
    namespace      = optional(string)
  }))
}

variable "files" {
  description = "Where and what modules/mesh-files writes besides nodes and secrets: state_dir (the repository's .mesh), the nodes' subnet and the applying machine's address on it (null: none in common), mongodb_port (null: the nodes' MongoDB is not reachable from it)."
  type = object({
    state_dir    = string
    subnet       = optional(string)
    host_address = optional(string)
    mongodb_port = optional(number)
  })
}
