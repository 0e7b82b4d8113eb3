locals {
  indexes = range(1, var.node_count + 1)

  # Sofia: the first data row of each sensor's CSV (sensor_id,location,lat,lon,...).
  sofia = var.mode != "sofia" || var.sofia_dir == null ? [] : [
    for i in local.indexes : regex("^[^\\n]*\\n[^,]*,[^,]*,([-0-9.]+),([-0-9.]+),", file("${var.sofia_dir}/${i + var.sensor_offset}.csv"))
  ]

  # Grid: rows of `columns` nodes, spacing_km apart (1 degree of latitude ~ 111.32 km).
  km_per_deg_lat = 111.32
  # the language has no cos(): its Taylor series to x^8 (error < 0.1 % up to 85 degrees)
  lat_rad        = var.grid.origin_lat * 3.141592653589793 / 180
  cos_lat        = 1 - pow(local.lat_rad, 2) / 2 + pow(local.lat_rad, 4) / 24 - pow(local.lat_rad, 6) / 720 + pow(local.lat_rad, 8) / 40320
  km_per_deg_lon = 111.32 * local.cos_lat

  coords = {
    sofia = [for c in local.sofia : { lat = tonumber(c[0]), lon = tonumber(c[1]) }]
    grid = [for i in local.indexes : {
      lat = var.grid.origin_lat + floor((i - 1) / var.grid.columns) * var.grid.spacing_km / local.km_per_deg_lat
      lon = var.grid.origin_lon + ((i - 1) % var.grid.columns) * var.grid.spacing_km / local.km_per_deg_lon
    }]
    list = slice(var.locations, 0, min(length(var.locations), var.node_count))
  }[var.mode]
}
