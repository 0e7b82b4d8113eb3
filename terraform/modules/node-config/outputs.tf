output "node_files" {
  description = "Map node id => the node file (syncmesh-node.yaml text; holds the mesh secret: sensitive)."
  value       = local.node_files
  sensitive   = true
}

output "user_data" {
  description = "Map node id => cloud-init user-data (#cloud-config writing the node file to node_file_path, mode 0600; sensitive)."
  value       = local.user_data
  sensitive   = true
}

output "meta_data" {
  description = "Map node id => cloud-init meta-data (instance-id, local-hostname)."
  value       = local.meta_data
}

output "secrets" {
  description = "The mesh's mesh_secret and write_key (given in settings or generated; 64 hex characters when generated) and registry_auth (map node id => user:password of that node's registry, generated: the node file's registry_password): what mesh-files writes beside the inventory."
  value       = merge(local.secrets, { registry_auth = { for id, p in random_password.registry : id => "${local.registry_user}:${p.result}" } })
  sensitive   = true
}
