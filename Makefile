# Syncmesh Edge: the one entry point.
#
# Common uses:
#   make demo            set up everything on a fresh machine and run the 3-node mesh demo
#   make test            set up everything and run every test tier (unit + integration)
#   make build           compile the TypeScript workspaces (tsc -b)
#   make verify          types, lint, format check, ruff, errors table, docs links (make test runs it first)
#   make fmt             format everything and apply the safe lint fixes (the fixer of verify)
#   make docs            build the docs site into .cache/site (open .cache/site/index.html)
#   make bench-function  latency/throughput of the Syncmesh function against direct queries
#                        (every make bench-*: BENCH_ARGS="..." goes to the benchmark; a table,
#                        bench-results/<name>.json and .png; lib/bench-kit/README.md)
#   make clean           remove build output (keeps node_modules and tool caches)
#
# Targets are thin: scripts under each component do the work.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

################################################################################
# OPTIONS (override on the command line: make demo NODES=3)
################################################################################
# Where the Sofia CSVs are; empty means "generate deterministic data instead".
DATA ?=
# Test server jar (mongo-java-server launcher), built by Maven on first use.
TEST_SERVER_JAR := tools/mongo-test-server/java/target/mongo-test-server.jar
# Stamp that records a completed `npm ci` for the current lockfile.
NPM_STAMP := node_modules/.package-lock.json
# Every target installs Debian packages through this (finishes an interrupted dpkg first).
APT_INSTALL := hack/apt-install.sh

################################################################################
# Dependencies
################################################################################
.PHONY: toolchain
toolchain: ## Check node, npm, java, mvn, go, python3 and the apt tools; install what apt provides.
	hack/toolchain.sh

$(NPM_STAMP): package-lock.json package.json | toolchain
	npm ci --no-audit --no-fund
	@touch $@

$(TEST_SERVER_JAR): tools/mongo-test-server/java/pom.xml $(shell find tools/mongo-test-server/java/src -name '*.java') | toolchain
	cd tools/mongo-test-server/java && mvn -q -B package -DskipTests

.PHONY: deps
deps: toolchain $(NPM_STAMP) $(TEST_SERVER_JAR) ## Check the toolchains (hack/toolchain.sh), install npm packages, build the test server jar.

.PHONY: test-apt-install
test-apt-install: images-tools ## hack/apt-install.sh in a throwaway mmdebstrap chroot (root, ~20 s): finishes a killed dpkg's work (a half-configured package, a journal file alone), refusals, fetches missing package lists.
	hack/tests/apt-install.sh

################################################################################
# Building
################################################################################
.PHONY: build
build: deps ## Compile all TypeScript workspaces (first removing compiled files whose source is gone).
	node hack/prune-dist.mjs
	npx tsc -b

################################################################################
# Linting, formatting, docs (checkers in hack/verify.sh, fixer in hack/fmt.sh)
################################################################################
# ruff, mkdocs and mkdocs-material are pinned (with their dependencies) in a repo-local venv.
TOOLS_VENV := $(CURDIR)/.cache/tools-venv
TOOLS_VENV_STAMP := $(TOOLS_VENV)/.stamp

$(TOOLS_VENV_STAMP): hack/requirements-tools.txt | toolchain
	python3 -m venv $(TOOLS_VENV)
	$(TOOLS_VENV)/bin/pip install --quiet --disable-pip-version-check -r hack/requirements-tools.txt
	@touch $@

.PHONY: tools-venv
tools-venv: $(TOOLS_VENV_STAMP) ## Python venv with ruff and mkdocs (pinned in hack/requirements-tools.txt).

.PHONY: verify
verify: build tools-venv ## Check only: tsc -b, biome lint + format, ruff, docs/errors.md vs the codes, mkdocs --strict, import cycles (dpdm).
	TOOLS_VENV=$(TOOLS_VENV) hack/verify.sh

.PHONY: fmt
fmt: deps tools-venv ## Format TS/JS/JSON (biome) and Python (ruff), apply safe lint fixes, list what needs a hand fix.
	TOOLS_VENV=$(TOOLS_VENV) hack/fmt.sh

.PHONY: docs
docs: tools-venv ## Build the docs site (MkDocs, offline) into .cache/site; broken links fail the build.
	NO_MKDOCS_2_WARNING=1 $(TOOLS_VENV)/bin/mkdocs build --strict --site-dir .cache/site
	@echo "docs: open .cache/site/index.html"

################################################################################
# Testing
################################################################################
.PHONY: test
# Everything `make test` needs, in the order it is made: the apt helper's own test, the build and
# verify, the mesh tools (tcpdump, iptables, toxiproxy), k6 and the plot venv (scenario e2e), the faasd
# tier's inputs, the Ansible checks without hosts (lint, preflight against bad inventories, the
# collection built from its tarball and ansible-test sanity), the appliance's unit tests, the
# coordination tools. The whole Ansible lab life (add-node, remove-node, upgrade) stays `make test-lab`.
TEST_PREREQS := test-apt-install build verify tools k6 scenarios-venv faasd-tier-deps ansible-lint \
	test-ansible test-collection test-appliance-unit coordination-tools
test: $(TEST_PREREQS) ## Run verify, every test tier of every workspace, the faasd tier, the Terraform checks, then the Ansible lab's CI tier (root).
	hack/test.sh
	$(MAKE) test-tf-plans
	$(MAKE) test-lab-ci

.PHONY: test-crdt-extensive
test-crdt-extensive: build ## Long CRDT property runs (MISO_CRDT_RUNS=5000; override MISO_CRDT_SEED=n).
	npm run -w @syncmesh-edge/miso-agent test-extensive

.PHONY: test-fuzz-cost-extensive
test-fuzz-cost-extensive: build ## Long property run of the query-cost fuzz test (FUZZ_COST_RUNS=3000; override FUZZ_COST_SEED=n).
	FUZZ_COST_RUNS=$${FUZZ_COST_RUNS:-3000} node --test --test-reporter=spec functions/syncmesh/dist/test/integration/fuzz-cost.test.js

################################################################################
# Demo and benchmarks
################################################################################
# make demo runs the faasd runtime (every node containerd + faasd: what a user flashes), building
# faasd and the images for this machine's architecture on a first run; RUNTIME=process runs the
# bare-process mesh instead.
DEMO_RUNTIME := $(if $(filter command line environment,$(origin RUNTIME)),$(RUNTIME),faasd)

.PHONY: demo
demo: ## The main job: a 3-node mesh on faasd (RUNTIME=process: bare processes) answers a collect and an aggregate query, then goes away.
	hack/demo.sh $(DEMO_RUNTIME)

# Every `make bench-*` runs one program of a component's bench/ folder (lib/bench-kit/README.md:
# the convention) and passes it BENCH_ARGS; the program prints its table and writes
# bench-results/<name>.json and <name>.png itself.
BENCH_ARGS ?=

.PHONY: bench-function
bench-function: build scenarios-venv $(if $(filter faasd,$(RUNTIME)),tools faasd-tier-deps) ## Function vs direct driver queries (BENCH_ARGS="--concurrency 1": results function[-faasd]-c1); RUNTIME=faasd adds watchdog, gateway, port proxy and published port (DNAT) of one faasd node (root); table, JSON and PNG.
ifeq ($(RUNTIME),faasd)
	$(MESH_ENV) node scenarios/mesh/dist/bench/function-faasd.js $(BENCH_ARGS)
else
	node functions/syncmesh/dist/bench/bench-function.js $(if $(DATA),--data "$(DATA)") $(BENCH_ARGS)
endif

.PHONY: bench-query-cost
bench-query-cost: build scenarios-venv ## What each query-cost attack costs a function process: answer, CPU, /healthz meanwhile, peak RSS (BENCH_ARGS="--main other/dist/src/main.js --name before"); table, JSON and PNG.
	node functions/syncmesh/dist/bench/attack-cost.js $(BENCH_ARGS)

.PHONY: bench-listener
bench-listener: build scenarios-venv ## The listener's share of replication: insert-to-delivered p50/p99 and events/s (BENCH_ARGS="--rate 100 --seconds 2 --burst 2000"); table, JSON and PNG.
	node listeners/dist/bench/bench-listener.js $(BENCH_ARGS)

.PHONY: bench-miso
bench-miso: build scenarios-venv ## MISO agent vs the MISO paper: ops/s, replication time, delta bytes, RSS, Table I, AllReduce vs Redis (BENCH_ARGS=--quick); table, JSON and PNG.
	@command -v redis-server >/dev/null || $(APT_INSTALL) redis-server
	node miso-agent/dist/bench/bench-miso.js $(BENCH_ARGS)

.PHONY: bench-allreduce
bench-allreduce: build tools scenarios-venv ## AllReduce in the MISO paper's topology: 5 namespaced nodes (regional), MISO agents vs Redis on node-1, and with replicas (root; BENCH_ARGS=--quick); table, JSON and PNG.
	@command -v redis-server >/dev/null || $(APT_INSTALL) redis-server
	$(MESH_ENV) node scenarios/mesh/dist/bench/allreduce.js $(BENCH_ARGS)

.PHONY: bench-functions
bench-functions: build tools scenarios-venv faasd-tier-deps ## Users' functions on 3 faasd nodes (regional; root): push on node-1 -> ready on all 3, registry PSS/RSS and disk per node, miso-counter convergence and agent bytes (BENCH_ARGS=--quick); table, JSON and PNG.
	$(MESH_ENV) node scenarios/mesh/dist/bench/functions.js $(BENCH_ARGS)

.PHONY: miso-agent
miso-agent: build ## Run one MISO agent with MISO_MESH_SECRET, MONGODB_URI, MISO_PEERS etc. from the environment.
	MALLOC_ARENA_MAX=2 node --max-semi-space-size=1 miso-agent/dist/src/main.js

.PHONY: listener
listener: build ## Run the change-stream listener with MONGODB_URI, SYNCMESH_MESH_SECRET etc. from the environment.
	node listeners/dist/src/main.js

.PHONY: listener-replay
listener-replay: build ## Re-deliver the listener's dead letters (same environment as `make listener`; ARGS="--dry-run", "--ns db.coll", "--id <id>").
	node listeners/dist/src/cli.js replay $(ARGS)

################################################################################
# Local emulated mesh (scenarios/mesh; see its README)
################################################################################
# Nodes (1-30), link profile (none | site | regional | path/to/latency.json), mesh name.
NODES ?= 3
LATENCY ?= none
MESH_NAME ?= sme0
# Node for mesh-cut / mesh-restore, command for mesh-capture.
NODE ?=
CMD ?=
# toxiproxy is pinned and built from source with `go install` into a repo-local bin dir.
TOXIPROXY_VERSION := v2.12.0
TOOLS_BIN := $(CURDIR)/.cache/bin
TOXIPROXY := $(TOOLS_BIN)/toxiproxy-server
MESH_CLI := node scenarios/mesh/dist/src/cli.js
MESH_ENV := MESH_NAME=$(MESH_NAME) MESH_NODES=$(NODES) MESH_LATENCY=$(LATENCY) MESH_DATA=$(DATA) TOXIPROXY_BIN=$(TOXIPROXY)

$(TOXIPROXY): | toolchain
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(TOOLS_BIN)/server $@

.PHONY: tools
tools: $(TOXIPROXY) ## Install the mesh tools: toxiproxy (go install, pinned), tcpdump and iptables (apt).
	@command -v tcpdump >/dev/null && command -v iptables >/dev/null || $(APT_INSTALL) tcpdump iptables

.PHONY: mesh-up
mesh-up: build tools ## Start a mesh: make mesh-up NODES=3 [LATENCY=regional] [DATA=../shared/data/sofia].
	$(MESH_ENV) $(MESH_CLI) up

.PHONY: mesh-status
mesh-status: ## Processes, readiness and memory of every node of the mesh.
	$(MESH_ENV) $(MESH_CLI) status

.PHONY: mesh-down
mesh-down: ## Remove the mesh (idempotent; also after Ctrl-C or a failed start).
	$(MESH_ENV) $(MESH_CLI) down

.PHONY: mesh-cut
mesh-cut: ## Cut a node off (connections to it hang): make mesh-cut NODE=2.
	$(MESH_ENV) $(MESH_CLI) cut $(NODE)

.PHONY: mesh-restore
mesh-restore: ## Reconnect a cut-off node: make mesh-restore NODE=2.
	$(MESH_ENV) $(MESH_CLI) restore $(NODE)

.PHONY: mesh-capture
mesh-capture: export MESH_CAPTURE_CMD = $(CMD)
mesh-capture: ## Bytes per node link and direction (JSON) while CMD runs: make mesh-capture CMD="...".
	$(MESH_ENV) $(MESH_CLI) capture

.PHONY: mesh-demo
mesh-demo: build tools ## 3 nodes, a collect and an aggregate query via node-1, a table, teardown.
	$(MESH_ENV) $(MESH_CLI) demo

.PHONY: test-mesh-mdns
test-mesh-mdns: build tools ## MISO agents find each other by real mDNS across 3 namespaces (root); prints discovery and dead-peer times.
	node --test scenarios/mesh/dist/test/integration/mdns.test.js

.PHONY: bench-replication
bench-replication: build tools scenarios-venv ## Replication latency (p50/p99) and events/s on a 6-node mesh, 1 and 5 subscribers (BENCH_ARGS="--samples 50 --burst 1000"); table, JSON and PNG.
	$(MESH_ENV) node scenarios/mesh/dist/bench/replication.js $(BENCH_ARGS)

.PHONY: replication-check
replication-check: build ## Does every subscriber of a running mesh agree with its origin? Per-day digests via .mesh/$(MESH_NAME)/topology.json (CHECK_ARGS="--repair" or "--json"); exit 1 when one differs.
	node functions/syncmesh/dist/src/replication/check-cli.js --topology .mesh/$(MESH_NAME)/topology.json $(CHECK_ARGS)

.PHONY: bench-mesh
bench-mesh: build tools scenarios-venv ## Sequential vs parallel fan-out round trips for 3, 6, 12 and 30 nodes (regional; BENCH_ARGS="--nodes 3,6 --repeat 7"); table, JSON and PNG.
	$(MESH_ENV) node scenarios/mesh/dist/bench/fanout.js $(BENCH_ARGS)

################################################################################
# Measurement scenarios (scenarios/measure, scenarios/k6; see scenarios/measure/README.md)
################################################################################
# One cell: system (baseline | syncmesh | both; empty: both, or syncmesh on an existing mesh),
# workload (collect | aggregate), timespan in days (1-31), request count. NODES and DATA are
# shared with the mesh targets above.
SYSTEM ?=
WORKLOAD ?= aggregate
DAYS ?= 1
REQUESTS ?= 20
# Run id (directory under scenarios/results/); empty means a timestamp.
RUN ?=
# Link profile and node count of the scenarios: given on the command line, else the scenarios'
# defaults (regional, 3 nodes) or, on an existing mesh, the mesh's own (which a given value must match).
SCENARIO_LATENCY := $(if $(filter command line,$(origin LATENCY)),$(LATENCY))
SCENARIO_NODES := $(if $(filter command line environment,$(origin NODES)),$(NODES))
# An existing mesh instead of one the scenario starts (syncmesh cells only): TOPOLOGY=its
# topology.json, or TARGET=terraform for the one `make tf-up SCENARIO=...` wrote.
TOPOLOGY ?=
TARGET ?=
# k6 is pinned and built from source with `go install` into the repo-local bin dir.
K6_VERSION := v1.8.1
K6 := $(TOOLS_BIN)/k6
# matplotlib (plots) is pinned, in a repo-local venv.
MATPLOTLIB_VERSION := 3.9.2
VENV := $(CURDIR)/.cache/venv
VENV_STAMP := $(VENV)/.matplotlib-$(MATPLOTLIB_VERSION)
SCENARIOS_CLI := node scenarios/measure/dist/src/cli.js
SCENARIO_ENV := SCENARIO_SYSTEM=$(SYSTEM) SCENARIO_NODES=$(SCENARIO_NODES) SCENARIO_WORKLOAD=$(WORKLOAD) SCENARIO_DAYS=$(DAYS) \
	SCENARIO_REQUESTS=$(REQUESTS) SCENARIO_LATENCY=$(SCENARIO_LATENCY) SCENARIO_RUN=$(RUN) SCENARIO_DATA=$(DATA) \
	K6_BIN=$(K6) SCENARIO_PYTHON=$(VENV)/bin/python TOXIPROXY_BIN=$(TOXIPROXY) SCENARIO_TOPOLOGY=$(TOPOLOGY)

$(K6): | toolchain
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install go.k6.io/k6@$(K6_VERSION)

.PHONY: k6
k6: $(K6) ## Build k6 (pinned, go install) into .cache/bin; scenarios always run it with --no-usage-report.

$(VENV_STAMP): | toolchain
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check matplotlib==$(MATPLOTLIB_VERSION)
	@touch $@

.PHONY: scenarios-venv
scenarios-venv: $(VENV_STAMP) ## Python venv with matplotlib (pinned) for the scenario plots.

.PHONY: scenario
scenario: build tools k6 scenarios-venv ## One cell: make scenario NODES=3 WORKLOAD=aggregate DAYS=1 REQUESTS=20 SYSTEM=syncmesh; on an existing mesh: TOPOLOGY=path/topology.json or TARGET=terraform SCENARIO=local-3.
	@case "$(TARGET)" in ""|terraform) ;; *) echo "scenario: TARGET must be empty (a mesh the scenario starts, or TOPOLOGY=...) or terraform, not '$(TARGET)'" >&2; exit 2 ;; esac
	topology="$(if $(filter terraform,$(TARGET)),$$($(TF) topology $(SCENARIO)),$(TOPOLOGY))"; \
	$(SCENARIO_ENV) SCENARIO_TOPOLOGY="$$topology" $(SCENARIOS_CLI) cell

.PHONY: scenarios
scenarios: build tools k6 scenarios-venv ## The paper's matrix, both systems, with progress; results in scenarios/results/<run>/.
	@[[ -z "$(TARGET)" ]] || { echo "scenarios: the matrix starts its own meshes; on TARGET=$(TARGET) run one cell at a time with make scenario" >&2; exit 2; }
	$(SCENARIO_ENV) $(SCENARIOS_CLI) matrix

.PHONY: test-scenario-existing
test-scenario-existing: build tools k6 scenarios-venv ## make scenario on an existing mesh (root, ~2 min): a 3-node mesh measured from its topology alone, per link and on the bridge, unreachable node and bad topology refused.
	MEASURE_TEST_EXISTING=1 node --test --test-reporter=spec scenarios/measure/dist/test/integration/existing.test.js

################################################################################
# Cleanup
################################################################################
.PHONY: clean
clean: ## Remove build output.
	npx tsc -b --clean || true
	rm -rf functions/*/dist listeners/dist miso-agent/dist scenarios/*/dist lib/*/dist cli/dist .cache/site

.PHONY: help
help: ## List the targets.
	@awk -f hack/make-help.awk $(MAKEFILE_LIST)

################################################################################
# Chaos test (issue #15)
################################################################################
# Length of the chaos phase of `make test-chaos` in seconds (`make test` runs a 25 s one).
CHAOS_DURATION_S ?= 300
# Seed of the fault plan and the workers' choices; empty = random (printed first: replay with it).
CHAOS_SEED ?=
# Readings written into the outage node's database while it is down (`make test` runs 2,000).
CHAOS_OUTAGE_READINGS ?= 20000

.PHONY: test-chaos
test-chaos: build tools ## Long seeded chaos run on a 5-node mesh (root): kill -9 (also of a database), partitions, DB restarts, a 20,000-reading outage; CHAOS_DURATION_S=300 [CHAOS_SEED=n].
	CHAOS_DURATION_S=$(CHAOS_DURATION_S) CHAOS_SEED=$(CHAOS_SEED) CHAOS_OUTAGE_READINGS=$(CHAOS_OUTAGE_READINGS) node --test --test-reporter=spec scenarios/mesh/dist/test/integration/chaos.test.js

################################################################################
# faasd node runtime (images/faasd, images/node; see images/node/README.md)
################################################################################
# Runtime of the local mesh: process (bare processes, fast, up to 30 nodes) or faasd (every node
# a whole appliance: containerd + faasd in its own network and mount namespace).
RUNTIME ?= process
# Architectures of the faasd binaries (amd64 and arm64 every time; override for a quick local build).
FAASD_ARCHES ?= amd64 arm64
MESH_ENV += MESH_RUNTIME=$(RUNTIME)

.PHONY: faasd-bins
faasd-bins: ## Build faasd, gateway, of-watchdog, queue-worker, NATS Streaming (+ Debian's Prometheus) for amd64/arm64 into .cache/faasd/bin.
	FAASD_ARCHES="$(FAASD_ARCHES)" images/faasd/build-bins.sh

# a faasd mesh needs the binaries and the images
mesh-up: $(if $(filter faasd,$(RUNTIME)),faasd-bins images)

# The faasd tier needs the binaries and these images for this machine's architecture only (an
# image already built for more architectures by `make images` is kept as it is).
HOST_ARCH := $(shell dpkg --print-architecture)
FAASD_TIER_IMAGES := gateway queue-worker nats-streaming prometheus mongo-test-server listener miso-agent syncmesh-fn registry miso-counter fn-node20

.PHONY: faasd-tier-deps
faasd-tier-deps: build images-tools ## faasd binaries + the images of the faasd tier, host architecture only (make test builds these).
	FAASD_ARCHES=$(HOST_ARCH) images/faasd/build-bins.sh
	IMAGE_ARCHES=$(HOST_ARCH) images/build/build.sh $(FAASD_TIER_IMAGES)

.PHONY: test-faasd
test-faasd: build tools faasd-tier-deps ## Only the faasd tier (root; make test runs it last): 3-node faasd mesh, exact aggregate + collect via each gateway, /system/*, kill -9 restarts, clean mesh-down.
	MESH_TEST_DATA=$(DATA) hack/test.sh faasd

# Users' functions on a faasd mesh (docs/guides/deploy-a-function.md): every node's registry and
# gateway from the topology (.mesh/topology.json). FN_ARGS: more of `mesh fn deploy`'s options.
FN ?=
IMAGE ?=
FN_NODES ?=
FN_ARGS ?=

.PHONY: faas-cli
faas-cli: ## Build the upstream faas-cli 0.18.12 from ../shared/third_party, offline, into .cache/faas-cli/faas-cli.
	hack/faas-cli.sh

.PHONY: fn-deploy
fn-deploy: build ## Deploy a function to every faasd node or FN_NODES: make fn-deploy FN=hello IMAGE=<node registry>/hello:1 [FN_NODES=node-1,node-2] [FN_ARGS='--label com.syncmesh.miso=true'].
	$(MESH_ENV) $(MESH_CLI) fn deploy $(FN) --image $(IMAGE) $(if $(FN_NODES),--nodes $(FN_NODES)) $(FN_ARGS)

.PHONY: fn-remove
fn-remove: build ## Remove a function from every faasd node or FN_NODES: make fn-remove FN=hello [FN_NODES=node-2].
	$(MESH_ENV) $(MESH_CLI) fn remove $(FN) $(if $(FN_NODES),--nodes $(FN_NODES))

.PHONY: fn-sync
fn-sync: build ## Give a node that joined later the mesh's functions (from the other nodes' registries): make fn-sync NODE=node-4.
	$(MESH_ENV) $(MESH_CLI) fn sync $(NODE)

################################################################################
# Container images (images/build, images/<name>; see images/README.md)
################################################################################
# Images to build (default: all); each becomes .cache/images/<name>.oci.tar, a multi-arch OCI
# index (linux/amd64 + linux/arm64) named localhost/syncmesh-edge/<name>:<version>.
IMAGE_NAMES ?=
# Tools of the image build and its test tier, from apt.
# arch-test: mmdebstrap needs it for another architecture (arm64 images, Pi rootfs, bundle).
IMAGES_APT := umoci skopeo mmdebstrap arch-test jq file curl containerd runc qemu-user-static buildah

.PHONY: images-tools
images-tools: ## Install the image tools from apt (umoci, skopeo, mmdebstrap + arch-test, containerd, runc, qemu-user-static, buildah).
	@for t in umoci skopeo mmdebstrap arch-test jq file curl containerd runc qemu-aarch64-static buildah; do command -v $$t >/dev/null || missing=1; done; \
	if [[ -n $${missing:-} ]]; then $(APT_INSTALL) $(IMAGES_APT); fi

.PHONY: images
images: build faasd-bins images-tools ## Build the container images (amd64 + arm64) into .cache/images; cached: seconds when nothing changed.
	IMAGE_ARCHES="$(FAASD_ARCHES)" images/build/build.sh $(IMAGE_NAMES)

.PHONY: test-images
test-images: images ## Image tests (root): labels, non-root, no test code, each image starts under a throwaway containerd, same digest twice.
	images/build/test.sh

.PHONY: images-docs
images-docs: ## Regenerate the sizes table of images/README.md and the package lists of images/NOTICE from the last make images.
	images/build/docs.sh

################################################################################
# Provisioning with Ansible (ansible/; see docs/guides/provision-with-ansible.md)
################################################################################
# Lab hosts: count, and extra ansible-playbook arguments for make provision (e.g. --tags runtime).
HOSTS ?= 3
PROVISION_ARGS ?=
# ansible-core + ansible-lint, pinned in ansible/requirements.txt, in a repo-local venv.
ANSIBLE_VENV := $(CURDIR)/.cache/ansible-venv
ANSIBLE_VENV_STAMP := $(ANSIBLE_VENV)/.requirements-$(shell sha256sum ansible/requirements.txt | cut -c1-12)
ANSIBLE_ENV := ANSIBLE_CONFIG=$(CURDIR)/ansible/ansible.cfg PATH=$(ANSIBLE_VENV)/bin:$$PATH
LAB_INVENTORY := .lab/inventory.yml
ANSIBLE_PLAYBOOKS := site add_node remove_node upgrade verify

$(ANSIBLE_VENV_STAMP): ansible/requirements.txt
	python3 -m venv $(ANSIBLE_VENV)
	$(ANSIBLE_VENV)/bin/pip install --quiet --disable-pip-version-check -r ansible/requirements.txt
	@touch $@

.PHONY: ansible-venv
ansible-venv: $(ANSIBLE_VENV_STAMP) ## Python venv with ansible-core and ansible-lint (pinned) in .cache/ansible-venv.

.PHONY: ansible-docs
ansible-docs: ansible-venv ## Regenerate the roles' README variable tables from meta/argument_specs.yml.
	$(ANSIBLE_VENV)/bin/python ansible/scripts/role_docs.py

.PHONY: ansible-lint
ansible-lint: ansible-venv ## ansible-lint (production profile), --syntax-check of every playbook, README tables up to date.
	cd ansible && $(ANSIBLE_ENV) ansible-lint --nocolor
	cd ansible && for p in $(ANSIBLE_PLAYBOOKS); do $(ANSIBLE_ENV) ansible-playbook -i inventories/example/hosts.yml --syntax-check syncmesh.edge.$$p; done
	$(ANSIBLE_VENV)/bin/python ansible/scripts/role_docs.py --check

.PHONY: test-ansible
test-ansible: ansible-venv ## Ansible without hosts: filter/signature unit tests, bad inventories fail before any change (--check, local).
	$(ANSIBLE_VENV)/bin/python -m unittest discover -s ansible/tests/unit -t ansible/tests/unit -v
	ANSIBLE_VENV=$(ANSIBLE_VENV) ansible/tests/preflight/run.sh

.PHONY: test-collection
test-collection: ansible-venv ## The collection as users get it (~3 min warm): ansible-galaxy collection build, the tarball installed into a fresh venv, playbooks by name, ansible-test sanity.
	ANSIBLE_VENV=$(ANSIBLE_VENV) ansible/tests/collection/run.sh

.PHONY: lab-tools
lab-tools: ## Install systemd-nspawn (Debian's systemd-container) for the Ansible lab's hosts.
	@command -v systemd-nspawn >/dev/null || $(APT_INSTALL) systemd-container

.PHONY: lab-up
lab-up: lab-tools ## Boot HOSTS bare Debian hosts (systemd-nspawn, private bridge smn-br0); writes .lab/inventory.yml (root).
	LAB_HOSTS=$(HOSTS) ansible/lab/lab-up.sh

.PHONY: lab-down
lab-down: ## Stop and remove every lab host, namespace, veth, cgroup and the bridge (idempotent).
	ansible/lab/lab-down.sh

.PHONY: bundle
bundle: images-tools ## Offline bundle: collection + apt repos + faasd + images + SHA256SUMS, in .cache/bundle/ (BUNDLE_STRICT=1 refuses a partial one).
	hack/bundle/build.sh

.PHONY: provision
provision: ansible-venv ## Run syncmesh.edge.site against .lab/inventory.yml (PROVISION_ARGS="--tags runtime"), then write .mesh/topology.json.
	@test -f $(LAB_INVENTORY) || { echo "provision: no $(LAB_INVENTORY): run make lab-up first"; exit 1; }
	$(ANSIBLE_ENV) ansible-playbook -i $(LAB_INVENTORY) syncmesh.edge.site $(PROVISION_ARGS)
	@if [[ -z "$(PROVISION_ARGS)" ]]; then mkdir -p .mesh && $(ANSIBLE_ENV) ansible-inventory -i $(LAB_INVENTORY) --list > .lab/inventory.json \
		&& python3 ansible/lab/topology.py .lab/inventory.json $(CURDIR)/.lab/.secrets/mesh-secret .mesh/topology.json; fi

.PHONY: test-lab
test-lab: ansible-venv lab-tools faasd-bins images ## Lab tier (root; 34 min here, mostly quiet): bundle, 4 nspawn hosts, site twice (changed=0), verify with data, add-node, remove-node, rolling upgrade, lab-down.
	ansible/lab/test-lab.sh

.PHONY: test-lab-ci
test-lab-ci: ansible-venv lab-tools ## CI lab tier (root; amd64, builds its own inputs; 82 min cold at load 10-94): bundle, 3 nspawn hosts, site, again (changed=0), verify with data, lab-down.
	$(MAKE) faasd-bins images FAASD_ARCHES=amd64
	LAB_TEST_TIER=ci BUNDLE_ARCHES=amd64 ansible/lab/test-lab.sh

################################################################################
# Appliance images (images/appliance; see images/appliance/README.md)
################################################################################
# Tools of the appliance build and its test tier, from apt.
APPLIANCE_APT := mmdebstrap skopeo fdisk mtools dosfstools e2fsprogs zstd qemu-system-x86 qemu-utils ovmf python3-jinja2 python3-yaml openssh-client

.PHONY: appliance-tools
appliance-tools: ## Install the appliance build and test tools from apt (mmdebstrap, sfdisk, mtools, qemu, OVMF, ...).
	@for t in mmdebstrap skopeo sfdisk mformat mkfs.ext4 zstd qemu-system-x86_64 qemu-img ssh-keygen; do command -v $$t >/dev/null || missing=1; done; \
	[[ -f /usr/share/OVMF/OVMF_CODE_4M.fd ]] || missing=1; \
	if [[ -n $${missing:-} ]]; then $(APT_INSTALL) $(APPLIANCE_APT); fi

.PHONY: image-vm
image-vm: faasd-bins images appliance-tools ## x86-64 appliance VM image (root): .cache/appliance/out/syncmesh-edge-vm-amd64.{raw.zst,qcow2}, SHA256SUMS, manifest.json.
	images/appliance/build-vm.sh

.PHONY: test-appliance
test-appliance: build image-vm ## Appliance tier (root; ~32 min with APPLIANCE_VM_CPUS=1 on an idle host): boots 3 VMs + 1 with a bad node file (QEMU TCG), exact mesh checks, teardown.
	images/appliance/test/test-vm.sh

.PHONY: test-appliance-unit
test-appliance-unit: images-tools ## The appliance's boot program without a VM (Python unittest, seconds): node-file validator, gateway client, MongoDB's official image (mongo-image.sh with skopeo, node-prepare.sh's official variant, pull and replica-set steps).
	PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s images/appliance/firstboot

# The Raspberry Pi 4 / Pi 400 / CM4 image (images/appliance/pi; see its README). Its own tier:
# the static checks take seconds, the aarch64 boot under TCG tens of minutes.
PI_APT := qemu-user-static binfmt-support qemu-system-arm jq curl openssl

.PHONY: image-pi
image-pi: faasd-bins images appliance-tools ## Raspberry Pi 4 / 400 / CM4 SD image (root): .cache/appliance/out/pi/syncmesh-edge-pi4-arm64.img.zst, SHA256SUMS, manifest.json.
	@command -v qemu-aarch64-static >/dev/null || $(APT_INSTALL) $(PI_APT)
	images/appliance/pi/build.sh

.PHONY: test-pi
test-pi: image-pi ## Pi image tier (root): partition table, boot files, node file; boots it under qemu-system-aarch64 (virt, TCG) until ready, then as an SD card on raspi3b.
	@command -v qemu-system-aarch64 >/dev/null || $(APT_INSTALL) $(PI_APT)
	images/appliance/pi/test.sh

################################################################################
# Terraform scenarios (terraform/README.md, docs/guides/terraform-scenarios.md)
################################################################################
TF := terraform/hack/tf.sh
SCENARIO ?= local-3

.PHONY: tf-tools
tf-tools: ## Install libvirt, QEMU, OVMF and ISO tools from apt for the local Terraform scenarios.
	@command -v libvirtd >/dev/null && command -v dnsmasq >/dev/null && command -v xsltproc >/dev/null && command -v mkisofs >/dev/null && command -v cpio >/dev/null && command -v depmod >/dev/null || \
		$(APT_INSTALL) libvirt-daemon-system qemu-system-x86 qemu-utils ovmf genisoimage dnsmasq-base xsltproc kmod cpio busybox-static

.PHONY: tf-toolchain
tf-toolchain: ## Build OpenTofu 1.12.6 and the pinned providers into .cache/terraform (cached; cold ~45 min under load).
	terraform/hack/toolchain.sh

.PHONY: tf-up
tf-up: tf-tools ## Apply a local scenario and wait until every node is ready: make tf-up SCENARIO=local-3 (root; TF_TINY=1: plumbing-only VM).
	$(TF) up $(SCENARIO)

.PHONY: tf-down
tf-down: ## Destroy the scenario, stop libvirtd, check no domain/network/volume/bridge/process is left (idempotent).
	$(TF) down $(SCENARIO)

.PHONY: test-tf-plans
test-tf-plans: ## tofu fmt -check, validate and tofu test (mock providers, real schemas) of every module, scenario and example.
	$(TF) test

.PHONY: test-tf-smoke
test-tf-smoke: tf-tools ## Real libvirt apply of local-3 with the tiny test VM (plumbing: domains, seeds, static addresses, teardown).
	terraform/tests/local.sh

.PHONY: test-tf-interrupted
test-tf-interrupted: tf-tools ## A killed run (daemons and VMs SIGKILLed) does not break the next up or down, here or in a fresh clone (tiny VMs, root, ~3 min).
	terraform/tests/interrupted.sh

.PHONY: test-tf-local
test-tf-local: build image-vm tf-tools ansible-venv ## Real libvirt apply of local-3 with the appliance image: first-boot mesh, exact aggregate through every node, metadata block, verify playbook, make scenario TARGET=terraform, tf-down leaves nothing (root).
	terraform/tests/local-mesh.sh

.PHONY: test-scale
test-scale: build image-vm tf-tools ## local-12 and local-30 applied for real (root, ~1 h under TCG): tiny VMs at 12 and 30, then 12 full nodes as a mesh; times and memory table (terraform/tests/scale.sh).
	terraform/tests/scale.sh

# Every heavy tier, one after the other (never two VM tiers at once on this host): about 3 h.
.PHONY: test-full
test-full: ## make test, then the appliance, Terraform interrupted-run and local-3, Pi image and Ansible lab tiers, one after the other (root, ~3 h).
	$(MAKE) test
	$(MAKE) test-appliance APPLIANCE_VM_CPUS=1
	$(MAKE) test-tf-interrupted
	$(MAKE) test-tf-local
	$(MAKE) test-pi
	$(MAKE) test-lab

################################################################################
# Coordination on NATS JetStream (coordination/; see coordination/README.md)
################################################################################
# The Porcupine checker of the linearizability test, built from coordination/lincheck (go.sum pins it).
LINCHECK := $(TOOLS_BIN)/lincheck

$(LINCHECK): coordination/lincheck/go.mod coordination/lincheck/go.sum $(filter-out %_test.go,$(wildcard coordination/lincheck/*.go)) | toolchain
	mkdir -p $(TOOLS_BIN)
	cd coordination/lincheck && GOFLAGS=-mod=mod go build -trimpath -o $(LINCHECK) .

.PHONY: coordination-tools
coordination-tools: $(LINCHECK) ## nats-server 2.15.3 and the patched gateway for this architecture (faasd-bins' script), lincheck (Porcupine): what the coordination tests need.
	FAASD_ARCHES=$(HOST_ARCH) FAASD_BINS="nats-server gateway" images/faasd/build-bins.sh

.PHONY: bench-coordination
bench-coordination: build coordination-tools scenarios-venv ## Counter increments/s and p50/p99 from 1 and 3 servers, barrier rounds of 3 and 9 parties, on a 3-server cluster (BENCH_ARGS="--duration-ms 3000"); table, JSON and PNG.
	node coordination/dist/bench/bench-coordination.js $(BENCH_ARGS)
