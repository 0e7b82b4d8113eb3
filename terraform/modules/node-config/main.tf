# The mesh's two secrets: the operator's, or 32 random bytes each.
resource "random_id" "secret" {
  for_each    = toset(["mesh_secret", "write_key"])
  byte_length = 32
}

locals {
  secrets = { for k, r in random_id.secret : k => coalesce(var.settings[k], r.hex) }
  s       = var.settings

  # The node file of the appliance image (images/appliance/README.md, "The node file"); it
  # refuses unknown fields, so only documented ones are written, and optional ones only when set.
  node_files = { for n in var.nodes : n.id => yamlencode(merge(
    {
      node_id     = n.id
      lat         = n.lat
      lon         = n.lon
      mesh_secret = local.secrets.mesh_secret
      write_key   = local.secrets.write_key
      discovery   = "static"
      peers       = [for p in var.nodes : "${p.id}@${p.address}" if p.id != n.id]
      address     = n.address
      log_level   = local.s.log_level
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
