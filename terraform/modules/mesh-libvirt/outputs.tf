output "addresses" {
  description = "Map node id => its static address on the isolated network (known at plan time: what modules/mesh writes into the peers' node files)."
  value       = { for n in local.nodes : n.id => n.address }
}

output "machines" {
  description = "Map node id => address (what the applying machine reaches), domain (libvirt domain name), tap (host side of its link: capture here) as host_interface in namespace (vm.netns), mac."
  value = { for n in local.nodes : n.id => {
    address        = n.address
    domain         = libvirt_domain.node[n.id].name
    host_interface = n.tap
    namespace      = var.vm.netns
    mac            = n.mac
  } }
}

output "network" {
  description = "The isolated network: name, bridge, subnet, gateway (the bridge's address)."
  value = {
    name    = libvirt_network.this.name
    bridge  = libvirt_network.this.bridge
    subnet  = var.vm.subnet
    gateway = local.gateway
  }
}
