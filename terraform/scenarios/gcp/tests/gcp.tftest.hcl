# The GCP root with its presets, planned against the real provider schemas with mock providers
# (no account). Checks what the operator gets back: an inventory the playbooks can use on the
# image (root, the node file's keys) and the write key where the playbooks read it.
mock_provider "google" {}
mock_provider "local" {}
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
}

variables {
  run = {
    project             = "syncmesh-test"
    image_tarball       = "/tmp/syncmesh-edge-vm-amd64.tar.gz"
    bucket_name         = "syncmesh-test-images"
    operator_cidrs      = ["203.0.113.7/32"]
    state_dir           = "/tmp/syncmesh-test-state"
    placement           = "grid"
    ssh_authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq5 operator@laptop"]
  }
}

run "preset_gcp_regional_3" {
  command = plan
  variables {
    preset = "gcp-regional-3"
  }
  assert {
    condition     = length(output.stack.nodes) == 3 && toset([for n in output.stack.nodes : n.zone]) == toset(["europe-west3-a", "europe-west3-b", "europe-west3-c"])
    error_message = "gcp-regional-3: 3 nodes over europe-west3-a/b/c"
  }
  assert {
    condition     = endswith(output.stack.inventory_path, "/smg3/inventory.yml")
    error_message = "the mesh is named smg<node count>"
  }
  assert {
    condition     = alltrue([for h in values(yamldecode(output.stack.inventory).all.children.syncmesh_nodes.hosts) : h.ansible_user == "root"])
    error_message = "the inventory logs in as root, the image's only user (no 'syncmesh' user exists on it)"
  }
  assert {
    # the syncmesh.edge preflight role's default: "{{ inventory_dir }}/.secrets/write-key"
    condition     = output.stack.write_key_file == "${dirname(output.stack.inventory_path)}/.secrets/write-key"
    error_message = "Terraform writes the write key where the playbooks read it (inventory folder/.secrets/write-key)"
  }
  assert {
    condition     = strcontains(file("${path.module}/../../../ansible/collections/ansible_collections/syncmesh/edge/roles/preflight/meta/argument_specs.yml"), "default: \"{{ inventory_dir }}/.secrets/write-key\"")
    error_message = "the playbooks' default write-key path changed: change modules/mesh-files with it"
  }
}

run "preset_gcp_regional_12" {
  command = plan
  variables {
    preset = "gcp-regional-12"
  }
  assert {
    condition     = length(output.stack.nodes) == 12
    error_message = "gcp-regional-12: 12 nodes"
  }
  assert {
    condition     = endswith(output.stack.inventory_path, "/smg12/inventory.yml")
    error_message = "the mesh is named smg12"
  }
}

run "node_count_overrides_the_preset" {
  command = plan
  variables {
    preset     = "gcp-regional-3"
    node_count = 5
    zones      = ["us-central1-a", "us-central1-b"]
  }
  assert {
    condition     = length(output.stack.nodes) == 5 && toset([for n in output.stack.nodes : n.zone]) == toset(["us-central1-a", "us-central1-b"])
    error_message = "node_count and zones override the preset's"
  }
}

run "rejects_unknown_preset" {
  command = plan
  variables {
    preset = "gcp-regional-7"
  }
  expect_failures = [var.preset]
}
