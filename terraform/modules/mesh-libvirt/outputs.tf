output "nodes" {
  description = "One object per node: id, index, lat, lon, address (static, on the isolated network), domain (libvirt domain name), tap (host side of its link: capture here), mac."
  value = [for n in local.nodes : {
    id      = n.id
    index   = n.index
    lat     = n.lat
    lon     = n.lon
    address = n.address
    domain  = libvirt_domain.node[n.id].name
    tap     = n.tap
    mac     = n.mac
  }]
}

output "network" {
  description = "The isolated network: name, bridge, subnet, gateway (the bridge's address)."
  value = {
    name    = libvirt_network.this.name
    bridge  = libvirt_network.this.bridge
    subnet  = var.subnet
    gateway = local.gateway
  }
}

output "mesh_secret" {
  description = "The generated mesh secret (64 hex characters), in every node file."
  value       = random_id.mesh_secret.hex
  sensitive   = true
}

output "write_key" {
  description = "The generated write key (64 hex characters), in every node file."
  value       = random_id.write_key.hex
  sensitive   = true
}

output "node_files" {
  description = "Map node id => node file text as given to the VM (sensitive: holds the mesh secret)."
  value       = module.config.node_files
  sensitive   = true
}
