output "nodes" {
  description = "One object per node, in order: id (node-1 ..), index (1 ..), lat, lon (degrees, rounded to 6 decimals)."
  value = [for i, c in local.coords : {
    id    = "node-${i + 1}"
    index = i + 1
    lat   = floor(c.lat * 1000000 + 0.5) / 1000000
    lon   = floor(c.lon * 1000000 + 0.5) / 1000000
  }]
  precondition {
    condition     = var.mode != "sofia" || var.sofia_dir != null
    error_message = "mode = \"sofia\" needs sofia_dir (the folder with 1.csv .. N.csv, e.g. ../shared/data/sofia)."
  }
  precondition {
    condition     = var.mode != "list" || length(var.locations) >= var.node_count
    error_message = "mode = \"list\" needs at least node_count entries in locations."
  }
}
