variable "mode" {
  description = "Where node locations come from: \"sofia\" (the Sofia sensors' coordinates, read from sofia_dir at plan time), \"grid\" (a regular grid around grid.origin) or \"list\" (locations, in order)."
  type        = string
  default     = "sofia"
  validation {
    condition     = contains(["sofia", "grid", "list"], var.mode)
    error_message = "mode must be one of \"sofia\", \"grid\" or \"list\"."
  }
}

variable "node_count" {
  description = "Number of nodes to place (3 to 30)."
  type        = number
  validation {
    condition     = var.node_count >= 3 && var.node_count <= 30 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 3 to 30."
  }
}

variable "sofia_dir" {
  description = "mode = \"sofia\": folder holding the sensors' CSV files 1.csv .. N.csv (header sensor_id,location,lat,lon,...). Node i takes the lat/lon of the first reading of i.csv (sensor i + sensor_offset). Read at plan time, never copied."
  type        = string
  default     = null
}

variable "sensor_offset" {
  description = "mode = \"sofia\": node i reads the file (i + sensor_offset).csv, so two meshes can use different sensors."
  type        = number
  default     = 0
  validation {
    condition     = var.sensor_offset >= 0 && floor(var.sensor_offset) == var.sensor_offset
    error_message = "sensor_offset must be a whole number >= 0."
  }
}

variable "grid" {
  description = "mode = \"grid\": origin (south-west corner, degrees), spacing_km between neighbours and columns per row."
  type = object({
    origin_lat = number
    origin_lon = number
    spacing_km = number
    columns    = number
  })
  default = {
    origin_lat = 42.65
    origin_lon = 23.30
    spacing_km = 2
    columns    = 6
  }
  validation {
    condition     = abs(var.grid.origin_lat) <= 85 && abs(var.grid.origin_lon) <= 180 && var.grid.spacing_km > 0 && var.grid.spacing_km <= 1000 && var.grid.columns >= 1
    error_message = "grid needs origin_lat in [-85, 85], origin_lon in [-180, 180], spacing_km in (0, 1000] and columns >= 1."
  }
}

variable "locations" {
  description = "mode = \"list\": one {lat, lon} per node, node i takes locations[i-1]; at least node_count entries."
  type = list(object({
    lat = number
    lon = number
  }))
  default = []
  validation {
    condition     = alltrue([for l in var.locations : abs(l.lat) <= 90 && abs(l.lon) <= 180])
    error_message = "every location needs lat in [-90, 90] and lon in [-180, 180]."
  }
}
