variable "name" {
  description = "Prefix of everything this module creates (network, bridge, pool, volumes, domains, tap interfaces NAME-tI): the mesh's name, validated by modules/mesh (2 to 8 characters, so NAME-t30 fits an interface name's 15)."
  type        = string
}

variable "nodes" {
  description = "The nodes (modules/mesh: id, index); node i gets the address cidrhost(subnet, 10 + i)."
  type = list(object({
    id    = string
    index = number
  }))
}

variable "cloud_init" {
  description = "Map node id => { user_data, meta_data } of its NoCloud seed (modules/mesh, from modules/node-config)."
  type = map(object({
    user_data = string
    meta_data = string
  }))
  sensitive = true
}

variable "vm" {
  description = "The VMs: image_path (the appliance image, make image-vm; every node gets a copy-on-write overlay) in image_format qcow2 or raw; work_dir (absolute; the storage pool in WORK_DIR/pool, each serial console log in WORK_DIR/logs/NAME-node-i.console.log); subnet (an IPv4 /24: the bridge takes .1, node i .(10 + i)); memory_mb 256-8192, vcpus 1-4, disk_size_gb 2-64 per VM; domain_type qemu (software emulation) or kvm; tcg_tb_cache_mb 32-2048 (QEMU's translation block cache under qemu; 0: QEMU's default, 1 GiB, which each VM fills on top of memory_mb: 12 full nodes of 1280 MiB outgrew a 24 GiB host with it); firmware + nvram_template (UEFI, as the appliance needs; firmware null: BIOS or direct kernel boot); kernel, initrd, kernel_cmdline (direct kernel boot); netns (the network namespace libvirtd and the taps live in, for captures); running (false: define only)."
  type = object({
    image_path      = string
    image_format    = optional(string, "qcow2")
    work_dir        = string
    subnet          = optional(string, "10.61.0.0/24")
    memory_mb       = optional(number, 1024)
    vcpus           = optional(number, 1)
    disk_size_gb    = optional(number, 4)
    domain_type     = optional(string, "qemu")
    tcg_tb_cache_mb = optional(number, 256)
    firmware        = optional(string, "/usr/share/OVMF/OVMF_CODE_4M.fd")
    nvram_template  = optional(string, "/usr/share/OVMF/OVMF_VARS_4M.fd")
    kernel          = optional(string)
    initrd          = optional(string)
    kernel_cmdline  = optional(string, "root=/dev/vda rw console=ttyS0 no_timer_check")
    netns           = optional(string)
    running         = optional(bool, true)
  })
  validation {
    condition     = length(var.vm.image_path) > 0 && contains(["qcow2", "raw"], var.vm.image_format) && startswith(var.vm.work_dir, "/")
    error_message = "vm.image_path must name the appliance VM image (make image-vm), vm.image_format be \"qcow2\" or \"raw\", and vm.work_dir be an absolute path."
  }
  validation {
    condition     = can(cidrhost(var.vm.subnet, 0)) && endswith(var.vm.subnet, "/24")
    error_message = "vm.subnet must be an IPv4 /24 in CIDR notation (e.g. 10.61.0.0/24)."
  }
  validation {
    # whole numbers in [min, max]; tcg_tb_cache_mb may be 0 (QEMU's default)
    condition = alltrue([for k, r in { memory_mb = [256, 8192], vcpus = [1, 4], disk_size_gb = [2, 64], tcg_tb_cache_mb = [32, 2048] } :
    floor(var.vm[k]) == var.vm[k] && (var.vm[k] >= r[0] && var.vm[k] <= r[1] || k == "tcg_tb_cache_mb" && var.vm[k] == 0)])
    error_message = "vm: memory_mb must be a whole number from 256 to 8192, vcpus from 1 to 4, disk_size_gb from 2 to 64, tcg_tb_cache_mb 0 (QEMU's default, 1 GiB) or from 32 to 2048."
  }
  validation {
    condition     = contains(["qemu", "kvm"], var.vm.domain_type)
    error_message = "vm.domain_type must be \"qemu\" (software emulation) or \"kvm\" (needs a usable /dev/kvm)."
  }
}
