#!/usr/bin/env bash
# Checks every toolchain the project needs, one line each (found / version / missing), installs
# what Debian's apt provides, and stops with one message naming what it cannot install and how
# to get it. `make deps` runs it first, so `make demo` and `make test` do too.
#
#   hack/toolchain.sh            check, install what apt provides, fail on what is left
#   TOOLCHAIN_INSTALL=0 hack/toolchain.sh   check only (never calls apt-get)
#
# Minimum versions (why):
#   node >= 20      engines in package.json; the services use Node 20 APIs
#   java >= 17      maven.compiler.release 17 in tools/mongo-test-server/java/pom.xml
#   go   >= 1.25    `go install` of k6 v1.8.1 (its go.mod says go 1.25.0) and toxiproxy v2.12.0
#   python3 >= 3.11 the plot scripts (scenarios/measure/scripts, lib/bench-kit/plot) and the tool venvs
set -o errexit -o nounset -o pipefail

NODE_MIN=20
JAVA_MIN=17
GO_MIN=1.25
PYTHON_MIN=3.11
INSTALL=${TOOLCHAIN_INSTALL:-1}

# Commands the make targets run that Debian packages provide: command -> package (git: make
# verify lists the files to lint with git ls-files).
declare -A APT_COMMANDS=(
  [make]=make [git]=git
  [ip]=iproute2 [ss]=iproute2
  [iptables]=iptables
  [tcpdump]=tcpdump
  [ps]=procps
  [taskset]=util-linux
  [getconf]=libc-bin
  [sha256sum]=coreutils
)

missing_apt=()   # Debian packages to install
missing_other=() # "tool: how to get it" lines for what apt cannot provide here

# version_ge A B: true when dotted version A >= B.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

report() { printf '  %-10s %-8s %s\n' "$1" "$2" "$3"; }

# --- checks: each sets one report line and records what is missing -----------------------------
check_node() {
  if ! command -v node >/dev/null; then
    report node missing "(need >= $NODE_MIN)"
    missing_other+=("node >= $NODE_MIN: Debian bookworm's apt has only Node 18; install Node.js $NODE_MIN LTS (NodeSource's nodejs .deb or the official linux-x64 tarball), which includes npm")
    return
  fi
  local v; v=$(node -p 'process.versions.node')
  if version_ge "$v" "$NODE_MIN"; then report node found "$v"; else
    report node old "$v (need >= $NODE_MIN)"
    missing_other+=("node >= $NODE_MIN (found $v): install Node.js $NODE_MIN LTS (NodeSource's nodejs .deb or the official linux-x64 tarball)")
  fi
}

check_npm() {
  if command -v npm >/dev/null; then
    # npm's own package.json is read directly: `npm -v` costs half a second.
    local pkg; pkg="$(dirname "$(readlink -f "$(command -v npm)")")/../package.json"
    report npm found "$( { [ -f "$pkg" ] && node -p "require('$pkg').version"; } 2>/dev/null || npm -v)"
  else
    report npm missing ""
    missing_other+=("npm: it ships with Node.js $NODE_MIN (NodeSource's nodejs .deb or the official tarball); Debian's npm package requires Debian's older nodejs")
  fi
}

check_java() {
  local v=''
  if command -v java >/dev/null && command -v javac >/dev/null; then
    # The JDK's `release` file names its version without starting a JVM.
    local release; release="$(dirname "$(readlink -f "$(command -v javac)")")/../release"
    if [ -f "$release" ]; then v=$(sed -n 's/^JAVA_VERSION="\(.*\)"/\1/p' "$release"); else v=$(javac -version 2>&1 | awk '{print $2}'); fi
  fi
  if [ -n "$v" ] && version_ge "$v" "$JAVA_MIN"; then report java found "$v"; return; fi
  report java missing "${v:+$v, }(need a JDK >= $JAVA_MIN with javac)"
  missing_apt+=(openjdk-17-jdk-headless)
}

check_mvn() {
  if command -v mvn >/dev/null; then
    report mvn found "$(mvn --version 2>/dev/null | head -n1 | sed -E 's/\x1b\[[0-9;]*m//g; s/^Apache Maven ([^ ]+).*/\1/')"
  else
    report mvn missing ""
    missing_apt+=(maven)
  fi
}

check_go() {
  if ! command -v go >/dev/null; then
    report go missing "(need >= $GO_MIN)"
    missing_other+=("go >= $GO_MIN: Debian bookworm's golang-go is 1.19; install the official go1.25+ linux-amd64 tarball into /usr/local/go and put /usr/local/go/bin on PATH")
    return
  fi
  local v; v=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  if version_ge "$v" "$GO_MIN"; then report go found "$v"; else
    report go old "$v (need >= $GO_MIN)"
    missing_other+=("go >= $GO_MIN (found $v): install the official go1.25+ linux-amd64 tarball into /usr/local/go and put /usr/local/go/bin first on PATH")
  fi
}

check_python() {
  if ! command -v python3 >/dev/null; then
    report python3 missing "(need >= $PYTHON_MIN with venv)"
    missing_apt+=(python3 python3-venv)
    return
  fi
  local v; v=$(python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
  if ! version_ge "$v" "$PYTHON_MIN"; then
    report python3 old "$v (need >= $PYTHON_MIN)"
    missing_other+=("python3 >= $PYTHON_MIN (found $v): Debian bookworm's python3 is 3.11; put it first on PATH")
    return
  fi
  if python3 -c 'import venv, ensurepip' 2>/dev/null; then report python3 found "$v (venv)"; else
    report python3 found "$v, but without venv/ensurepip"
    missing_apt+=(python3-venv)
  fi
}

check_apt_commands() {
  local cmd
  for cmd in $(printf '%s\n' "${!APT_COMMANDS[@]}" | sort); do
    if command -v "$cmd" >/dev/null; then report "$cmd" found "$(command -v "$cmd")"; else
      report "$cmd" missing "(Debian package ${APT_COMMANDS[$cmd]})"
      missing_apt+=("${APT_COMMANDS[$cmd]}")
    fi
  done
}

check_all() {
  missing_apt=()
  missing_other=()
  check_node
  check_npm
  check_java
  check_mvn
  check_go
  check_python
  check_apt_commands
}

# --- main -----------------------------------------------------------------------------------------
echo "toolchain:"
check_all

if [ ${#missing_apt[@]} -gt 0 ]; then
  mapfile -t pkgs < <(printf '%s\n' "${missing_apt[@]}" | sort -u)
  if [ "$INSTALL" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "toolchain: installing from apt: ${pkgs[*]}"
    "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${pkgs[@]}"
    echo "toolchain: after install:"
    check_all
  fi
fi

if [ ${#missing_apt[@]} -gt 0 ] || [ ${#missing_other[@]} -gt 0 ]; then
  {
    echo
    echo "toolchain: cannot continue; missing:"
    if [ ${#missing_apt[@]} -gt 0 ]; then
      mapfile -t pkgs < <(printf '%s\n' "${missing_apt[@]}" | sort -u)
      echo "  - Debian packages: ${pkgs[*]}"
      echo "    as root: apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
    fi
    for line in "${missing_other[@]}"; do echo "  - $line"; done
  } >&2
  exit 1
fi
echo "toolchain: all present"
