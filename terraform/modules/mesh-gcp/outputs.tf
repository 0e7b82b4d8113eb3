output "addresses" {
  description = "Map node id => its static internal address (known at plan time: what modules/mesh writes into the peers' node files)."
  value       = { for n in local.placed : n.id => n.address }
}

output "machines" {
  description = "Map node id => address (external: what the operator reaches), internal_address, zone, region, instance (name)."
  value = { for n in local.placed : n.id => {
    address          = google_compute_instance.node[n.id].network_interface[0].access_config[0].nat_ip
    internal_address = n.address
    zone             = n.zone
    region           = n.region
    instance         = google_compute_instance.node[n.id].name
  } }
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
