# Plans against the real google provider schema (built by terraform/hack/toolchain.sh) with no
# account: mock_provider answers every call. Validation failures name what is allowed.
mock_provider "google" {}
mock_provider "random" {
  mock_resource "random_id" {
    defaults = { hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" }
  }
}

variables {
  project        = "syncmesh-test"
  name           = "smg"
  image_tarball  = "/tmp/appliance.tar.gz"
  bucket_name    = "syncmesh-test-images"
  operator_cidrs = ["203.0.113.7/32"]
  zones          = ["europe-west3-a", "europe-west3-b", "europe-west3-c"]
  nodes          = [for i in range(1, 4) : { id = "node-${i}", index = i, lat = 42.6 + i / 100, lon = 23.3 }]

  ssh_authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq5 operator@laptop"]
}

run "plan_3_nodes_one_region" {
  command = plan
  assert {
    condition     = length(google_compute_instance.node) == 3
    error_message = "3 nodes plan 3 instances"
  }
  assert {
    condition     = toset([for i in google_compute_instance.node : i.zone]) == toset(var.zones)
    error_message = "the 3 nodes are spread over the 3 zones"
  }
  assert {
    condition     = length(google_compute_subnetwork.this) == 1
    error_message = "one region, one subnet"
  }
  assert {
    condition     = toset(google_compute_firewall.operator.source_ranges) == toset(["203.0.113.7/32"])
    error_message = "only the operator CIDR reaches the nodes from outside"
  }
  assert {
    condition     = toset(flatten([for a in google_compute_firewall.members.allow : a.ports])) == toset(["8080", "7070", "22"])
    error_message = "members may reach each other on the gateway, agent and SSH ports only (not the health port)"
  }
  assert {
    condition     = toset(flatten([for a in google_compute_firewall.operator.allow : a.ports])) == toset(["8080", "7070", "22", "8099"])
    error_message = "the operator's ranges reach the gateway, agent, SSH and health ports"
  }
  assert {
    condition     = strcontains(google_compute_instance.node["node-1"].metadata["user-data"], "/etc/syncmesh/syncmesh-node.yaml")
    error_message = "the startup metadata carries the node file"
  }
}

run "plan_30_nodes_across_regions" {
  command = plan
  variables {
    zones = ["europe-west3-a", "europe-west1-b", "us-central1-f", "asia-east1-a"]
    nodes = [for i in range(1, 31) : { id = "node-${i}", index = i, lat = 42.6, lon = 23.3 }]
  }
  assert {
    condition     = length(google_compute_instance.node) == 30
    error_message = "30 nodes plan 30 instances"
  }
  assert {
    condition     = length(google_compute_subnetwork.this) == 4
    error_message = "one subnet per region"
  }
  assert {
    condition     = google_compute_instance.node["node-5"].zone == "europe-west3-a"
    error_message = "zones are used round robin"
  }
}

run "rejects_2_nodes" {
  command = plan
  variables {
    nodes = [for i in range(1, 3) : { id = "node-${i}", index = i, lat = 42.6, lon = 23.3 }]
  }
  expect_failures = [var.nodes]
}

run "rejects_31_nodes" {
  command = plan
  variables {
    nodes = [for i in range(1, 32) : { id = "node-${i}", index = i, lat = 42.6, lon = 23.3 }]
  }
  expect_failures = [var.nodes]
}

run "rejects_unknown_zone" {
  command = plan
  variables {
    zones = ["europe-west3-a", "mars-north1-a"]
  }
  expect_failures = [var.zones]
}

run "rejects_empty_operator_cidr" {
  command = plan
  variables {
    operator_cidrs = [""]
  }
  expect_failures = [var.operator_cidrs]
}

run "rejects_no_operator_cidr" {
  command = plan
  variables {
    operator_cidrs = []
  }
  expect_failures = [var.operator_cidrs]
}

run "rejects_short_secret" {
  command = plan
  variables {
    mesh_secret = "too-short"
  }
  expect_failures = [var.mesh_secret]
}

# issue 30: what the stack writes must be usable on the image it boots.
run "ssh_is_roots_by_the_node_files_keys" {
  command = plan
  assert {
    condition     = output.ssh_user == "root"
    error_message = "the image has no user but root: the inventory's SSH user is root"
  }
  assert {
    condition     = !contains(keys(google_compute_instance.node["node-1"].metadata), "ssh-keys")
    error_message = "no ssh-keys metadata for a user the image does not have (it has no guest agent to create one)"
  }
  assert {
    condition     = google_compute_instance.node["node-1"].metadata["block-project-ssh-keys"] == "true"
    error_message = "project-wide SSH keys stay out"
  }
  assert {
    condition     = yamldecode(yamldecode(trimprefix(google_compute_instance.node["node-2"].metadata["user-data"], "#cloud-config\n")).write_files[0].content).ssh_authorized_keys == var.ssh_authorized_keys
    error_message = "the node file carries root's keys (the appliance installs them for root)"
  }
  assert {
    condition     = yamldecode(trimprefix(google_compute_instance.node["node-2"].metadata["user-data"], "#cloud-config\n")).ssh_authorized_keys == var.ssh_authorized_keys
    error_message = "cloud-init's user-data carries root's keys too (users: [] sends them to root)"
  }
}

run "instances_have_no_service_account" {
  command = plan
  assert {
    condition     = alltrue([for i in google_compute_instance.node : length(i.service_account) == 0])
    error_message = "no service account: the metadata server has no token to give anything on the instances"
  }
}

run "subnets_avoid_faasds_container_network" {
  command = plan
  assert {
    condition     = alltrue([for s in google_compute_subnetwork.this : !startswith(s.ip_cidr_range, "10.62.")])
    error_message = "the VPC subnets must not overlap faasd's 10.62.0.0/16 (bridge openfaas0 on every node)"
  }
}

run "rejects_faasds_network_as_subnet_base" {
  command = plan
  variables {
    subnet_base = "10.62.0.0/16"
  }
  expect_failures = [var.subnet_base]
}

run "rejects_no_ssh_key" {
  command = plan
  variables {
    ssh_authorized_keys = []
  }
  expect_failures = [var.ssh_authorized_keys]
}
