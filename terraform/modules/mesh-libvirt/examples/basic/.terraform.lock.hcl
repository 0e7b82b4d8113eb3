# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/dmacvicar/libvirt" {
  version     = "0.8.3"
  constraints = "0.8.3"
  hashes = [
    "h1:OyNWJKJPoCx5EtWdSVJINCt4ibcouocyrOLo/Rcvk9w=",
  ]
}

provider "registry.opentofu.org/hashicorp/random" {
  version     = "3.9.0"
  constraints = "3.9.0"
  hashes = [
    "h1:Zx2gU2dD7MV4Uh3fQ/6spO7TtzPzPK4J7gQO+GdkNog=",
  ]
}
