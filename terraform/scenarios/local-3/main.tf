# local-3: 3 appliance VMs (libvirt, software emulation) on one isolated bridge, placed at the
# Sofia sensors 1-3. make tf-up SCENARIO=local-3 (terraform/README.md).
terraform {
  required_version = ">= 1.8.0"
  # the state path is given by terraform/hack/tf.sh (-backend-config=path=...)
  backend "local" {}
  required_providers {
    libvirt = {
      source  = "dmacvicar/libvirt"
      version = "0.8.3"
    }
  }
}

variable "libvirt_uri" {
  description = "libvirt connection URI (terraform/hack/libvirt.sh starts the daemon)."
  type        = string
  default     = "qemu:///system"
}

variable "prefix" {
  description = "Name prefix of every libvirt object and interface of this machine's run (terraform/hack/tf.sh sets it from TF_PREFIX); the mesh is PREFIX3."
  type        = string
  default     = "smt"
}

variable "run" {
  description = "What this machine provides (image, folders, placement); typed in stacks/local. terraform/hack/tf.sh sets it."
  type        = any
}

provider "libvirt" {
  uri = var.libvirt_uri
}

module "stack" {
  source     = "../../stacks/local"
  name       = "${var.prefix}3"
  node_count = 3
  run        = var.run
}

output "stack" {
  description = "Nodes, network, topology and inventory paths."
  value       = module.stack
}
