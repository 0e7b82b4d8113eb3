variable "mesh_name" {
  description = "Name of the mesh: 2 to 8 lowercase letters and digits, starting with a letter. Names the folder under state_dir."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9]{1,7}$", var.mesh_name))
    error_message = "mesh_name must be 2 to 8 lowercase letters and digits, starting with a letter (e.g. smt3)."
  }
}

variable "state_dir" {
  description = "Folder the mesh clients read (the repository's .mesh): files go to STATE_DIR/MESH_NAME/ and topology.json is also copied to STATE_DIR/topology.json."
  type        = string
  validation {
    condition     = length(var.state_dir) > 0
    error_message = "state_dir must be a folder path (e.g. the repository's .mesh)."
  }
}

variable "nodes" {
  description = "The mesh's nodes: id, address (reachable from where the clients run), lat, lon, ssh_user; host_interface = where to capture this node's traffic (null when there is none) and namespace = network namespace that interface lives in (null: the host's)."
  type = list(object({
    id             = string
    address        = string
    lat            = number
    lon            = number
    ssh_user       = string
    host_interface = optional(string)
    namespace      = optional(string)
  }))
  validation {
    condition     = length(var.nodes) >= 1 && length(var.nodes) <= 30
    error_message = "nodes must list 1 to 30 nodes."
  }
  validation {
    condition     = length(distinct([for n in var.nodes : n.id])) == length(var.nodes)
    error_message = "every node id must be unique."
  }
}

variable "mesh_secret" {
  description = "The mesh secret (at least 32 characters; generated ones are 64 hex characters). Written to STATE_DIR/MESH_NAME/.secrets/mesh-secret (mode 0600), where the Ansible playbooks look for it beside the inventory; never into the inventory or topology."
  type        = string
  sensitive   = true
  validation {
    condition     = length(var.mesh_secret) >= 32
    error_message = "mesh_secret must be at least 32 characters (32 random bytes as 64 hex characters)."
  }
}

variable "write_key" {
  description = "The mesh's write key (at least 32 characters): data writes send Authorization: Bearer <key>. Written to STATE_DIR/MESH_NAME/.secrets/write-key (mode 0600), where the Ansible playbooks read it (syncmesh_write_key_file's default); topology.json names it (write_key_file)."
  type        = string
  sensitive   = true
  validation {
    condition     = length(var.write_key) >= 32
    error_message = "write_key must be at least 32 characters (32 random bytes as 64 hex characters)."
  }
}

variable "subnet" {
  description = "The nodes' subnet (CIDR), or null when they have none in common (several regions)."
  type        = string
  default     = null
}

variable "host_address" {
  description = "Address of the machine that runs the clients on the nodes' network, or null."
  type        = string
  default     = null
}

variable "latency" {
  description = "How links between the nodes are shaped, for the topology's latency field: \"none\" (real links: VMs on one bridge, or real regions)."
  type        = string
  default     = "none"
}

variable "gateway_port" {
  description = "Port of each node's OpenFaaS gateway (the function is at /function/syncmesh-fn)."
  type        = number
  default     = 8080
}

variable "agent_port" {
  description = "Port of each node's MISO agent."
  type        = number
  default     = 7070
}

variable "listener_port" {
  description = "Port of each node's change-stream listener health endpoints (/healthz, /readyz, /stats, /metrics; published by images/node/docker-compose.yaml)."
  type        = number
  default     = 8091
}

variable "mongodb_port" {
  description = "Port each node's MongoDB is reachable at from the clients (labs: the appliance's mongodb_publish 0.0.0.0), or null when it is not (topology mongodb_uri null)."
  type        = number
  default     = null
}

variable "inventory_group" {
  description = "Ansible group of the nodes (the playbooks target syncmesh_nodes)."
  type        = string
  default     = "syncmesh_nodes"
}
