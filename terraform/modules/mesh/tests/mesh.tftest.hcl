# The platform-neutral half of a mesh with a stand-in platform (fixed addresses): what the
# operator gets back is usable with the image the nodes boot and with the playbooks.
mock_provider "local" {}
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
}

variables {
  name       = "smtt3"
  node_count = 3
  placement  = { mode = "grid" }
  addresses  = { for i in range(1, 4) : "node-${i}" => "10.61.0.${10 + i}" }
  machines   = { for i in range(1, 4) : "node-${i}" => { address = "10.61.0.${10 + i}", host_interface = "smtt3-t${i}" } }
  files      = { state_dir = "/tmp/smtt-state", subnet = "10.61.0.0/24", host_address = "10.61.0.2" }
}

run "node_files_and_files_of_the_mesh" {
  command = plan
  assert {
    condition     = length(output.cloud_init) == 3 && strcontains(output.cloud_init["node-2"].user_data, "node-1@10.61.0.11")
    error_message = "each placed node gets cloud-init naming its peers at the platform's addresses"
  }
  assert {
    condition     = alltrue([for h in values(yamldecode(output.files.inventory).all.children.syncmesh_nodes.hosts) : h.ansible_user == "root"])
    error_message = "the inventory logs in as root, the image's only user (no 'syncmesh' user exists on it)"
  }
  assert {
    # the syncmesh.edge preflight role's default: "{{ inventory_dir }}/.secrets/write-key"
    condition     = output.files.write_key_file == "/tmp/smtt-state/smtt3/.secrets/write-key" && output.files.inventory_path == "/tmp/smtt-state/smtt3/inventory.yml"
    error_message = "Terraform writes the write key where the playbooks read it (inventory folder/.secrets/write-key)"
  }
  assert {
    condition     = strcontains(file("${path.module}/../../../ansible/collections/ansible_collections/syncmesh/edge/roles/preflight/meta/argument_specs.yml"), "default: \"{{ inventory_dir }}/.secrets/write-key\"")
    error_message = "the playbooks' default write-key path changed: change modules/mesh-files with it"
  }
  assert {
    condition     = output.files.topology.nodes[2].host_interface == "smtt3-t3"
    error_message = "the topology says where to capture each node's traffic"
  }
}

# Each node's registry credentials come back to the operator as a file per node (user:password,
# mode 0600), named by the topology as registry_auth_file: what faas-cli push and the mesh deploy read.
run "registry_auth_file_per_node" {
  command = plan
  assert {
    condition     = output.files.registry_auth_files == { for i in range(1, 4) : "node-${i}" => "/tmp/smtt-state/smtt3/.secrets/registry-auth/node-${i}" }
    error_message = "one registry_auth_file per node, under the mesh's .secrets beside the inventory"
  }
  assert {
    condition     = [for n in output.files.topology.nodes : n.registry_auth_file] == [for n in output.files.topology.nodes : output.files.registry_auth_files[n.id]] && output.files.topology.nodes[0].registry == "10.61.0.11:5000"
    error_message = "topology.json names each node's registry and its registry_auth_file"
  }
  assert {
    condition     = issensitive(output.cloud_init) && alltrue([for id, c in output.cloud_init : strcontains(c.user_data, "registry_password")])
    error_message = "each node's cloud-init (sensitive) hands it its registry password in the node file"
  }
  assert {
    condition     = strcontains(file("${path.module}/../../../ansible/collections/ansible_collections/syncmesh/edge/roles/faasd/meta/argument_specs.yml"), "default: \"{{ inventory_dir }}/.secrets/registry-auth/{{ syncmesh_node_id }}\"")
    error_message = "the playbooks' default registry-auth path changed: change modules/mesh-files with it"
  }
}

run "rejects_bad_name" {
  command = plan
  variables {
    name = "Smt-Too-Long"
  }
  expect_failures = [var.name]
}
