# The local root with its presets (one root, the node count from terraform/scenarios/presets.json),
# planned against the real libvirt provider schema with mock providers.
mock_provider "libvirt" {}
mock_provider "local" {}
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
}

variables {
  prefix = "smtt"
  run = {
    image_path   = "/tmp/appliance.qcow2"
    state_dir    = "/tmp/smtt-state"
    work_dir     = "/tmp/smtt-work"
    placement    = "grid"
    host_address = "10.61.0.2"
  }
}

run "preset_local_3" {
  command = plan
  variables {
    preset = "local-3"
  }
  assert {
    condition     = [for n in output.stack.nodes : n.address] == ["10.61.0.11", "10.61.0.12", "10.61.0.13"]
    error_message = "local-3: 3 VMs at .11-.13"
  }
  assert {
    condition     = output.stack.network.bridge == "smtt3-br" && endswith(output.stack.topology_path, "/smtt3/topology.json")
    error_message = "the mesh is PREFIX<node count>: what tf.sh topology local-3 reads"
  }
  assert {
    condition     = alltrue([for h in values(yamldecode(output.stack.inventory).all.children.syncmesh_nodes.hosts) : h.ansible_user == "root"])
    error_message = "the inventory logs in as root, the image's only user"
  }
  assert {
    condition     = output.stack.write_key_file == "${dirname(output.stack.inventory_path)}/.secrets/write-key"
    error_message = "the write key is where the playbooks read it (inventory folder/.secrets/write-key)"
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
