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

output "project_resources" {
  description = "What the module made in the project besides the instances: network (self link of the mesh's VPC), regions (map region => subnet CIDR), image (self link of the imported appliance image)."
  value = {
    network = google_compute_network.this.self_link
    regions = local.subnets
    image   = google_compute_image.appliance.self_link
  }
}
