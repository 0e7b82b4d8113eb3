#!/usr/bin/env bash
# make lab-up HOSTS=N: N bare Debian hosts (systemd as PID 1, sshd, python3), each booted with
# systemd-nspawn in its own network namespace on a private bridge, reachable from this machine
# only (no route out: an air-gapped site). Writes .lab/inventory.yml for Ansible.
#
# Env: LAB_HOSTS (3), LAB_PREFIX (smn: every host, namespace, bridge and veth name starts with it),
# LAB_SUBNET (10.231.77: hosts get .11, .12, ...; the bridge .1), LAB_DIR (.lab),
# LAB_NSPAWN_MODE (runtime: the flags containerd needs inside; plain: nspawn's defaults).
set -o errexit -o nounset -o pipefail

LAB_HOSTS=${LAB_HOSTS:-3}
LAB_PREFIX=${LAB_PREFIX:-smn}
LAB_SUBNET=${LAB_SUBNET:-10.231.77}
LAB_DIR=${LAB_DIR:-.lab}
LAB_NSPAWN_MODE=${LAB_NSPAWN_MODE:-runtime}
LAB_USER=edge
BRIDGE="${LAB_PREFIX}-br0"
BOOT_DEADLINE_S=${LAB_BOOT_DEADLINE_S:-120}

die() { echo "lab-up: $*" >&2; exit 1; }
[[ $LAB_HOSTS =~ ^[0-9]+$ ]] && (( LAB_HOSTS >= 1 && LAB_HOSTS <= 20 )) || die "HOSTS must be 1..20, got '$LAB_HOSTS'"
[[ $(id -u) == 0 ]] || die "needs root (network namespaces, systemd-nspawn)"
command -v systemd-nspawn >/dev/null || die "systemd-nspawn is missing: apt-get install systemd-container"
[[ -e "$LAB_DIR/hosts" ]] && die "$LAB_DIR already has hosts: run make lab-down first"

rootfs=$(ansible/lab/rootfs.sh)
mkdir -p "$LAB_DIR"/{hosts,ssh,run}
LAB_DIR=$(cd "$LAB_DIR" && pwd)
key="$LAB_DIR/ssh/id_ed25519"
ssh-keygen -q -t ed25519 -N '' -C "syncmesh-edge-lab" -f "$key"

# The bridge: the controller's side of the lab network. No NAT, no forwarding: hosts reach
# only this machine.
# A fixed MAC: a bridge without one takes its lowest port MAC and changes it as ports join,
# which leaves the guests' ARP entries for its address pointing at a MAC it no longer answers.
ip link add "$BRIDGE" address "$(printf '%s' "$BRIDGE" | sha256sum | sed -E 's/^..(..)(..)(..)(..)(..).*/02:\1:\2:\3:\4:\5/')" type bridge
ip addr add "$LAB_SUBNET.1/24" dev "$BRIDGE"
ip link set "$BRIDGE" up

# Flags containerd/runc need inside an nspawn host (see ansible/lab/README.md for what each buys).
nspawn_flags=(--boot --register=no --keep-unit --quiet)
if [[ $LAB_NSPAWN_MODE == runtime ]]; then
  nspawn_flags+=(--capability=all --system-call-filter='@keyring bpf')
fi
# cgroup v1 hosts: nspawn mounts the controller hierarchies read-only, so runc inside cannot create
# a container's cgroup. "runtime" mode gives each lab host its own subtree of every controller,
# below this shell's own cgroup (so nothing escapes the limits this machine puts on us), and
# bind-mounts that subtree into the host at /var/lib/lab-cgroup/<controller>; the lab-cgroup unit
# (ansible/lab/lab-cgroup.service, lab only) mounts each over /sys/fs/cgroup/<controller> at boot.
V1_CONTROLLERS=(cpuset cpu cpuacct memory pids devices blkio freezer)
delegate_cgroups() {  # name -> prints nspawn --bind flags; the subtrees are recorded for lab-down
  local name=$1 c base dir
  for c in "${V1_CONTROLLERS[@]}"; do
    [[ -d /sys/fs/cgroup/$c ]] || continue
    base=$(awk -F: -v c="$c" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup)
    dir="/sys/fs/cgroup/$c${base%/}/$LAB_PREFIX-lab/$name"
    mkdir -p "$dir"
    if [[ $c == cpuset ]]; then  # a new cpuset has no cpus/mems: inherit the parent's
      for f in cpuset.cpus cpuset.mems; do
        cat "$(dirname "$dir")/../$f" > "$(dirname "$dir")/$f"; cat "$(dirname "$dir")/$f" > "$dir/$f"
      done
    fi
    echo "$dir" >> "$LAB_DIR/run/cgroups"
    printf -- '--bind=%s:/var/lib/lab-cgroup/%s\n' "$dir" "$c"
  done
}

inventory="$LAB_DIR/inventory.yml"
{
  echo "# Written by make lab-up ($(date -u +%FT%TZ)); make lab-down removes it."
  echo "all:"
  echo "  vars:"
  echo "    ansible_user: $LAB_USER"
  echo "    ansible_become: true"
  echo "    ansible_ssh_private_key_file: $key"
  echo "    ansible_python_interpreter: /usr/bin/python3"
  echo "    ansible_ssh_common_args: -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no"
  echo "    # lab hosts cannot get MongoDB's official image: the test server stands in (syncmesh.edge.verify says so)"
  echo "    mongodb_variant: test_server"
  echo "  children:"
  echo "    syncmesh_nodes:"
  echo "      hosts:"
} > "$inventory"

t0=$(date +%s.%N)
for i in $(seq 1 "$LAB_HOSTS"); do
  name="$LAB_PREFIX$i"
  root="$LAB_DIR/hosts/$name"
  addr="$LAB_SUBNET.$((10 + i))"
  mkdir -p "$root"
  tar -xf "$rootfs" -C "$root"
  echo "$name" > "$root/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" > "$root/etc/hosts"
  ssh-keygen -q -A -f "$root"
  chroot "$root" useradd --create-home --shell /bin/bash --groups sudo "$LAB_USER"
  echo "$LAB_USER ALL=(ALL) NOPASSWD: ALL" > "$root/etc/sudoers.d/90-lab"
  chmod 0440 "$root/etc/sudoers.d/90-lab"
  install -d -m 0700 -o 1000 -g 1000 "$root/home/$LAB_USER/.ssh"
  install -m 0600 -o 1000 -g 1000 "$key.pub" "$root/home/$LAB_USER/.ssh/authorized_keys"
  if [[ $LAB_NSPAWN_MODE == runtime ]]; then
    install -m 0644 ansible/lab/lab-cgroup.service "$root/etc/systemd/system/lab-cgroup.service"
    mkdir -p "$root/etc/systemd/system/sysinit.target.wants" "$root/var/lib/lab-cgroup"
    ln -sf ../lab-cgroup.service "$root/etc/systemd/system/sysinit.target.wants/lab-cgroup.service"
  fi
  # The host's network: its own namespace, one veth to the lab bridge, a static address.
  ip netns add "$name"
  ip link add "$name-h" type veth peer name "$name-c"
  ip link set "$name-c" netns "$name"
  ip -n "$name" link set "$name-c" name eth0
  ip -n "$name" addr add "$addr/24" dev eth0
  ip -n "$name" link set lo up
  # nspawn keeps /proc/sys read-only inside (with a namespace given by path): set from outside
  # what a faasd node needs, so the containerd role finds it already right.
  ip netns exec "$name" sysctl -qw net.ipv4.ip_forward=1
  ip -n "$name" link set eth0 up
  ip link set "$name-h" master "$BRIDGE" up
  host_flags=()
  if [[ $LAB_NSPAWN_MODE == runtime && ! -e /sys/fs/cgroup/cgroup.controllers ]]; then
    mapfile -t host_flags < <(delegate_cgroups "$name")
  fi
  # The wrapper joins the host's cgroup subtrees first, so nspawn's cgroup namespace is rooted there.
  setsid bash -c 'for d in $(grep -F "/$0" "$1" 2>/dev/null); do echo $$ > "$d/cgroup.procs"; done; exec "${@:2}"' \
    "$LAB_PREFIX-lab/$name" "$LAB_DIR/run/cgroups" \
    systemd-nspawn "${nspawn_flags[@]}" "${host_flags[@]}" --directory="$root" --machine="$name" --hostname="$name" \
    --network-namespace-path="/run/netns/$name" </dev/null >"$LAB_DIR/run/$name.console" 2>&1 &
  echo $! > "$LAB_DIR/run/$name.pid"
  lat=$(awk -v i="$i" 'BEGIN { printf "%.4f", 42.6977 + (i - 1) * 0.0123 }')
  lon=$(awk -v i="$i" 'BEGIN { printf "%.4f", 23.3219 + (i - 1) * 0.0157 }')
  {
    echo "        $name:"
    echo "          ansible_host: $addr"
    echo "          syncmesh_lat: $lat"
    echo "          syncmesh_lon: $lon"
    echo "          lab_host: true"
  } >> "$inventory"
done

# Ready = sshd answers and systemd says the boot is finished (poll with a deadline).
for i in $(seq 1 "$LAB_HOSTS"); do
  name="$LAB_PREFIX$i"; addr="$LAB_SUBNET.$((10 + i))"
  deadline=$(( $(date +%s) + BOOT_DEADLINE_S ))
  until ssh -q -i "$key" -o BatchMode=yes -o ConnectTimeout=2 -o UserKnownHostsFile=/dev/null \
      -o StrictHostKeyChecking=no "$LAB_USER@$addr" systemctl is-system-running --wait >/dev/null 2>&1 \
      || ssh -q -i "$key" -o BatchMode=yes -o ConnectTimeout=2 -o UserKnownHostsFile=/dev/null \
      -o StrictHostKeyChecking=no "$LAB_USER@$addr" 'systemctl is-system-running | grep -qx degraded'; do
    kill -0 "$(cat "$LAB_DIR/run/$name.pid")" 2>/dev/null || die "$name exited while booting; see $LAB_DIR/run/$name.console"
    (( $(date +%s) < deadline )) || die "$name not up within ${BOOT_DEADLINE_S} s; see $LAB_DIR/run/$name.console"
    sleep 0.5
  done
done
boot_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "lab-up: $LAB_HOSTS hosts booted (ssh + systemd ready) in $boot_s s; inventory $inventory"
echo "$boot_s" > "$LAB_DIR/run/boot-seconds"
