# The node files and cloud-init of a 3-node mesh; every validation of the node settings, which the
# mesh modules pass through unchecked.
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
  mock_resource "random_password" {
    defaults = { result = "0123456789abcdefghijABCDEFGHIJ0123456789" }
  }
}

variables {
  nodes          = [for i in range(1, 4) : { id = "node-${i}", address = "10.61.0.${10 + i}", lat = 42.6, lon = 23.3 }]
  static_network = { prefix_length = 24 }
  settings = {
    ssh_authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq5 operator@laptop"]
    peer_timeout_s      = 45
  }
}

run "node_files" {
  command = plan
  assert {
    condition     = strcontains(output.user_data["node-2"], "node-1@10.61.0.11") && strcontains(output.user_data["node-1"], "/etc/syncmesh/syncmesh-node.yaml")
    error_message = "node-2's node file lists node-1 as a peer, written to the image's path"
  }
  assert {
    # the node file's documented form (images/appliance/README.md): names or patterns, space-separated
    condition     = yamldecode(output.node_files["node-2"]).network == { address = "10.61.0.12/24", interface = "en* eth*" } && yamldecode(output.node_files["node-3"]).peer_timeout_s == 45
    error_message = "node-2's node file has its static address on 'en* eth*'; the node files carry peer_timeout_s"
  }
  assert {
    condition     = yamldecode(output.node_files["node-2"]).ssh_authorized_keys == var.settings.ssh_authorized_keys && yamldecode(trimprefix(output.user_data["node-2"], "#cloud-config\n")).ssh_authorized_keys == var.settings.ssh_authorized_keys
    error_message = "root's keys are in the node file (the appliance installs them) and in cloud-init's user-data"
  }
  assert {
    condition     = output.secrets.mesh_secret == "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" && yamldecode(output.node_files["node-1"]).write_key == output.secrets.write_key
    error_message = "secrets left null are generated (32 random bytes) and written into every node file"
  }
}

# The registry password of each node: made here, handed to the node in its node file (the
# appliance uses it instead of generating one) and back to the operator as user:password.
run "registry_passwords" {
  command = plan
  assert {
    condition     = issensitive(output.secrets) && issensitive(output.node_files)
    error_message = "the outputs holding the registry passwords are sensitive"
  }
  assert {
    condition     = alltrue([for id, f in output.node_files : output.secrets.registry_auth[id] == "syncmesh:${yamldecode(f).registry_password}" && length(yamldecode(f).registry_password) == 40])
    error_message = "each node's registry_auth is syncmesh:<the registry_password of its node file> (40 characters)"
  }
}

run "rejects_bad_settings" {
  command = plan
  variables {
    settings = { mesh_secret = "too-short", peer_timeout_s = 46, mongodb_publish = "10.0.0.1", ssh_authorized_keys = ["not a key"] }
  }
  expect_failures = [var.settings, var.settings, var.settings, var.settings]
}

run "rejects_31_nodes_and_a_repeated_id" {
  command = plan
  variables {
    nodes = [for i in range(0, 31) : { id = "node-${max(i, 1)}", address = "10.61.0.${10 + i}", lat = 42.6, lon = 23.3 }]
  }
  expect_failures = [var.nodes, var.nodes]
}
