variable "project" {
  description = "GCP project id the mesh is created in (no default: nothing about the account is hard-coded)."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a GCP project id: 6 to 30 lowercase letters, digits and dashes, starting with a letter."
  }
}

variable "name" {
  description = "Prefix of every resource (network, firewall rules, image, instances): the mesh's name, validated by modules/mesh (2 to 8 lowercase letters and digits)."
  type        = string
}

variable "nodes" {
  description = "The nodes (modules/mesh: id, index). Node i runs in zones[(i-1) % length(zones)] at .(10 + i) of its region's subnet."
  type = list(object({
    id    = string
    index = number
  }))
}

variable "cloud_init" {
  description = "Map node id => { user_data, meta_data } (modules/mesh, from modules/node-config): the user-data reaches the instance as metadata."
  type = map(object({
    user_data = string
    meta_data = string
  }))
  sensitive = true
}

variable "ports" {
  description = "Ports of each node: the OpenFaaS gateway and the MISO agent (open between members and to operator_cidrs) and the health URL (GET /health, no auth: operator_cidrs only)."
  type = object({
    gateway = optional(number, 8080)
    agent   = optional(number, 7070)
    health  = optional(number, 8099)
  })
  default = {}
}

variable "zones" {
  description = "Zones the instances are spread over, round robin (one or several regions, e.g. [\"europe-west3-a\", \"europe-west3-b\"])."
  type        = list(string)
  validation {
    condition     = length(var.zones) >= 1
    error_message = "zones must name at least one zone (e.g. europe-west3-a)."
  }
  validation {
    condition = alltrue([for z in var.zones : contains(flatten([for region, letters in {
      "asia-east1"              = "abc", "asia-east2" = "abc", "asia-northeast1" = "abc", "asia-south1" = "abc",
      "asia-southeast1"         = "abc", "australia-southeast1" = "abc", "europe-central2" = "abc",
      "europe-north1"           = "abc", "europe-southwest1" = "abc", "europe-west1" = "bcd", "europe-west2" = "abc",
      "europe-west3"            = "abc", "europe-west4" = "abc", "europe-west6" = "abc", "europe-west8" = "abc",
      "europe-west9"            = "abc", "europe-west10" = "abc", "europe-west12" = "abc", "me-west1" = "abc",
      "northamerica-northeast1" = "abc", "southamerica-east1" = "abc", "us-central1" = "abcf",
      "us-east1"                = "bcd", "us-east4" = "abc", "us-east5" = "abc", "us-south1" = "abc", "us-west1" = "abc",
      "us-west2"                = "abc", "us-west3" = "abc", "us-west4" = "abc",
    } : [for l in split("", letters) : "${region}-${l}"]]), z)])
    error_message = "every zone must be a known GCP zone REGION-LETTER, e.g. europe-west3-a, europe-west1-b, us-central1-f (regions: asia-*, australia-southeast1, europe-central2/north1/southwest1/west1-12, me-west1, northamerica-northeast1, southamerica-east1, us-central1/east1/east4/east5/south1/west1-4)."
  }
}

variable "machine_type" {
  description = "Machine type of every instance (the paper's small machines: e2-small, 2 vCPU shared, 2 GB)."
  type        = string
  default     = "e2-small"
  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.machine_type))
    error_message = "machine_type must be a GCP machine type such as e2-small, e2-medium or n2-standard-2."
  }
}

variable "disk_size_gb" {
  description = "Boot disk size of every instance (10 to 200 GB; the appliance grows its root filesystem to it)."
  type        = number
  default     = 10
  validation {
    condition     = var.disk_size_gb >= 10 && var.disk_size_gb <= 200
    error_message = "disk_size_gb must be from 10 to 200."
  }
}

variable "image_tarball" {
  description = "Local path of the appliance image for GCP: a .tar.gz holding disk.raw (make image-vm's raw disk, see docs/guides/terraform-scenarios.md). Uploaded to the bucket, then imported as a compute image."
  type        = string
  validation {
    condition     = endswith(var.image_tarball, ".tar.gz")
    error_message = "image_tarball must be a .tar.gz holding disk.raw (GCP imports raw disks only from that form)."
  }
}

variable "bucket_name" {
  description = "Name of the Cloud Storage bucket created for the image upload (globally unique, 3 to 63 lowercase letters, digits, dashes, underscores)."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3 to 63 lowercase letters, digits, dashes and underscores, starting and ending with a letter or digit."
  }
}

variable "operator_cidrs" {
  description = "CIDRs allowed to reach the gateway, agent, SSH and health ports from outside the mesh (your own address, e.g. [\"203.0.113.7/32\"])."
  type        = list(string)
  validation {
    condition     = length(var.operator_cidrs) >= 1 && alltrue([for c in var.operator_cidrs : can(cidrhost(c, 0))])
    error_message = "operator_cidrs must hold at least one IPv4 CIDR (e.g. 203.0.113.7/32); an empty list or empty string would leave the mesh unreachable."
  }
  validation {
    condition     = !contains(var.operator_cidrs, "0.0.0.0/0")
    error_message = "operator_cidrs must not contain 0.0.0.0/0: name the operator's own addresses."
  }
}

variable "subnet_base" {
  description = "IPv4 /16 the per-region subnets are cut from (/24 each, region r gets cidrsubnet(base, 8, r)); not 10.62.0.0/16, faasd's container network on every node."
  type        = string
  default     = "10.70.0.0/16"
  validation {
    condition     = can(cidrhost(var.subnet_base, 0)) && endswith(var.subnet_base, "/16")
    error_message = "subnet_base must be an IPv4 /16 (e.g. 10.70.0.0/16)."
  }
  validation {
    condition     = !can(cidrhost(var.subnet_base, 0)) || try(cidrhost(var.subnet_base, 0) != "10.62.0.0", true)
    error_message = "subnet_base must not be 10.62.0.0/16: that is faasd's container network (bridge openfaas0) on every node."
  }
}

variable "labels" {
  description = "Labels put on every instance, disk and image."
  type        = map(string)
  default     = {}
}
