#!/usr/bin/env bash
# Stops one faasd node started by node-up.sh (or the mesh) and removes what it leaves in the
# host's cgroup hierarchies. Idempotent.
#
#   node-down.sh NODE_CGROUP [PID]
#
# PID (the node-run.sh process) gets SIGTERM and up to NODE_STOP_TIMEOUT_S (default 60) to stop
# faasd up, the function tasks, the provider, containerd and journald; then every process still
# in the node's cgroups (a shim, a task) is killed and the cgroups are removed, deepest first.
# The node's mounts live only in its mount namespace: they go with its last process.
set -o errexit -o nounset -o pipefail

cg=${1:?usage: node-down.sh NODE_CGROUP [PID]}
pid=${2:-}
timeout_s=${NODE_STOP_TIMEOUT_S:-60}
[[ "$cg" =~ ^[a-z][a-z0-9-]{1,30}$ ]] || { echo "node-down: bad cgroup name '$cg'" >&2; exit 2; }

if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((timeout_s * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi

# every directory named $cg in any hierarchy, below this process's own cgroup there
dirs=()
while read -r _ mnt fstype _; do
  case "$fstype" in cgroup | cgroup2) ;; *) continue ;; esac
  while IFS= read -r d; do dirs+=("$d"); done < <(find "$mnt" -maxdepth 4 -type d -name "$cg" 2>/dev/null)
done < /proc/self/mounts
((${#dirs[@]} > 0)) || exit 0

# kill what is left (repeat: a dying shim can still fork), then remove the tree bottom-up
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=0
  for d in "${dirs[@]}"; do
    while IFS= read -r f; do
      while read -r p; do [[ -n "$p" ]] && { kill -KILL "$p" 2>/dev/null || true; left=1; }; done < "$f"
    done < <(find "$d" -name cgroup.procs 2>/dev/null)
  done
  ((left == 0)) && break
  sleep 0.2
done
for d in "${dirs[@]}"; do
  find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
done
still=0
for d in "${dirs[@]}"; do [[ -d "$d" ]] && { echo "node-down: cgroup $d could not be removed" >&2; still=1; }; done
exit $still
