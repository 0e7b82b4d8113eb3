locals {
  gateway  = cidrhost(var.vm.subnet, 1)
  pool_dir = "${var.vm.work_dir}/pool"
  nodes = [for n in var.nodes : merge(n, {
    address = cidrhost(var.vm.subnet, 10 + n.index)
    # locally administered, stable per mesh and node
    mac  = format("52:54:00:%s:%02x", join(":", regexall("..", substr(md5(var.name), 0, 4))), n.index)
    tap  = "${var.name}-t${n.index}"
    host = "${var.name}-${n.id}"
  })]
  by_id = { for n in local.nodes : n.id => n }
}

resource "libvirt_pool" "this" {
  name = "${var.name}-pool"
  type = "dir"
  target {
    path = local.pool_dir
  }
}

resource "libvirt_volume" "base" {
  name   = "${var.name}-base.${var.vm.image_format}"
  pool   = libvirt_pool.this.name
  source = var.vm.image_path
  format = var.vm.image_format
}

resource "libvirt_volume" "disk" {
  for_each       = local.by_id
  name           = "${each.value.host}.qcow2"
  pool           = libvirt_pool.this.name
  base_volume_id = libvirt_volume.base.id
  format         = "qcow2"
  size           = var.vm.disk_size_gb * 1024 * 1024 * 1024
}

resource "libvirt_cloudinit_disk" "seed" {
  for_each  = local.by_id
  name      = "${each.value.host}-seed.iso"
  pool      = libvirt_pool.this.name
  user_data = var.cloud_init[each.key].user_data
  meta_data = var.cloud_init[each.key].meta_data
}

# Isolated: no forwarding, no DHCP, no DNS (no dnsmasq); nodes get static addresses.
resource "libvirt_network" "this" {
  name      = "${var.name}-net"
  mode      = "none"
  bridge    = "${var.name}-br"
  addresses = [var.vm.subnet]
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
  type     = var.vm.domain_type
  memory   = var.vm.memory_mb
  vcpu     = var.vm.vcpus
  running  = var.vm.running
  firmware = var.vm.firmware
  dynamic "nvram" {
    for_each = var.vm.firmware == null ? [] : [1]
    content {
      file     = "${local.pool_dir}/${each.value.host}.vars.fd"
      template = var.vm.nvram_template
    }
  }
  kernel  = var.vm.kernel
  initrd  = var.vm.initrd
  cmdline = var.vm.kernel == null ? null : [{ "_" = var.vm.kernel_cmdline }]

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
      logfile     = "${var.vm.work_dir}/logs/${each.value.host}.console.log"
      tb_cache_mb = var.vm.domain_type == "qemu" && var.vm.tcg_tb_cache_mb > 0 ? var.vm.tcg_tb_cache_mb : null
    })
  }
}
