# The mesh description of a 3-node mesh, written into STATE_DIR: what terraform/hack/tf.sh test
# reads with the syncmesh CLI (bin/syncmesh mesh), so the file Terraform writes is the format the
# CLI and the mesh tools read (docs/reference/mesh-description.md).
variable "state_dir" {
  description = "Where to write the files (a throwaway folder)."
  type        = string
}

module "files" {
  source    = "../.."
  mesh_name = "smtc"
  state_dir = var.state_dir
  nodes = [
    { id = "node-1", address = "10.61.0.11", lat = 42.6977, lon = 23.3219, ssh_user = "debian", host_interface = "smtc-t1", namespace = "smt-lv" },
    { id = "node-2", address = "10.61.0.12", lat = 42.651, lon = 23.379, ssh_user = "debian", host_interface = "smtc-t2", namespace = "smt-lv" },
    { id = "node-3", address = "10.61.0.13", lat = 42.665, lon = 23.288, ssh_user = "debian" },
  ]
  # example values only (a real mesh gets random ones: modules/node-config)
  secrets = {
    mesh_secret   = "example-mesh-secret-0123456789abcdef0123456789abcdef"
    write_key     = "example-write-key-0123456789abcdef0123456789abcdef"
    registry_auth = { for i in range(1, 4) : "node-${i}" => "syncmesh:example-registry-password-${i}" }
  }
  subnet       = "10.61.0.0/24"
  host_address = "10.61.0.2"
  mongodb_port = 27017
}

output "topology_path" {
  description = "The topology.json written."
  value       = module.files.topology_path
}
