# The mesh's two secrets: the operator's, or 32 random bytes each.
resource "random_id" "secret" {
  for_each    = toset(["mesh_secret", "write_key"])
  byte_length = 32
}

# Each node's registry password (images/node/node.yml's registry, basic auth): generated here, so
# the operator can push to every node (mesh-files writes registry_auth_file); the node uses it
# instead of generating its own (the node file's registry_password). Letters and digits: it is
# written as user:password and hashed with bcrypt (which reads 72 bytes at most).
resource "random_password" "registry" {
  for_each = toset(var.nodes[*].id)
  length   = 40
  special  = false
}

locals {
  secrets = { for k, r in random_id.secret : k => coalesce(var.settings[k], r.hex) }
  s       = var.settings
  # the registry's user on every node (images/node/node-prepare.sh, the Ansible faasd role's faasd_registry_user)
  registry_user = "syncmesh"

  # The node file of the appliance image (images/appliance/README.md, "The node file"); it
  # refuses unknown fields, so only documented ones are written, and optional ones only when set.
  node_files = { for n in var.nodes : n.id => yamlencode(merge(
    {
      node_id     = n.id
      lat         = n.lat
      lon         = n.lon
      mesh_secret = local.secrets.mesh_secret
      write_key   = local.secrets.write_key
      # registry_password: the node's registry's password (random_password.registry)
      registry_password = random_password.registry[n.id].result
      discovery         = "static"
      peers             = [for p in var.nodes : "${p.id}@${p.address}" if p.id != n.id]
      address           = n.address
      log_level         = local.s.log_level
    },
    var.static_network == null ? {} : {
      network = merge(
        { address = "${n.address}/${var.static_network.prefix_length}", interface = join(" ", var.static_network.interface) },
        var.static_network.gateway == null ? {} : { gateway = var.static_network.gateway },
      )
    },
    local.s.mongodb_publish == null ? {} : { mongodb_publish = local.s.mongodb_publish },
    local.s.peer_timeout_s == null ? {} : { peer_timeout_s = local.s.peer_timeout_s },
    length(local.s.ssh_authorized_keys) == 0 ? {} : { ssh_authorized_keys = local.s.ssh_authorized_keys },
  )) }

  # cloud-init (NoCloud seed or GCE metadata): the node file, root only; cloud-init's own
  # network, growpart and host name handling are off in the image (the node file decides).
  user_data = { for n in var.nodes : n.id => "#cloud-config\n${yamlencode(merge(
    {
      write_files = [{
        path        = local.s.node_file_path
        permissions = "0600"
        owner       = "root:root"
        content     = local.node_files[n.id]
      }]
    },
    length(local.s.ssh_authorized_keys) == 0 ? {} : { ssh_authorized_keys = local.s.ssh_authorized_keys },
  ))}" }

  meta_data = { for n in var.nodes : n.id => yamlencode({ "instance-id" = n.id, "local-hostname" = n.id }) }
}
