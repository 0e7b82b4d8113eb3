# The GCP root with its presets, planned against the real provider schemas with mock providers
# (no account); what the files hold is modules/mesh's test.
mock_provider "google" {}
mock_provider "local" {}
mock_provider "random" {}

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
}

run "preset_gcp_regional_12" {
  command = plan
  variables {
    preset = "gcp-regional-12"
  }
  assert {
    condition     = length(output.stack.nodes) == 12 && endswith(output.stack.inventory_path, "/smg12/inventory.yml")
    error_message = "gcp-regional-12: 12 nodes, mesh smg12"
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

run "rejects_unknown_preset_and_no_ssh_key" {
  command = plan
  variables {
    preset = "gcp-regional-7"
    run = {
      project             = "syncmesh-test"
      image_tarball       = "/tmp/syncmesh-edge-vm-amd64.tar.gz"
      bucket_name         = "syncmesh-test-images"
      operator_cidrs      = ["203.0.113.7/32"]
      state_dir           = "/tmp/syncmesh-test-state"
      ssh_authorized_keys = []
    }
  }
  expect_failures = [var.preset, var.run]
}
