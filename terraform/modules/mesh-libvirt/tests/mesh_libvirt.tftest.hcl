# The VMs alone, planned against the real libvirt provider schema with a mock provider; what goes
# into the node files is modules/node-config's (its tests), the wiring modules/mesh's.
mock_provider "libvirt" {}

variables {
  name       = "smtt"
  nodes      = [for i in range(1, 4) : { id = "node-${i}", index = i }]
  cloud_init = { for i in range(1, 4) : "node-${i}" => { user_data = "#cloud-config\n# node-${i}\n", meta_data = "instance-id: node-${i}\n" } }
  vm         = { image_path = "/tmp/appliance.qcow2", work_dir = "/tmp/smtt-work" }
}

run "three_nodes_static_addresses" {
  command = plan
  assert {
    condition     = output.addresses == { "node-1" = "10.61.0.11", "node-2" = "10.61.0.12", "node-3" = "10.61.0.13" }
    error_message = "node i gets .(10 + i)"
  }
  assert {
    condition     = libvirt_network.this.mode == "none" && libvirt_network.this.bridge == "smtt-br"
    error_message = "an isolated network on the named bridge"
  }
  assert {
    condition     = libvirt_cloudinit_disk.seed["node-2"].user_data == var.cloud_init["node-2"].user_data && libvirt_pool.this.target[0].path == "/tmp/smtt-work/pool"
    error_message = "node-2's seed carries its own cloud-init; the pool is in WORK_DIR/pool"
  }
  assert {
    condition     = strcontains(libvirt_domain.node["node-1"].xml[0].xslt, "<tb-cache unit=\"MiB\">256</tb-cache>") && strcontains(libvirt_domain.node["node-1"].xml[0].xslt, "/tmp/smtt-work/logs/smtt-node-1.console.log")
    error_message = "under software emulation each VM's translation cache is 256 MiB by default; the console log is in WORK_DIR/logs"
  }
}

run "tcg_translation_cache_qemu_default" {
  command = plan
  variables {
    vm = { image_path = "/tmp/appliance.qcow2", work_dir = "/tmp/smtt-work", tcg_tb_cache_mb = 0 }
  }
  assert {
    condition     = !strcontains(libvirt_domain.node["node-1"].xml[0].xslt, "tb-cache")
    error_message = "0 leaves QEMU's default"
  }
}

run "rejects_a_tiny_translation_cache" {
  command = plan
  variables {
    vm = { image_path = "/tmp/appliance.qcow2", work_dir = "/tmp/smtt-work", tcg_tb_cache_mb = 16 }
  }
  expect_failures = [var.vm]
}
