# Plans against the real google provider schema (built by terraform/hack/toolchain.sh) with no
# account: mock_provider answers every call. Validation failures name what is allowed.
mock_provider "google" {}

variables {
  project        = "syncmesh-test"
  name           = "smg"
  image_tarball  = "/tmp/appliance.tar.gz"
  bucket_name    = "syncmesh-test-images"
  operator_cidrs = ["203.0.113.7/32"]
  zones          = ["europe-west3-a", "europe-west3-b", "europe-west3-c"]
  nodes          = [for i in range(1, 4) : { id = "node-${i}", index = i }]
  cloud_init     = { for i in range(1, 31) : "node-${i}" => { user_data = "#cloud-config\n# node-${i}\n", meta_data = "" } }
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
    condition     = toset(google_compute_firewall.ingress["operator"].source_ranges) == toset(["203.0.113.7/32"])
    error_message = "only the operator CIDR reaches the nodes from outside"
  }
  assert {
    condition     = toset(flatten([for a in google_compute_firewall.ingress["members"].allow : a.ports])) == toset(["8080", "7070", "22"])
    error_message = "members may reach each other on the gateway, agent and SSH ports only (not the health port)"
  }
  assert {
    condition     = toset(flatten([for a in google_compute_firewall.ingress["operator"].allow : a.ports])) == toset(["8080", "7070", "22", "8099"])
    error_message = "the operator's ranges reach the gateway, agent, SSH and health ports"
  }
  assert {
    condition     = google_compute_instance.node["node-2"].metadata["user-data"] == var.cloud_init["node-2"].user_data
    error_message = "the instance's user-data metadata is its own cloud-init (the node file)"
  }
}

run "plan_30_nodes_across_regions" {
  command = plan
  variables {
    zones = ["europe-west3-a", "europe-west1-b", "us-central1-f", "asia-east1-a"]
    nodes = [for i in range(1, 31) : { id = "node-${i}", index = i }]
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

# issue 30: SSH is root's, by the node file's keys (modules/node-config), never by metadata.
run "no_ssh_keys_metadata" {
  command = plan
  assert {
    condition     = !contains(keys(google_compute_instance.node["node-1"].metadata), "ssh-keys")
    error_message = "no ssh-keys metadata for a user the image does not have (it has no guest agent to create one)"
  }
  assert {
    condition     = google_compute_instance.node["node-1"].metadata["block-project-ssh-keys"] == "true"
    error_message = "project-wide SSH keys stay out"
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
