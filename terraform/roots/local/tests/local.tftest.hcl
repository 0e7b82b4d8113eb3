# The local root with its presets (one root, the node count from terraform/roots/presets.json),
# planned against the real libvirt provider schema with mock providers; what the files hold is
# modules/mesh's test.
mock_provider "libvirt" {}
mock_provider "local" {}
mock_provider "random" {}

variables {
  prefix = "smtt"
  run = {
    image_path      = "/tmp/appliance.qcow2"
    state_dir       = "/tmp/smtt-state"
    work_dir        = "/tmp/smtt-work"
    placement       = "grid"
    host_address    = "10.61.0.2"
    libvirt_netns   = "smtt-lv"
    mongodb_publish = "0.0.0.0"
    peer_timeout_s  = 45
  }
}

run "preset_local_3" {
  command = plan
  variables {
    preset = "local-3"
  }
  assert {
    condition     = [for n in output.stack.nodes : n.address] == ["10.61.0.11", "10.61.0.12", "10.61.0.13"] && output.stack.nodes[0].host_interface == "smtt3-t1"
    error_message = "local-3: 3 VMs at .11-.13, captured on their taps"
  }
  assert {
    condition     = output.stack.network.bridge == "smtt3-br" && endswith(output.stack.topology_path, "/smtt3/topology.json")
    error_message = "the mesh is PREFIX<node count>: what tf.sh topology local-3 reads"
  }
  assert {
    condition     = alltrue([for n in output.stack.topology.nodes : n.namespace == "smtt-lv" && startswith(n.mongodb_uri, "mongodb://10.61.0.")])
    error_message = "the topology names libvirt's namespace for captures and each node's published MongoDB"
  }
}

run "preset_local_12" {
  command = plan
  variables {
    preset = "local-12"
  }
  assert {
    condition     = length(output.stack.nodes) == 12 && output.stack.network.bridge == "smtt12-br"
    error_message = "local-12: 12 VMs, mesh smtt12"
  }
}

run "preset_local_30" {
  command = plan
  variables {
    preset = "local-30"
  }
  assert {
    condition     = length(output.stack.nodes) == 30 && output.stack.nodes[29].address == "10.61.0.40"
    error_message = "local-30: 30 VMs, the last at .40"
  }
}

run "rejects_unknown_preset" {
  command = plan
  variables {
    preset = "local-4"
  }
  expect_failures = [var.preset]
}
