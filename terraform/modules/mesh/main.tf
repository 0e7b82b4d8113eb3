# Everything of a mesh but its machines, the same on every platform: where the nodes are
# (placement), what each node is told (node-config: node files, cloud-init, secrets) and what the
# applying machine gets back (mesh-files: topology.json, inventory, secrets). A scenario wires it to
# one platform module (mesh-libvirt, mesh-gcp): the platform's addresses come in, the nodes and their
# cloud-init go out, and the platform's machines come back for the files.

module "placement" {
  source     = "../placement"
  node_count = var.node_count
  mode       = var.placement.mode
  sofia_dir  = var.placement.sofia_dir
}

module "config" {
  source         = "../node-config"
  nodes          = [for n in module.placement.nodes : { id = n.id, address = var.addresses[n.id], lat = n.lat, lon = n.lon }]
  settings       = var.settings
  static_network = var.static_network
}

module "files" {
  source       = "../mesh-files"
  mesh_name    = var.name
  state_dir    = var.files.state_dir
  subnet       = var.files.subnet
  host_address = var.files.host_address
  mongodb_port = var.files.mongodb_port
  secrets      = module.config.secrets
  # root: the appliance image has no other user (SSH by key, from the node file and cloud-init)
  nodes = [for n in module.placement.nodes : merge(var.machines[n.id], { id = n.id, lat = n.lat, lon = n.lon, ssh_user = "root" })]
}
