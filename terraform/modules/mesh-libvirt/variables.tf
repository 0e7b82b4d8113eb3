variable "name" {
  description = "Prefix of everything this module creates (network, bridge, pool, volumes, domains, tap interfaces): 2 to 8 lowercase letters and digits, starting with a letter."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9]{1,7}$", var.name))
    error_message = "name must be 2 to 8 lowercase letters and digits, starting with a letter (e.g. smt3): interface names like NAME-t30 must fit 15 characters."
  }
}

variable "nodes" {
  description = "Node locations from the placement module (id, index, lat, lon), 3 to 30 of them; node i gets the address cidrhost(subnet, 10 + i)."
  type = list(object({
    id    = string
    index = number
    lat   = number
    lon   = number
  }))
  validation {
    condition     = length(var.nodes) >= 3 && length(var.nodes) <= 30
    error_message = "nodes must hold 3 to 30 nodes."
  }
}

variable "image_path" {
  description = "The appliance VM image on this machine (images/appliance: make image-vm), qcow2 or raw; every node gets a copy-on-write overlay of it."
  type        = string
  validation {
    condition     = length(var.image_path) > 0
    error_message = "image_path must name the appliance VM image file (make image-vm)."
  }
}

variable "image_format" {
  description = "Format of image_path: \"qcow2\" or \"raw\"."
  type        = string
  default     = "qcow2"
  validation {
    condition     = contains(["qcow2", "raw"], var.image_format)
    error_message = "image_format must be \"qcow2\" or \"raw\"."
  }
}

variable "disk_size_gb" {
  description = "Size of each node's disk (the appliance grows its root filesystem to it on first boot), 2 to 64 GB."
  type        = number
  default     = 4
  validation {
    condition     = var.disk_size_gb >= 2 && var.disk_size_gb <= 64
    error_message = "disk_size_gb must be from 2 to 64."
  }
}

variable "subnet" {
  description = "IPv4 /24 of the isolated network; the bridge takes .1, node i takes .(10 + i)."
  type        = string
  default     = "10.61.0.0/24"
  validation {
    condition     = can(cidrhost(var.subnet, 0)) && endswith(var.subnet, "/24")
    error_message = "subnet must be an IPv4 /24 in CIDR notation (e.g. 10.61.0.0/24)."
  }
}

variable "memory_mb" {
  description = "Memory of each VM in MiB (256 to 8192). A full faasd node needs about 1024."
  type        = number
  default     = 1024
  validation {
    condition     = var.memory_mb >= 256 && var.memory_mb <= 8192
    error_message = "memory_mb must be from 256 to 8192."
  }
}

variable "vcpus" {
  description = "Virtual CPUs per VM (1 to 4)."
  type        = number
  default     = 1
  validation {
    condition     = var.vcpus >= 1 && var.vcpus <= 4
    error_message = "vcpus must be from 1 to 4."
  }
}

variable "domain_type" {
  description = "libvirt domain type: \"qemu\" (software emulation, works everywhere) or \"kvm\" (needs a usable /dev/kvm)."
  type        = string
  default     = "qemu"
  validation {
    condition     = contains(["qemu", "kvm"], var.domain_type)
    error_message = "domain_type must be \"qemu\" or \"kvm\"."
  }
}

variable "tcg_tb_cache_mb" {
  description = "With domain_type \"qemu\": the size of QEMU's translation block cache per VM in MiB (32 to 2048; null: QEMU's default, 1 GiB, which each VM fills over time on top of memory_mb: 12 full nodes of 1280 MiB outgrew a 24 GiB host with it)."
  type        = number
  default     = 256
  nullable    = true
  validation {
    condition     = var.tcg_tb_cache_mb == null || try(var.tcg_tb_cache_mb >= 32 && var.tcg_tb_cache_mb <= 2048 && floor(var.tcg_tb_cache_mb) == var.tcg_tb_cache_mb, false)
    error_message = "tcg_tb_cache_mb must be null (QEMU's default, 1 GiB) or a whole number of MiB from 32 to 2048."
  }
}

variable "firmware" {
  description = "UEFI firmware code file (the appliance image boots with UEFI only); null boots with the BIOS (or direct kernel boot)."
  type        = string
  default     = "/usr/share/OVMF/OVMF_CODE_4M.fd"
}

variable "nvram_template" {
  description = "UEFI variables template copied per node when firmware is set (e.g. /usr/share/OVMF/OVMF_VARS_4M.fd)."
  type        = string
  default     = "/usr/share/OVMF/OVMF_VARS_4M.fd"
}

variable "kernel" {
  description = "Direct kernel boot: kernel file on this machine (null: boot the image's own boot loader)."
  type        = string
  default     = null
}

variable "initrd" {
  description = "Direct kernel boot: initrd file (with kernel)."
  type        = string
  default     = null
}

variable "kernel_cmdline" {
  description = "Direct kernel boot: kernel command line (with kernel)."
  type        = string
  default     = "root=/dev/vda rw console=ttyS0 no_timer_check"
}

variable "pool_dir" {
  description = "Folder of the libvirt storage pool holding the volumes (created; absolute path)."
  type        = string
  validation {
    condition     = startswith(var.pool_dir, "/")
    error_message = "pool_dir must be an absolute path."
  }
}

variable "log_dir" {
  description = "Folder for each VM's serial console log (NAME-node-i.console.log; absolute path, must exist)."
  type        = string
  validation {
    condition     = startswith(var.log_dir, "/")
    error_message = "log_dir must be an absolute path."
  }
}

variable "ssh_authorized_keys" {
  description = "SSH public keys of root, the image's only user."
  type        = list(string)
  default     = []
}

variable "node_file_path" {
  description = "Where cloud-init writes the node file inside the guest."
  type        = string
  default     = "/etc/syncmesh/syncmesh-node.yaml"
}

variable "mongodb_publish" {
  description = "Where each node publishes MongoDB (null: the image's default 127.0.0.1; \"0.0.0.0\" lets the mesh tools load data from the host: labs only, no auth)."
  type        = string
  default     = null
}

variable "running" {
  description = "Start the VMs (false: define them only)."
  type        = bool
  default     = true
}

variable "peer_timeout_s" {
  description = "The node file's peer_timeout_s: seconds a node waits for each peer's answer when it forwards a query (1 to 45; null: the image's default, 20). Raise it for slow nodes (software emulation)."
  type        = number
  default     = null
  validation {
    condition     = var.peer_timeout_s == null || try(var.peer_timeout_s == floor(var.peer_timeout_s) && var.peer_timeout_s >= 1 && var.peer_timeout_s <= 45, false)
    error_message = "peer_timeout_s must be null or whole seconds from 1 to 45 (the node's gateway ends every request at 60 s)."
  }
}
