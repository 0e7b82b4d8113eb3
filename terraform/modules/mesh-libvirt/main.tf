locals {
  gateway = cidrhost(var.subnet, 1)
  nodes = [for n in var.nodes : merge(n, {
    address = cidrhost(var.subnet, 10 + n.index)
    # locally administered, stable per mesh and node
    mac  = format("52:54:00:%s:%02x", join(":", regexall("..", substr(md5(var.name), 0, 4))), n.index)
    tap  = "${var.name}-t${n.index}"
    host = "${var.name}-${n.id}"
  })]
  by_id = { for n in local.nodes : n.id => n }
}

resource "random_id" "mesh_secret" {
  byte_length = 32
}

resource "random_id" "write_key" {
  byte_length = 32
}

module "config" {
  source              = "../node-config"
  nodes               = [for n in local.nodes : { id = n.id, address = n.address, lat = n.lat, lon = n.lon }]
  mesh_secret         = random_id.mesh_secret.hex
  write_key           = random_id.write_key.hex
  ssh_authorized_keys = var.ssh_authorized_keys
  node_file_path      = var.node_file_path
  static_network      = { prefix_length = 24 }
  mongodb_publish     = var.mongodb_publish
  peer_timeout_s      = var.peer_timeout_s
}

resource "libvirt_pool" "this" {
  name = "${var.name}-pool"
  type = "dir"
  target {
    path = var.pool_dir
  }
}

resource "libvirt_volume" "base" {
  name   = "${var.name}-base.${var.image_format}"
  pool   = libvirt_pool.this.name
  source = var.image_path
  format = var.image_format
}

resource "libvirt_volume" "disk" {
  for_each       = local.by_id
  name           = "${each.value.host}.qcow2"
  pool           = libvirt_pool.this.name
  base_volume_id = libvirt_volume.base.id
  format         = "qcow2"
  size           = var.disk_size_gb * 1024 * 1024 * 1024
}

resource "libvirt_cloudinit_disk" "seed" {
  for_each  = local.by_id
  name      = "${each.value.host}-seed.iso"
  pool      = libvirt_pool.this.name
  user_data = module.config.user_data[each.key]
  meta_data = module.config.meta_data[each.key]
}

# Isolated: no forwarding, no DHCP, no DNS (no dnsmasq); nodes get static addresses.
resource "libvirt_network" "this" {
  name      = "${var.name}-net"
  mode      = "none"
  bridge    = "${var.name}-br"
  addresses = [var.subnet]
  autostart = false
  dhcp {
    enabled = false
  }
  dns {
    enabled = false
  }
}

resource "libvirt_domain" "node" {
  for_each = local.by_id
  name     = each.value.host
  type     = var.domain_type
  memory   = var.memory_mb
  vcpu     = var.vcpus
  running  = var.running
  firmware = var.firmware
  dynamic "nvram" {
    for_each = var.firmware == null ? [] : [1]
    content {
      file     = "${var.pool_dir}/${each.value.host}.vars.fd"
      template = var.nvram_template
    }
  }
  kernel  = var.kernel
  initrd  = var.initrd
  cmdline = var.kernel == null ? null : [{ "_" = var.kernel_cmdline }]

  disk {
    volume_id = libvirt_volume.disk[each.key].id
  }

  # The NoCloud seed as a second virtio disk (/dev/vdb, label cidata; the XSLT turns the
  # provider's IDE CD-ROM into it): the appliance's cloud kernel has no AHCI, and IDE probing
  # under software emulation took minutes here.
  disk {
    file = split(";", libvirt_cloudinit_disk.seed[each.key].id)[0]
  }

  network_interface {
    network_id = libvirt_network.this.id
    mac        = each.value.mac
  }

  console {
    type        = "pty"
    target_type = "serial"
    target_port = "0"
  }

  # What the provider has no attribute for: the tap name (capture on NAME-tI), the serial
  # console's log file and, under software emulation, the size of QEMU's translation cache.
  xml {
    xslt = templatefile("${path.module}/domain.xsl.tftpl", {
      tap         = each.value.tap
      logfile     = "${var.log_dir}/${each.value.host}.console.log"
      tb_cache_mb = var.domain_type == "qemu" ? var.tcg_tb_cache_mb : null
    })
  }
}
