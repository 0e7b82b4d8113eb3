locals {
  dir = "${var.state_dir}/${var.mesh_name}"

  # The mesh description (docs/reference/mesh-description.md; format of scenarios/mesh/src/plan/topology.ts)
  # with "runtime": "faasd": every URL reachable from the machine that applied. Peers talk to each
  # other directly (no emulated links).
  topology = {
    runtime        = "faasd"
    mesh           = var.mesh_name
    isolation      = "vm"
    subnet         = var.subnet
    host_address   = var.host_address
    latency        = var.latency
    forward_mode   = "parallel"
    toxiproxy_api  = null
    secret_file    = abspath("${local.dir}/.secrets/mesh-secret")
    write_key_file = abspath("${local.dir}/.secrets/write-key")
    nodes = [for n in var.nodes : {
      id              = n.id
      function_url    = "http://${n.address}:${var.gateway_port}/function/syncmesh-fn"
      gateway_url     = "http://${n.address}:${var.gateway_port}"
      basic_auth_file = null
      mongodb_uri     = var.mongodb_port == null ? null : "mongodb://${n.address}:${var.mongodb_port}/?directConnection=true"
      agent_address   = "${n.address}:${var.agent_port}"
      lat             = n.lat
      lon             = n.lon
      namespace       = n.namespace
      address         = n.address
      host_interface  = n.host_interface
      peers           = { for p in var.nodes : p.id => "http://${p.address}:${var.gateway_port}/function/syncmesh-fn" if p.id != n.id }
      listener_url    = "http://${n.address}:${var.listener_port}"

      # the node's registry (images/node/node.yml) and its user:password (given to the node in its
      # node file by modules/node-config): what faas-cli push, skopeo and the mesh deploy use
      registry           = "${n.address}:5000"
      registry_auth_file = abspath("${local.dir}/.secrets/registry-auth/${n.id}")
    }]
  }

  # The format of ansible/inventories/example/hosts.yml.
  inventory = {
    all = {
      children = {
        (var.inventory_group) = {
          hosts = { for n in var.nodes : n.id => {
            ansible_host          = n.address
            ansible_user          = n.ssh_user
            syncmesh_node_id      = n.id
            syncmesh_node_address = n.address
            syncmesh_lat          = n.lat
            syncmesh_lon          = n.lon
          } }
        }
      }
    }
  }
}

resource "local_sensitive_file" "mesh_secret" {
  filename             = "${local.dir}/.secrets/mesh-secret"
  content              = var.secrets.mesh_secret
  file_permission      = "0600"
  directory_permission = "0700"
}

# Where the syncmesh.edge playbooks read it: <inventory folder>/.secrets/write-key (the preflight
# role's syncmesh_write_key_file default), beside the mesh secret.
resource "local_sensitive_file" "write_key" {
  filename             = "${local.dir}/.secrets/write-key"
  content              = var.secrets.write_key
  file_permission      = "0600"
  directory_permission = "0700"
}

# Each node's registry credentials (user:password, no newline: the format of the local mesh's
# NODE_STATE/registry-auth, which scenarios/mesh's deploy and hack/fn-build.sh read), where the
# Ansible faasd role reads and keeps them beside the inventory (faasd_registry_auth_file's default).
resource "local_sensitive_file" "registry_auth" {
  for_each             = toset(var.nodes[*].id)
  filename             = "${local.dir}/.secrets/registry-auth/${each.key}"
  content              = var.secrets.registry_auth[each.key]
  file_permission      = "0600"
  directory_permission = "0700"
}

resource "local_file" "inventory" {
  filename        = "${local.dir}/inventory.yml"
  content         = "# Written by terraform/modules/mesh-files; the mesh secret, the write key and each node's registry credentials (registry-auth/NODE_ID) are in .secrets/ beside this file.\n${yamlencode(local.inventory)}"
  file_permission = "0644"
}

resource "local_file" "topology" {
  for_each        = toset(["${local.dir}/topology.json", "${var.state_dir}/topology.json"])
  filename        = each.value
  content         = jsonencode(local.topology)
  file_permission = "0644"
}
