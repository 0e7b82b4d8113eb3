# `make help`: every target of the Makefile that has a `## comment`, in sections. A target's
# section comes from its name (the first rule below that matches), so the Makefile keeps its
# order by component and a new target needs no marker; one no rule names is listed under "Other".
#
#   awk -f hack/make-help.awk Makefile
function rule(section, pattern) {
  sections[++nsections] = section
  patterns[nsections] = pattern
}
BEGIN {
  rule("Start: the demo, a mesh, one service, users' functions", "^(demo|mesh-.*|miso-agent|listener|listener-replay|replication-check|faas-cli|fn-.*)$")
  rule("Test tiers (make test runs verify and the standard tiers; the heavy ones run on their own)", "^(test|test-.*)$")
  rule("Benchmarks (BENCH_ARGS=\"...\" goes to the bench: a table, bench-results/<name>.json and .png) and measurement scenarios", "^(bench-.*|k6|scenario|scenarios|scenarios-venv)$")
  rule("Container images and flashable node images", "^(images|images-.*|image-.*|faasd-bins|faasd-tier-deps|appliance-tools)$")
  rule("Ansible: provisioning, the offline bundle, the lab", "^(ansible-.*|lab-.*|bundle|provision)$")
  rule("Terraform scenarios", "^tf-.*$")
  rule("Set-up and developer tools", "^(toolchain|deps|build|tools|tools-venv|verify|fmt|docs|clean|help|coordination-tools)$")
  sections[++nsections] = "Other"
  patterns[nsections] = ""
}
/^[a-zA-Z0-9_-]+:.*## / {
  target = $0
  sub(/:.*/, "", target)
  comment = $0
  sub(/^[^#]*## /, "", comment)
  for (i = 1; i <= nsections; i++) if (patterns[i] == "" || target ~ patterns[i]) break
  lines[i] = lines[i] sprintf("  %-26s %s\n", target, comment)
}
END {
  print "Usage: make TARGET [VARIABLE=value ...]   (README.md: what each part is; DEVELOPERS.md: conventions)"
  for (i = 1; i <= nsections; i++) if (lines[i] != "") printf "\n%s\n%s", sections[i], lines[i]
}
