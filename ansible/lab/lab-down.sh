#!/usr/bin/env bash
# make lab-down: stops every lab host (clean poweroff, then SIGKILL after a deadline) and removes
# the hosts, their network namespaces, veths and the bridge. Idempotent; safe after a failed lab-up.
set -o errexit -o nounset -o pipefail

LAB_PREFIX=${LAB_PREFIX:-smn}
LAB_DIR=${LAB_DIR:-.lab}
BRIDGE="${LAB_PREFIX}-br0"
STOP_DEADLINE_S=${LAB_STOP_DEADLINE_S:-30}

if [[ -d "$LAB_DIR/run" ]]; then
  for pidfile in "$LAB_DIR"/run/*.pid; do
    [[ -e $pidfile ]] || continue
    pid=$(cat "$pidfile")
    # only a systemd-nspawn we started (the pid may have been reused)
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q '^systemd-nspawn '; then
      kill -TERM "$pid" 2>/dev/null || true   # nspawn asks the host's systemd to power off
    fi
  done
  for pidfile in "$LAB_DIR"/run/*.pid; do
    [[ -e $pidfile ]] || continue
    pid=$(cat "$pidfile"); deadline=$(( $(date +%s) + STOP_DEADLINE_S ))
    while kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q '^systemd-nspawn '; do
      if (( $(date +%s) >= deadline )); then echo "lab-down: $(basename "$pidfile" .pid) did not power off in ${STOP_DEADLINE_S} s; killing it" >&2; kill -KILL "$pid" 2>/dev/null || true; fi
      sleep 0.2
    done
    rm -f "$pidfile"
  done
fi

# Mounts a host may have left under the lab folder (none expected once nspawn exited).
if [[ -d $LAB_DIR ]]; then
  abs=$(cd "$LAB_DIR" && pwd)
  { findmnt -rn -o TARGET | grep -F "$abs/" || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
fi

# The hosts' cgroup subtrees (runtime mode), deepest first: containers inside made children.
if [[ -f "$LAB_DIR/run/cgroups" ]]; then
  while read -r dir; do
    [[ -d $dir ]] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "$(dirname "$dir")" 2>/dev/null || true
  done < "$LAB_DIR/run/cgroups"
fi

for ns in $(ip netns list | awk '{print $1}' | grep -E "^${LAB_PREFIX}[0-9]+$" || true); do
  ip netns pids "$ns" | xargs -r kill -KILL 2>/dev/null || true
  ip netns delete "$ns"
done
for dev in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${LAB_PREFIX}[0-9]+-h$" || true); do
  ip link delete "$dev" 2>/dev/null || true
done
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
rm -rf "$LAB_DIR"
# the topology make provision / test-lab wrote for the lab (mesh "ansible"); a local mesh's stays
if [[ -f .mesh/topology.json ]] && grep -q '"mesh": "ansible"' .mesh/topology.json; then rm -f .mesh/topology.json; fi
# nspawn's mount-propagation folders (it refuses to remove them itself when /run is not a tmpfs)
for d in /run/systemd/nspawn/propagate/"$LAB_PREFIX"[0-9]*; do [[ -d $d ]] && rm -rf --one-file-system "$d"; done
echo "lab-down: no lab host, namespace, veth, bridge, mount or lab topology left"
