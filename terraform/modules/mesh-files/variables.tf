variable "mesh_name" {
  description = "Name of the mesh (modules/mesh validates it): names the folder under state_dir."
  type        = string
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
}

variable "secrets" {
  description = "The mesh's mesh_secret and write_key, and registry_auth (map node id => user:password of its registry), as modules/node-config's secrets output (where they are generated or validated). Written to STATE_DIR/MESH_NAME/.secrets/mesh-secret, .secrets/write-key and .secrets/registry-auth/NODE_ID (mode 0600), where the Ansible playbooks read them beside the inventory (syncmesh_write_key_file's and faasd_registry_auth_file's defaults); topology.json names the files, never the values; data writes send Authorization: Bearer <write key>."
  type = object({
    mesh_secret   = string
    write_key     = string
    registry_auth = map(string)
  })
  sensitive = true
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
