# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/google" {
  version     = "7.45.0"
  constraints = "7.45.0"
  hashes = [
    "h1:RjTB9v0/N9RmJ/5bwZjxVWnE4TlX7xpbMcNCXUlEBSU=",
  ]
}

provider "registry.opentofu.org/hashicorp/random" {
  version     = "3.9.0"
  constraints = "3.9.0"
  hashes = [
    "h1:Zx2gU2dD7MV4Uh3fQ/6spO7TtzPzPK4J7gQO+GdkNog=",
  ]
}
