variable "nodes" {
  description = "Every node of the mesh: id, address (the address peers use), lat, lon."
  type = list(object({
    id      = string
    address = string
    lat     = number
    lon     = number
  }))
  validation {
    condition     = length(var.nodes) >= 3 && length(var.nodes) <= 30
    error_message = "a mesh has 3 to 30 nodes."
  }
  validation {
    condition     = alltrue([for n in var.nodes : can(regex("^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$", n.id))])
    error_message = "every node id must be a lowercase DNS label of at most 32 characters (e.g. node-1)."
  }
  validation {
    condition     = alltrue([for n in var.nodes : abs(n.lat) <= 90 && abs(n.lon) <= 180])
    error_message = "every node needs lat in [-90, 90] and lon in [-180, 180]."
  }
}

variable "mesh_secret" {
  description = "The mesh secret every node shares (at least 32 characters)."
  type        = string
  sensitive   = true
  validation {
    condition     = length(var.mesh_secret) >= 32
    error_message = "mesh_secret must be at least 32 characters (use 32 random bytes as 64 hex characters)."
  }
}

variable "write_key" {
  description = "The mesh's write key (at least 32 characters): data writes send Authorization: Bearer <key>."
  type        = string
  sensitive   = true
  validation {
    condition     = length(var.write_key) >= 32
    error_message = "write_key must be at least 32 characters (use 32 random bytes as 64 hex characters)."
  }
}

variable "ssh_authorized_keys" {
  description = "SSH public keys of root, the image's only user (key only; the image has no password)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for k in var.ssh_authorized_keys : can(regex("^(ssh-|ecdsa-|sk-)", k))])
    error_message = "every ssh_authorized_keys entry must be an OpenSSH public key line (ssh-ed25519 ..., ssh-rsa ..., ecdsa-...)."
  }
}

variable "static_network" {
  description = "Give each node its address statically (prefix_length; gateway may be null; interface: name patterns). null: the image's default (DHCP), as on GCP."
  type = object({
    prefix_length = number
    gateway       = optional(string)
    interface     = optional(list(string), ["en*", "eth*"])
  })
  default = null
  validation {
    condition     = var.static_network == null || try(var.static_network.prefix_length >= 8 && var.static_network.prefix_length <= 30, false)
    error_message = "static_network.prefix_length must be from 8 to 30."
  }
}

variable "mongodb_publish" {
  description = "Where each node publishes MongoDB's 27017: null (the image's default, 127.0.0.1), \"127.0.0.1\" or \"0.0.0.0\" (labs only, no auth: lets the mesh tools load data from outside)."
  type        = string
  default     = null
  validation {
    condition     = var.mongodb_publish == null || contains(["127.0.0.1", "0.0.0.0"], coalesce(var.mongodb_publish, "-"))
    error_message = "mongodb_publish must be null, \"127.0.0.1\" or \"0.0.0.0\"."
  }
}

variable "log_level" {
  description = "Log level of the nodes' services: fatal, error, warn, info, debug or trace."
  type        = string
  default     = "warn"
  validation {
    condition     = contains(["fatal", "error", "warn", "info", "debug", "trace"], var.log_level)
    error_message = "log_level must be one of fatal, error, warn, info, debug, trace."
  }
}

variable "node_file_path" {
  description = "Where cloud-init writes the node file inside the guest (the appliance reads it there or from its boot partition)."
  type        = string
  default     = "/etc/syncmesh/syncmesh-node.yaml"
  validation {
    condition     = startswith(var.node_file_path, "/")
    error_message = "node_file_path must be an absolute path inside the guest."
  }
}

variable "peer_timeout_s" {
  description = "The node file's peer_timeout_s: seconds a node waits for each peer's answer when it forwards a query (1 to 45; null: the image's default, 20). Raise it for slow nodes (software emulation)."
  type        = number
  default     = null
  validation {
    condition     = var.peer_timeout_s == null || try(var.peer_timeout_s == floor(var.peer_timeout_s) && var.peer_timeout_s >= 1 && var.peer_timeout_s <= 45, false)
    error_message = "peer_timeout_s must be null or whole seconds from 1 to 45 (the node's gateway ends every request at 60 s)."
  }
}
