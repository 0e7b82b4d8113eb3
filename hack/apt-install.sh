#!/usr/bin/env bash
# Installs Debian packages for the make targets, the one way every target does it (root):
#
#   hack/apt-install.sh PACKAGE...
#
# - A run killed inside apt (a CI job or a session that ended) leaves dpkg's work unfinished, and
#   every later apt-get refuses with "dpkg was interrupted, you must manually run 'dpkg --configure
#   -a'". That is either a package `dpkg --audit` reports (half installed or configured) or a
#   journal file left in /var/lib/dpkg/updates (apt checks only those; when dpkg was killed after
#   its last status change, --audit reports nothing). Then this finishes dpkg's work first
#   (`dpkg --configure -a`, and `apt-get -f install` when --audit still reports a package), and
#   says so.
# - It waits up to APT_LOCK_TIMEOUT seconds (600) for another apt or dpkg holding the lock.
# - It installs from the package lists present; when that fails (lists missing or stale on a fresh
#   machine), it runs `apt-get update` once and tries again.
set -o errexit -o nounset -o pipefail

(($# > 0)) || { echo "apt-install: usage: hack/apt-install.sh PACKAGE..." >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "apt-install: installing $* needs root (apt-get install -y --no-install-recommends $*)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "apt-install: no apt-get here; install by hand: $*" >&2; exit 1; }

exec 1>&2   # callers may read stdout (binfmt.sh); apt's output is progress
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -q -y -o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT:-600}")

if [[ -n $(dpkg --audit 2>&1) ]] || compgen -G "/var/lib/dpkg/updates/[0-9]*" >/dev/null; then
  echo "apt-install: dpkg has unfinished work (an earlier apt or dpkg run was killed); finishing it first"
  dpkg --audit || true
  dpkg --configure -a || true
  [[ -z $(dpkg --audit 2>&1) ]] || "${apt[@]}" -f install
fi

echo "apt-install: $*"
"${apt[@]}" install --no-install-recommends "$@" ||
  { "${apt[@]}" update -qq && "${apt[@]}" install --no-install-recommends "$@"; }
