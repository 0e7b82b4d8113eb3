output "nodes" {
  description = "One object per node: id, index, lat, lon, zone, region, address (internal, static), external_address (what the operator reaches), instance (name)."
  value = [for n in local.placed : {
    id               = n.id
    index            = n.index
    lat              = n.lat
    lon              = n.lon
    zone             = n.zone
    region           = n.region
    address          = n.address
    external_address = google_compute_instance.node[n.id].network_interface[0].access_config[0].nat_ip
    instance         = google_compute_instance.node[n.id].name
  }]
}

output "regions" {
  description = "Map region => subnet CIDR of the mesh's VPC."
  value       = local.subnets
}

output "network" {
  description = "Self link of the mesh's VPC."
  value       = google_compute_network.this.self_link
}

output "image" {
  description = "Self link of the imported appliance image."
  value       = google_compute_image.appliance.self_link
}

output "mesh_secret" {
  description = "The mesh secret in every node file (given or generated)."
  value       = coalesce(var.mesh_secret, random_id.mesh_secret.hex)
  sensitive   = true
}

output "write_key" {
  description = "The generated write key in every node file."
  value       = random_id.write_key.hex
  sensitive   = true
}

output "ssh_user" {
  description = "The user SSH and the inventory use on every instance: root (the image has no other; keys from ssh_authorized_keys)."
  value       = "root"
}
