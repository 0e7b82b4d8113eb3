# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/local" {
  version     = "2.9.0"
  constraints = "2.9.0"
  hashes = [
    "h1:JoEwp8lQYQAuP8Ge9Nxk5j55T4oDt3PFI7QeCQ1eu/E=",
  ]
}
