#!/usr/bin/env bash
# libvirtd and virtlogd for the local Terraform scenarios, started by hand (this machine has no
# systemd) inside a network namespace of their own, so the isolated networks, bridges and taps
# libvirt creates never touch the host's interfaces or firewall. The host reaches the mesh
# network through one veth pair (host end $TF_HOST_IF with $TF_HOST_ADDR).
#
#   terraform/hack/libvirt.sh start     idempotent; waits until libvirtd answers. When it starts the
#                                       daemons, it first removes what an interrupted run left
#                                       (see reap and sweep below)
#   terraform/hack/libvirt.sh attach BRIDGE   plug the host's veth into BRIDGE (after apply)
#   terraform/hack/libvirt.sh stop      removes every $TF_PREFIX* domain, network, pool left over, stops
#                                       the daemons (by their pid files), deletes netns and veth
#   terraform/hack/libvirt.sh status
#   terraform/hack/libvirt.sh running   exit 0 while the libvirtd this checkout started runs
#
# Env (documented defaults): TF_PREFIX=smt (objects named so are ours to remove),
# TF_NETNS=$TF_PREFIX-lv, TF_HOST_IF=$TF_PREFIX-h0, TF_HOST_ADDR=10.61.0.2/24,
# TF_RUN_DIR=.cache/terraform/libvirt.
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
PREFIX=${TF_PREFIX:-smt}
NETNS=${TF_NETNS:-$PREFIX-lv}
HOST_IF=${TF_HOST_IF:-$PREFIX-h0}
PEER_IF="${NETNS}h"
HOST_ADDR=${TF_HOST_ADDR:-10.61.0.2/24}
RUN_DIR=${TF_RUN_DIR:-$root/.cache/terraform/libvirt}
URI=qemu:///system
QEMU_CONF=/etc/libvirt/qemu.conf

log() { printf 'libvirt: %s\n' "$*" >&2; }
die() { printf 'libvirt: ERROR: %s\n' "$*" >&2; exit 1; }
virsh_() { virsh -q -c "$URI" "$@"; }

# pid of a daemon we started, from its pid file, only while that process still is that daemon
our_pid() {
  local name="$1" file="$RUN_DIR/$1.pid" pid
  [[ -s "$file" ]] || return 1
  pid=$(cat "$file")
  [[ -r "/proc/$pid/comm" && "$(cat "/proc/$pid/comm")" == "$name" ]] || return 1
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] || return 1
  echo "$pid"
}

# pids of running processes named $1 (a killed one stays a zombie until reaped: not running)
live() {
  local p
  for p in $(pgrep -x "$1"); do
    [[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" =~ ^[RSDT]$ ]] && printf '%s ' "$p"
  done
  return 0
}

start() {
  for tool in libvirtd virtlogd virsh qemu-system-x86_64 qemu-img mkisofs; do
    command -v "$tool" >/dev/null || die "$tool is missing: make tf-tools (apt: libvirt-daemon-system qemu-system-x86 qemu-utils genisoimage ovmf)"
  done
  mkdir -p "$RUN_DIR"
  if our_pid libvirtd >/dev/null; then
    log "libvirtd already running (pid $(our_pid libvirtd)) in netns $NETNS"
    return 0
  fi
  local other
  other=$(live libvirtd)
  if [[ -n "$other" ]]; then
    if [[ "$(ip netns identify "${other%% *}" 2>/dev/null)" == "$NETNS" ]]; then
      die "a libvirtd of another checkout runs in netns $NETNS (pid $other): its scenario may still be up. Run make tf-down there; if that run is gone, kill $other and run this again"
    fi
    die "a libvirtd we did not start is running (pid $other); it owns /run/libvirt and /etc/libvirt, stop it first"
  fi
  # No libvirtd runs, so no live run owns anything named $PREFIX*: what is there was left by a run
  # that was killed with its daemons (a CI job stopped, a session ended, the host rebooted).
  reap
  # Without user=root every domain start re-probes QEMU for minutes (no systemd, no dynamic ownership).
  if ! grep -qE '^user = "root"' "$QEMU_CONF"; then
    log "setting user = \"root\" and group = \"root\" in $QEMU_CONF"
    printf '\n# terraform/hack/libvirt.sh: no systemd here; run QEMU as root\nuser = "root"\ngroup = "root"\n' >>"$QEMU_CONF"
  fi
  ip netns list | grep -qx "$NETNS\( .*\)\?" || ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type veth peer name "$PEER_IF"
    ip link set "$PEER_IF" netns "$NETNS"
    ip addr add "$HOST_ADDR" dev "$HOST_IF"
    ip link set "$HOST_IF" up
    ip -n "$NETNS" link set "$PEER_IF" up
  fi
  ip netns exec "$NETNS" virtlogd -d -p "$RUN_DIR/virtlogd.pid"
  ip netns exec "$NETNS" libvirtd -d -p "$RUN_DIR/libvirtd.pid"
  local deadline=$((SECONDS + 120))
  until virsh_ version >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "libvirtd did not answer on $URI within 120 s"
    sleep 1
  done
  # the packaged "default" network (NAT + dnsmasq) is not ours and cannot start here
  virsh_ net-autostart default --disable >/dev/null 2>&1 || true
  # libvirt's definitions outlive its daemons (/etc/libvirt): a killed run's domains, network and
  # pool would make this run's apply fail with "already exists"
  sweep
  log "libvirtd (pid $(our_pid libvirtd)) and virtlogd (pid $(our_pid virtlogd)) up in netns $NETNS; host side $HOST_IF $HOST_ADDR"
}

attach() {
  local bridge="$1"
  ip -n "$NETNS" link set "$PEER_IF" master "$bridge"
  ip -n "$NETNS" link set "$PEER_IF" up
}

# The definitions of $PREFIX* objects libvirt keeps on disk, whether or not libvirtd runs.
defined() {
  local f
  for f in /etc/libvirt/qemu/"$PREFIX"*.xml /etc/libvirt/qemu/networks/"$PREFIX"*.xml /etc/libvirt/storage/"$PREFIX"*.xml; do
    [[ -e "$f" ]] && echo "$f"
  done
  return 0
}

# Processes, namespace and veth of a run killed with its daemons: QEMU and dnsmasq keep running in
# (or outside, if the namespace is gone) our netns, the netns and the host's veth stay. Called only
# while no libvirtd runs.
reap() {
  local pids
  pids=$( { if ip netns list | grep -q "^$NETNS\b"; then ip netns pids "$NETNS"; fi; pgrep -f "qemu-system.*-name guest=$PREFIX[0-9]+-node-" || true; } | sort -u | tr '\n' ' ')
  if [[ -n "${pids// /}" ]]; then
    log "killing what an interrupted run left running: $(for p in $pids; do printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)"
    kill -9 $pids 2>/dev/null || true
  fi
  if ip netns list | grep -q "^$NETNS\b"; then
    log "removing netns $NETNS left by an interrupted run"
    ip netns del "$NETNS"
  fi
  if ip link show "$HOST_IF" >/dev/null 2>&1; then
    log "removing $HOST_IF left by an interrupted run"
    ip link del "$HOST_IF"
  fi
}

# Leftovers of a killed apply or destroy: only objects whose names carry our prefix.
sweep() {
  local d n p v
  for d in $(virsh_ list --all --name 2>/dev/null | grep "^$PREFIX" || true); do
    log "removing leftover domain $d"
    virsh_ destroy "$d" >/dev/null 2>&1 || true
    virsh_ undefine "$d" --nvram >/dev/null 2>&1 || virsh_ undefine "$d" >/dev/null 2>&1 || true
  done
  for n in $(virsh_ net-list --all --name 2>/dev/null | grep "^$PREFIX" || true); do
    log "removing leftover network $n"
    virsh_ net-destroy "$n" >/dev/null 2>&1 || true
    virsh_ net-undefine "$n" >/dev/null 2>&1 || true
  done
  for p in $(virsh_ pool-list --all --name 2>/dev/null | grep "^$PREFIX" || true); do
    log "removing leftover pool $p and its volumes"
    virsh_ pool-start "$p" >/dev/null 2>&1 || true # an inactive pool lists no volumes
    for v in $(virsh_ vol-list "$p" 2>/dev/null | awk '{print $1}'); do virsh_ vol-delete "$v" --pool "$p" >/dev/null 2>&1 || true; done
    virsh_ pool-destroy "$p" >/dev/null 2>&1 || true
    virsh_ pool-undefine "$p" >/dev/null 2>&1 || true
  done
}

stop() {
  # definitions on disk with no daemon of ours to remove them (the host rebooted, or the run was
  # killed): start one, which removes them, then stop as usual
  if ! our_pid libvirtd >/dev/null && [[ -n "$(defined)" ]]; then
    log "definitions left on disk: $(defined | tr '\n' ' ')"
    start
  fi
  if our_pid libvirtd >/dev/null; then sweep; fi
  local name pid deadline
  for name in libvirtd virtlogd; do
    if pid=$(our_pid "$name"); then
      kill "$pid"
      deadline=$((SECONDS + 30))
      while kill -0 "$pid" 2>/dev/null; do
        ((SECONDS < deadline)) || { kill -9 "$pid" 2>/dev/null || true; break; }
        sleep 0.2
      done
    fi
    rm -f "$RUN_DIR/$name.pid"
  done
  if ip netns list | grep -q "^$NETNS\b"; then
    # anything still inside (a QEMU a crash left) is ours by construction
    for pid in $(ip netns pids "$NETNS"); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$NETNS"
  fi
  ip link del "$HOST_IF" 2>/dev/null || true
  log "stopped; netns $NETNS and $HOST_IF removed"
}

status() {
  if pid=$(our_pid libvirtd); then echo "libvirtd: pid $pid (netns $NETNS)"; else echo "libvirtd: not running"; fi
  if pid=$(our_pid virtlogd); then echo "virtlogd: pid $pid"; else echo "virtlogd: not running"; fi
  if our_pid libvirtd >/dev/null; then
    virsh_ list --all
    virsh_ net-list --all
    virsh_ pool-list --all
  fi
}

case "${1:-}" in
  start) start ;;
  attach) attach "${2:?bridge name}" ;;
  stop) stop ;;
  status) status ;;
  running) our_pid libvirtd >/dev/null ;;
  defined) defined ;;
  *) die "usage: $0 start|attach BRIDGE|stop|status|running|defined" ;;
esac
