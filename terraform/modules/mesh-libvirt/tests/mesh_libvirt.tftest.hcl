mock_provider "libvirt" {}
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
}

variables {
  name       = "smtt"
  image_path = "/tmp/appliance.qcow2"
  pool_dir   = "/tmp/smtt-pool"
  log_dir    = "/tmp/smtt-logs"
  nodes      = [for i in range(1, 4) : { id = "node-${i}", index = i, lat = 42.6, lon = 23.3 }]
}

run "three_nodes_static_addresses" {
  command = plan
  assert {
    condition     = [for n in output.nodes : n.address] == ["10.61.0.11", "10.61.0.12", "10.61.0.13"]
    error_message = "node i gets .(10 + i)"
  }
  assert {
    condition     = libvirt_network.this.mode == "none" && libvirt_network.this.bridge == "smtt-br"
    error_message = "an isolated network on the named bridge"
  }
  assert {
    condition     = strcontains(libvirt_cloudinit_disk.seed["node-2"].user_data, "node-1@10.61.0.11")
    error_message = "node-2's node file lists node-1 as a peer"
  }
  assert {
    # the node file's documented form (images/appliance/README.md): names or patterns, space-separated
    condition     = yamldecode(yamldecode(trimprefix(libvirt_cloudinit_disk.seed["node-2"].user_data, "#cloud-config\n")).write_files[0].content).network == { address = "10.61.0.12/24", interface = "en* eth*" }
    error_message = "node-2's node file has its static address on the interfaces 'en* eth*'"
  }
}

run "tcg_translation_cache_is_capped" {
  command = plan
  assert {
    condition     = strcontains(libvirt_domain.node["node-1"].xml[0].xslt, "<tb-cache unit=\"MiB\">256</tb-cache>")
    error_message = "under software emulation each VM's translation cache is 256 MiB by default"
  }
}

run "tcg_translation_cache_qemu_default" {
  command = plan
  variables {
    tcg_tb_cache_mb = null
  }
  assert {
    condition     = !strcontains(libvirt_domain.node["node-1"].xml[0].xslt, "tb-cache")
    error_message = "null leaves QEMU's default"
  }
}

run "rejects_a_tiny_translation_cache" {
  command = plan
  variables {
    tcg_tb_cache_mb = 16
  }
  expect_failures = [var.tcg_tb_cache_mb]
}

run "peer_timeout_reaches_the_node_files" {
  command = plan
  variables {
    peer_timeout_s = 45
  }
  assert {
    condition     = yamldecode(yamldecode(trimprefix(libvirt_cloudinit_disk.seed["node-3"].user_data, "#cloud-config\n")).write_files[0].content).peer_timeout_s == 45
    error_message = "the node files carry peer_timeout_s"
  }
}

run "rejects_peer_timeout_over_45" {
  command = plan
  variables {
    peer_timeout_s = 46
  }
  expect_failures = [var.peer_timeout_s]
}

run "rejects_31_nodes" {
  command = plan
  variables {
    nodes = [for i in range(1, 32) : { id = "node-${i}", index = i, lat = 42.6, lon = 23.3 }]
  }
  expect_failures = [var.nodes]
}

run "rejects_bad_name" {
  command = plan
  variables {
    name = "Smt-Too-Long"
  }
  expect_failures = [var.name]
}
