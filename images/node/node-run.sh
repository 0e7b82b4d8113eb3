#!/usr/bin/env bash
# One faasd node, in the foreground: the job systemd does on a real appliance (containerd.service,
# systemd-journald, faasd-provider.service, faasd.service), done by this script instead.
#
# Started by node-up.sh as
#   nsenter --net=/run/netns/NETNS unshare --mount --propagation private --fork node-run.sh
# so that everything below happens in the node's own network and mount namespaces. In the mount
# namespace faasd's hard-coded paths are bind mounts of this node's state directory:
#   /var/lib/faasd            <- $NODE_STATE/var-lib-faasd          (compose file, secrets, volumes)
#   /var/lib/faasd-provider   <- $NODE_STATE/var-lib-faasd-provider (function secrets)
#   /usr/local/bin            <- $NODE_STATE/bin                    (faasd, the log shipper path)
#   /var/log/journal          <- $NODE_STATE/journal                (journald, read by /system/logs)
#   /run                      <- a fresh tmpfs                      (containerd socket+state, CNI, journald sockets)
#   /etc/cni/net.d            <- $NODE_STATE/cni-conf
#   /etc/systemd/journald.conf <- $NODE_STATE/journald.conf     (own journal, no kernel log)
#   /sys/fs/cgroup/<ctrl>     <- the node's own cgroup $NODE_CGROUP under this process's cgroup
# The last one matters: containerd names task cgroups /openfaas/<service> in every node; each
# node sees its own subtree as the root, so two nodes never share a cgroup.
#
# SIGTERM/SIGINT: faasd up removes the compose services, function tasks are deleted (their
# containers stay, so scale-from-zero brings them back on the next start), then the provider,
# containerd and journald stop. Exit when any of them dies.
#
# Env (set by node-up.sh): NODE_STATE (absolute), NODE_CGROUP, NODE_IMAGES (file: "<ns> <archive>"
# per line, imported once), NODE_READY_FILE (touched when faasd up is running).
set -o errexit -o nounset -o pipefail

: "${NODE_STATE:?}" "${NODE_CGROUP:?}"
log() { printf '%s node-run[%s]: %s\n' "$(date -u +%H:%M:%S.%3N)" "$NODE_CGROUP" "$*"; }

# --- mounts (private to this mount namespace) --------------------------------------------------
# faasd's standard paths must exist as mount points on the host (empty directories).
mkdir -p /var/lib/faasd /var/lib/faasd-provider /etc/cni/net.d /var/log/journal
for d in var-lib-faasd/secrets var-lib-faasd-provider cni-conf journal containerd/root containerd/opt cgroup-stage; do
  mkdir -p "$NODE_STATE/$d"
done
mount -t tmpfs -o mode=0755,size=128m "$NODE_CGROUP-run" /run
mkdir -p /run/containerd /run/systemd/journal /run/log/journal /run/cni
mount --bind "$NODE_STATE/var-lib-faasd" /var/lib/faasd
mount --bind "$NODE_STATE/var-lib-faasd-provider" /var/lib/faasd-provider
mount --bind "$NODE_STATE/bin" /usr/local/bin
mount --bind "$NODE_STATE/journal" /var/log/journal
mount --bind "$NODE_STATE/cni-conf" /etc/cni/net.d
[[ -f "$NODE_STATE/journald.conf" && -f /etc/systemd/journald.conf ]] && mount --bind "$NODE_STATE/journald.conf" /etc/systemd/journald.conf
# faasd looks for the CNI plugins in /opt/cni/bin (hard-coded); Debian installs them in
# /usr/lib/cni. A host without its own set there gets Debian's, in this namespace only.
if [[ ! -x /opt/cni/bin/bridge ]]; then
  [[ -x /usr/lib/cni/bridge ]] || { echo "node-run: no CNI plugins in /opt/cni/bin or /usr/lib/cni (apt install containernetworking-plugins)" >&2; exit 1; }
  mkdir -p /opt/cni/bin
  mount --bind /usr/lib/cni /opt/cni/bin
fi

# cgroup v1 (one hierarchy per controller) or the unified hierarchy: in each, a subtree for this
# node below the cgroup this script started in, bind-mounted over the hierarchy's mount point.
cgroup_dirs=()
while read -r _ mnt fstype opts _; do
  case "$fstype" in cgroup | cgroup2) ;; *) continue ;; esac
  # this process's cgroup in that hierarchy (from /proc/self/cgroup)
  if [[ "$fstype" == cgroup2 ]]; then
    key='^0::'
  else
    ctrl=$(tr ',' '\n' <<<"$opts" | grep -E '^(cpu|cpuacct|cpuset|memory|devices|freezer|blkio|pids|net_cls|net_prio|perf_event|hugetlb|rdma|misc|name=.*)$' | paste -sd, -)
    [[ -n "$ctrl" ]] || continue
    key="^[0-9]+:${ctrl}:"
  fi
  own=$(grep -E "$key" /proc/self/cgroup | head -n1 | cut -d: -f3-)
  [[ -n "$own" || "$key" == '^0::' ]] || continue
  dir="$mnt${own%/}/$NODE_CGROUP"
  mkdir -p "$dir"
  if [[ -f "$dir/cpuset.cpus" ]]; then # a cpuset child starts empty: give it its parent's
    [[ -n "$(cat "$dir/cpuset.cpus")" ]] || cat "$(dirname "$dir")/cpuset.cpus" > "$dir/cpuset.cpus"
    [[ -n "$(cat "$dir/cpuset.mems")" ]] || cat "$(dirname "$dir")/cpuset.mems" > "$dir/cpuset.mems"
  fi
  cgroup_dirs+=("$mnt|$dir")
done < /proc/self/mounts
for pair in "${cgroup_dirs[@]}"; do
  mnt=${pair%%|*} dir=${pair#*|}
  mkdir -p "$dir/supervisor"
  if [[ -f "$dir/cpuset.cpus" ]]; then
    [[ -n "$(cat "$dir/supervisor/cpuset.cpus")" ]] || cat "$dir/cpuset.cpus" > "$dir/supervisor/cpuset.cpus"
    [[ -n "$(cat "$dir/supervisor/cpuset.mems")" ]] || cat "$dir/cpuset.mems" > "$dir/supervisor/cpuset.mems"
  fi
  echo $$ > "$dir/supervisor/cgroup.procs"
  mount --bind "$dir" "$mnt"
done
log "mounts and cgroups ready (${#cgroup_dirs[@]} hierarchies)"

# --- the node's files (faasd install's job) ----------------------------------------------------
cp /etc/resolv.conf /var/lib/faasd/resolv.conf
pids=()
stop_all() {
  trap - TERM INT
  log "stopping"
  if [[ -n "${up_pid:-}" ]] && kill -0 "$up_pid" 2>/dev/null; then
    kill -TERM "$up_pid" # faasd up removes its services, then exits
    wait "$up_pid" 2>/dev/null || true
  fi
  if [[ -S /run/containerd/containerd.sock ]]; then
    for ns in openfaas-fn openfaas; do
      for t in $(ctr -n "$ns" tasks ls -q 2>/dev/null); do
        ctr -n "$ns" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
      done
      for t in $(ctr -n "$ns" tasks ls -q 2>/dev/null); do
        for _ in $(seq 1 50); do ctr -n "$ns" tasks delete "$t" >/dev/null 2>&1 && break; sleep 0.1; done
      done
    done
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  log "stopped"
}
trap 'stop_all; exit 0' TERM INT

# until_within SECONDS CMD...: run CMD every 50 ms until it succeeds; false once SECONDS passed
# (generous: on a busy host a daemon takes many times its idle start-up time)
until_within() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.05
  done
}

# --- journald (no systemd here): /system/logs reads functions' logs with journalctl -------------
/lib/systemd/systemd-journald &
pids+=($!)
until_within 60 test -S /run/systemd/journal/socket || { log "journald did not start"; stop_all; exit 1; }

# --- containerd ---------------------------------------------------------------------------------
containerd --config "$NODE_STATE/containerd.toml" > "$NODE_STATE/logs/containerd.log" 2>&1 &
pids+=($!)
ctr_up() { ctr version >/dev/null 2>&1; }
until_within 60 ctr_up || { log "containerd did not start within 60 s (see $NODE_STATE/logs/containerd.log)"; stop_all; exit 1; }
log "containerd up"

# --- images (imported once; content stays in this node's containerd root) -----------------------
if [[ -n "${NODE_IMAGES:-}" && -f "$NODE_IMAGES" ]]; then
  "$(dirname "$0")/node-import.sh" "$NODE_IMAGES" || { log "image import failed"; stop_all; exit 1; }
fi

# --- faasd provider and faasd up ----------------------------------------------------------------
# /var/lib/faasd/provider.env (node-prepare.sh): the node's plain-HTTP registry and the MISO agent's function
# folders (patch 0008)
(cd /var/lib/faasd-provider && set -a && { [[ ! -f /var/lib/faasd/provider.env ]] || source /var/lib/faasd/provider.env; } && set +a &&
  exec env secret_mount_path=/var/lib/faasd/secrets basic_auth=true hosts_dir=/var/lib/faasd \
    /usr/local/bin/faasd provider --pull-policy IfNotPresent) > "$NODE_STATE/logs/provider.log" 2>&1 &
pids+=($!)
(cd /var/lib/faasd && exec /usr/local/bin/faasd up) > "$NODE_STATE/logs/faasd-up.log" 2>&1 &
up_pid=$!
log "provider and faasd up started"
[[ -n "${NODE_READY_FILE:-}" ]] && : > "$NODE_READY_FILE"

# Exit (after cleaning up) when any of them dies: the node is broken, not half-running.
set +o errexit
wait -n "${pids[@]}" "$up_pid"
code=$?
log "a node process exited with $code; stopping the node"
stop_all
exit 1
