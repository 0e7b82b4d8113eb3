output "nodes" {
  description = "The placed nodes, in order: id (node-1 ..), index (1 ..), lat, lon (for the platform module)."
  value       = module.placement.nodes
}

output "cloud_init" {
  description = "Map node id => { user_data, meta_data }: each node's cloud-init (its node file, root's SSH keys; sensitive)."
  value       = { for id, u in module.config.user_data : id => { user_data = u, meta_data = module.config.meta_data[id] } }
  sensitive   = true
}

output "files" {
  description = "What mesh-files wrote: topology (object), topology_path, inventory (text), inventory_path, write_key_file, secret_file, registry_auth_files (node id => its registry's user:password file)."
  value       = module.files
}
