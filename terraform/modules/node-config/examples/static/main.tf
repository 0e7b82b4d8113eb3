# The node files of a 3-node mesh with static addresses, every optional field set: what
# terraform/hack/tf.sh test feeds to the appliance's own node-file validator
# (images/appliance/firstboot/nodefile.py), so the files Terraform writes are the files a node accepts.
# `tofu apply` only evaluates the module (the random secrets it also makes are not used: both are given).
module "config" {
  source = "../.."
  nodes = [
    { id = "node-1", address = "10.61.0.11", lat = 42.6977, lon = 23.3219 },
    { id = "node-2", address = "10.61.0.12", lat = 42.651, lon = 23.379 },
    { id = "node-3", address = "10.61.0.13", lat = 42.665, lon = 23.288 },
  ]
  static_network = { prefix_length = 24, gateway = "10.61.0.1" }
  settings = {
    # example values only (a real mesh gets random ones: leave them null)
    mesh_secret         = "example-mesh-secret-0123456789abcdef0123456789abcdef"
    write_key           = "example-write-key-0123456789abcdef0123456789abcdef"
    ssh_authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnlyForTheContractTest example"]
    mongodb_publish     = "0.0.0.0"
    log_level           = "info"
    peer_timeout_s      = 45
  }
}

output "node_files" {
  description = "Map node id => node file text (example secrets only)."
  value       = module.config.node_files
  sensitive   = true
}
