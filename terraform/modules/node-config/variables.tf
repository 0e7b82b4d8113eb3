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
    condition     = alltrue([for n in var.nodes : can(regex("^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$", n.id))]) && length(distinct(var.nodes[*].id)) == length(var.nodes)
    error_message = "every node id must be unique and a lowercase DNS label of at most 32 characters (e.g. node-1)."
  }
  validation {
    condition     = alltrue([for n in var.nodes : abs(n.lat) <= 90 && abs(n.lon) <= 180])
    error_message = "every node needs lat in [-90, 90] and lon in [-180, 180]."
  }
}

variable "settings" {
  description = "What the operator decides for every node, validated here once (the mesh modules pass it through): mesh_secret and write_key (at least 32 characters each; null: 32 random bytes, generated), ssh_authorized_keys (root's, the image's only user), mongodb_publish (null: the image's 127.0.0.1; \"0.0.0.0\": labs only, no auth), peer_timeout_s (whole seconds 1 to 45; null: the image's 20), log_level, node_file_path (where cloud-init writes the node file in the guest)."
  type = object({
    mesh_secret         = optional(string)
    write_key           = optional(string)
    ssh_authorized_keys = optional(list(string), [])
    mongodb_publish     = optional(string)
    peer_timeout_s      = optional(number)
    log_level           = optional(string, "warn")
    node_file_path      = optional(string, "/etc/syncmesh/syncmesh-node.yaml")
  })
  default   = {}
  sensitive = true
  validation {
    condition     = alltrue([for s in [var.settings.mesh_secret, var.settings.write_key] : s == null || try(length(s) >= 32, false)])
    error_message = "settings.mesh_secret and settings.write_key must be null (generated) or at least 32 characters (32 random bytes as 64 hex characters)."
  }
  validation {
    condition     = alltrue([for k in var.settings.ssh_authorized_keys : can(regex("^(ssh-|ecdsa-|sk-)", k))])
    error_message = "every settings.ssh_authorized_keys entry must be an OpenSSH public key line (ssh-ed25519 ..., ssh-rsa ..., ecdsa-...)."
  }
  validation {
    condition     = contains(["127.0.0.1", "0.0.0.0", "-"], coalesce(var.settings.mongodb_publish, "-"))
    error_message = "settings.mongodb_publish must be null, \"127.0.0.1\" or \"0.0.0.0\"."
  }
  validation {
    condition     = var.settings.peer_timeout_s == null || try(var.settings.peer_timeout_s == floor(var.settings.peer_timeout_s) && var.settings.peer_timeout_s >= 1 && var.settings.peer_timeout_s <= 45, false)
    error_message = "settings.peer_timeout_s must be null or whole seconds from 1 to 45 (the node's gateway ends every request at 60 s)."
  }
  validation {
    condition     = contains(["fatal", "error", "warn", "info", "debug", "trace"], var.settings.log_level) && startswith(var.settings.node_file_path, "/")
    error_message = "settings.log_level must be one of fatal, error, warn, info, debug, trace, and settings.node_file_path an absolute path inside the guest."
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
