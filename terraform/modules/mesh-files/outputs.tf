output "topology" {
  description = "The topology object written to topology.json (format of scenarios/mesh/src/plan/topology.ts, runtime faasd)."
  value       = local.topology
}

output "topology_path" {
  description = "STATE_DIR/MESH_NAME/topology.json (also copied to STATE_DIR/topology.json, which the mesh clients and make scenario read)."
  value       = local_file.topology["${local.dir}/topology.json"].filename
}

output "inventory" {
  description = "The Ansible inventory (YAML text; format of ansible/inventories/example/hosts.yml, group syncmesh_nodes)."
  value       = local_file.inventory.content
}

output "inventory_path" {
  description = "STATE_DIR/MESH_NAME/inventory.yml: ansible-playbook -i <this> syncmesh.edge.verify (or .site)."
  value       = local_file.inventory.filename
}

output "write_key_file" {
  description = "File holding the write key (mode 0600): INVENTORY_FOLDER/.secrets/write-key, where the playbooks read it and what topology.json names."
  value       = local_sensitive_file.write_key.filename
}

output "secret_file" {
  description = "File holding the mesh secret (mode 0600), beside the inventory where the playbooks look for it."
  value       = local_sensitive_file.mesh_secret.filename
}

output "registry_auth_files" {
  description = "Map node id => file holding the user:password of that node's registry (mode 0600; INVENTORY_FOLDER/.secrets/registry-auth/NODE_ID): what topology.json names as registry_auth_file, for faas-cli push, skopeo and the mesh deploy."
  value       = { for id, f in local_sensitive_file.registry_auth : id => f.filename }
}
