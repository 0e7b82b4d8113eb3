#!/usr/bin/env bash
# make demo: builds what the demo needs (on a first run it says what and about how long, with
# progress), then runs the 3-node mesh demo (make mesh-demo) and prints where the time went.
#   hack/demo.sh faasd     every node containerd + faasd (what a user flashes): builds faasd and the images for this machine's architecture
#   hack/demo.sh process   every node bare processes
set -o errexit -o nounset -o pipefail
runtime=${1:-faasd}
cd "$(dirname "$0")/.."
make=${MAKE:-make}
arch=$(dpkg --print-architecture)
t0=$SECONDS

say() { printf '\ndemo: %s\n' "$*" >&2; }

say "runtime $runtime; setting up (npm packages, TypeScript build, test server jar, toxiproxy)"
[[ -d node_modules ]] || say "first run: npm ci and the test server jar (Maven) are installed/built now (a few minutes)"
"$make" --no-print-directory build tools
t_setup=$((SECONDS - t0))

t_images=0
if [[ $runtime == faasd ]]; then
  todo=()
  [[ -x .cache/faasd/bin/$arch/faasd ]] ||
    todo+=("faasd 0.19.0 (with our patches), the OpenFaaS gateway, of-watchdog, queue-worker and NATS Streaming, built from ../shared/third_party with Go, for $arch (about 5-15 min on 2 busy cores)")
  [[ -f .cache/images/syncmesh-fn.oci.tar ]] ||
    todo+=("the container images (Debian base layers with mmdebstrap, a jlink'd JRE, Node.js, our bundles) for $arch with umoci (about 5-10 min)")
  [[ -x .cache/faas-cli/faas-cli ]] ||
    todo+=("the upstream faas-cli 0.18.12 from ../shared/third_party (the demo deploys miso-counter with it; about 1 min)")
  if ((${#todo[@]} > 0)); then
    say "first run on this machine: building what a faasd node runs (later runs reuse .cache/ and take seconds):"
    for t in "${todo[@]}"; do printf '  - %s\n' "$t" >&2; done
  else
    say "faasd binaries and images: checking they are up to date (.cache/faasd, .cache/images)"
  fi
  t1=$SECONDS
  "$make" --no-print-directory faasd-bins images FAASD_ARCHES="$arch"
  hack/faas-cli.sh > /dev/null
  t_images=$((SECONDS - t1))
fi

t2=$SECONDS
"$make" --no-print-directory mesh-demo RUNTIME="$runtime"
t_demo=$((SECONDS - t2))
say "done in $((SECONDS - t0)) s: set-up $t_setup s, faasd binaries + images $t_images s, mesh + queries + teardown $t_demo s"
