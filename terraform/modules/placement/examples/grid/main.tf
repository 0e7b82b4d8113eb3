# 12 nodes on a 4-column grid, 5 km apart, south-west corner in Sofia.
module "placement" {
  source     = "../.."
  mode       = "grid"
  node_count = 12
  grid       = { origin_lat = 42.65, origin_lon = 23.30, spacing_km = 5, columns = 4 }
}

output "nodes" {
  description = "The 12 locations."
  value       = module.placement.nodes
}
