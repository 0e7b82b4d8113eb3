run "grid_of_7" {
  command = plan
  variables {
    mode       = "grid"
    node_count = 7
    grid       = { origin_lat = 42.65, origin_lon = 23.30, spacing_km = 2, columns = 3 }
  }
  assert {
    condition     = length(output.nodes) == 7 && output.nodes[6].id == "node-7"
    error_message = "7 nodes, ids node-1..node-7"
  }
  assert {
    condition     = output.nodes[3].lon == 23.3 && output.nodes[3].lat > 42.65
    error_message = "node-4 starts the second row"
  }
}

run "sofia_from_csv" {
  command = plan
  variables {
    mode       = "sofia"
    node_count = 3
    sofia_dir  = "tests/fixtures"
  }
  assert {
    condition     = output.nodes[0].lat == 42.622 && output.nodes[2].lon == 23.4
    error_message = "coordinates are read from the first data row of each CSV"
  }
}

run "explicit_list" {
  command = plan
  variables {
    mode       = "list"
    node_count = 3
    locations  = [{ lat = 1, lon = 2 }, { lat = 3, lon = 4 }, { lat = 5, lon = 6 }]
  }
  assert {
    condition     = output.nodes[1].lat == 3 && output.nodes[1].lon == 4
    error_message = "list entries in order"
  }
}

run "rejects_2_nodes" {
  command = plan
  variables {
    mode       = "grid"
    node_count = 2
  }
  expect_failures = [var.node_count]
}

run "rejects_unknown_mode" {
  command = plan
  variables {
    mode       = "random"
    node_count = 3
  }
  expect_failures = [var.mode]
}
