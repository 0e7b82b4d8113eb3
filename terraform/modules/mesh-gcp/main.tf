locals {
  regions = distinct([for z in var.zones : regex("^(.*)-[a-z]$", z)[0]])
  subnets = { for i, r in local.regions : r => cidrsubnet(var.subnet_base, 8, i) }
  tag     = "${var.name}-mesh"

  nodes = [for n in var.nodes : merge(n, {
    zone = var.zones[(n.index - 1) % length(var.zones)]
  })]
  placed = [for n in local.nodes : merge(n, {
    region = regex("^(.*)-[a-z]$", n.zone)[0]
    # static internal address: .(10 + i) of the region's subnet
    address = cidrhost(local.subnets[regex("^(.*)-[a-z]$", n.zone)[0]], 10 + n.index)
  })]
  by_id = { for n in local.placed : n.id => n }
  # between members: what nodes use of each other; from the operator also the health URL
  member_ports = [tostring(var.ports.gateway), tostring(var.ports.agent), "22"]
  ingress = {
    members  = { source_tags = [local.tag], source_ranges = null, ports = local.member_ports }
    operator = { source_tags = null, source_ranges = var.operator_cidrs, ports = concat(local.member_ports, [tostring(var.ports.health)]) }
  }
}

resource "google_compute_network" "this" {
  project                 = var.project
  name                    = "${var.name}-net"
  auto_create_subnetworks = false
}

resource "google_compute_subnetwork" "this" {
  for_each      = local.subnets
  project       = var.project
  name          = "${var.name}-${each.key}"
  region        = each.key
  network       = google_compute_network.this.id
  ip_cidr_range = each.value
}

# Only the gateway, agent and SSH ports between mesh members; the same plus the health port from the
# operator's ranges (the health URL answers without auth, so it is open to nobody else). GCP denies
# every other ingress by default.
resource "google_compute_firewall" "ingress" {
  for_each      = local.ingress
  project       = var.project
  name          = "${var.name}-${each.key}"
  network       = google_compute_network.this.id
  direction     = "INGRESS"
  source_tags   = each.value.source_tags
  source_ranges = each.value.source_ranges
  target_tags   = [local.tag]
  allow {
    protocol = "tcp"
    ports    = each.value.ports
  }
}

resource "google_storage_bucket" "images" {
  project                     = var.project
  name                        = var.bucket_name
  location                    = upper(local.regions[0])
  uniform_bucket_level_access = true
  force_destroy               = true
  labels                      = var.labels
}

resource "google_storage_bucket_object" "image" {
  bucket = google_storage_bucket.images.name
  name   = "${var.name}-appliance.tar.gz"
  source = var.image_tarball
}

resource "google_compute_image" "appliance" {
  project = var.project
  name    = "${var.name}-appliance"
  labels  = var.labels
  raw_disk {
    source = "https://storage.googleapis.com/${google_storage_bucket.images.name}/${google_storage_bucket_object.image.name}"
  }
  guest_os_features {
    type = "UEFI_COMPATIBLE"
  }
  guest_os_features {
    type = "VIRTIO_SCSI_MULTIQUEUE"
  }
}

resource "google_compute_instance" "node" {
  for_each     = local.by_id
  project      = var.project
  name         = "${var.name}-${each.key}"
  zone         = each.value.zone
  machine_type = var.machine_type
  tags         = [local.tag]
  labels       = merge(var.labels, { syncmesh-node = each.key })

  boot_disk {
    initialize_params {
      image  = google_compute_image.appliance.self_link
      size   = var.disk_size_gb
      labels = var.labels
    }
  }

  network_interface {
    subnetwork = google_compute_subnetwork.this[each.value.region].id
    network_ip = each.value.address
    access_config {}
  }

  # cloud-init (GCE datasource) writes the node file; the appliance reads it at first boot. SSH is
  # root's, by the keys in the node file and the user-data (the image has no other user and no
  # guest agent to make one from ssh-keys metadata); project-wide keys stay out.
  # The user-data holds the node's secrets and every process of the instance can ask the metadata
  # server for it: the node drops what its containers (faasd's bridge openfaas0) send to
  # 169.254.169.254 (syncmesh-metadata-block.service of the faasd role, also in the appliance).
  metadata = {
    user-data              = var.cloud_init[each.key].user_data
    block-project-ssh-keys = "true"
    serial-port-enable     = "true"
  }

  # No service_account block: the instances get no service account, so the metadata server has no
  # access token to hand out to anything on them.

  shielded_instance_config {
    enable_secure_boot = false
  }
}
