#!/usr/bin/env bash
# Tests hack/apt-install.sh (make test-apt-install; root, about 20 s) in a throwaway Debian chroot
# that mmdebstrap builds, never on this host's own dpkg:
#   1. an apt run killed inside a maintainer script leaves dpkg interrupted, and plain apt-get then
#      refuses ("dpkg was interrupted"); the helper finishes dpkg's work and installs;
#   2. the same refusal from a journal file alone (dpkg killed after its last status change:
#      `dpkg --audit` reports nothing); the helper finishes it too;
#   3. not root, or no package named: refused with a message, nothing run;
#   4. no package lists (a fresh machine): the helper updates them once and installs.
# The chroot is built in a private mount namespace (mmdebstrap bind-mounts /dev, /proc and /sys
# while it runs), so a killed test leaves no mount; a killed test's folder is removed by the next.
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
helper=$here/../apt-install.sh
SUITE=${APT_TEST_SUITE:-bookworm}

[[ $(id -u) == 0 ]] || { echo "apt-install test: needs root (chroot)" >&2; exit 1; }
for t in mmdebstrap dpkg-deb chroot setsid unshare; do
  command -v "$t" >/dev/null || { echo "apt-install test: $t is missing (make images-tools)" >&2; exit 1; }
done

n=0 failed=0 dpkg_pgid=""
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

# folders of earlier runs whose process is gone (the pid is in the name)
for old in /tmp/smt-apt-test.*; do
  [[ -d $old ]] || continue
  pid=${old##*.}
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && continue
  rm -rf --one-file-system "$old"
done
work=/tmp/smt-apt-test.$$
mkdir -m 0700 "$work"
root=$work/root
cleanup() {
  [[ -z $dpkg_pgid ]] || kill -9 -- "-$dpkg_pgid" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "# building a $SUITE chroot (mmdebstrap --variant=apt)"
t0=$SECONDS
unshare --mount --propagation private mmdebstrap --quiet --variant=apt "$SUITE" "$root" >/dev/null
echo "# chroot built in $((SECONDS - t0)) s"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$helper" "$root/usr/local/bin/apt-install"

# A package whose postinst waits while /tmp/hold exists (2 min at most, so that nothing outlives a
# killed test for long): dpkg is killed there, as a run ending in `apt-get install` would be.
mkdir -p "$work/pkg/DEBIAN"
cat > "$work/pkg/DEBIAN/control" <<'EOF'
Package: smt-apt-test-hold
Version: 1.0
Architecture: all
Maintainer: Syncmesh Edge tests <tests@syncmesh-edge.invalid>
Description: test package whose postinst waits while /tmp/hold exists
EOF
printf '#!/bin/sh\nset -e\ntouch /tmp/in-postinst\ni=0\nwhile [ -e /tmp/hold ] && [ $i -lt 120 ]; do sleep 1; i=$((i + 1)); done\n' > "$work/pkg/DEBIAN/postinst"
chmod 0755 "$work/pkg/DEBIAN/postinst"
dpkg-deb --build "$work/pkg" "$root/tmp/hold.deb" >/dev/null

# 1. killed inside dpkg
touch "$root/tmp/hold"
setsid chroot "$root" dpkg -i /tmp/hold.deb >"$work/dpkg.log" 2>&1 &
dpkg_pgid=$!
for _ in $(seq 1 60); do [[ -e $root/tmp/in-postinst ]] && break; sleep 0.5; done
check "dpkg reached the package's postinst" test -e "$root/tmp/in-postinst"
kill -9 -- "-$dpkg_pgid" 2>/dev/null || true
wait "$dpkg_pgid" 2>/dev/null || true
dpkg_pgid=""
rm -f "$root/tmp/hold"
check "dpkg --audit reports the killed install" test -n "$(chroot "$root" dpkg --audit 2>&1)"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -y install --no-install-recommends bash >"$work/plain.log" 2>&1 && plain=0 || plain=$?
check "plain apt-get install then fails: dpkg was interrupted (rc $plain)" \
  bash -c "test $plain -ne 0 && grep -q 'dpkg was interrupted' '$work/plain.log'"
chroot "$root" apt-install bash >"$work/helper.log" 2>&1 && rc=0 || rc=$?
check "apt-install exits 0 after an interrupted dpkg (rc $rc)" test "$rc" -eq 0
check "apt-install says it finished dpkg's work first" grep -q "dpkg has unfinished work" "$work/helper.log"
check "the killed package is now installed and configured" \
  bash -c "chroot '$root' dpkg-query -W -f '\${Status}' smt-apt-test-hold | grep -qx 'install ok installed'"
check "dpkg --audit is clean" test -z "$(chroot "$root" dpkg --audit 2>&1)"

# 2. a journal file alone: dpkg killed after its last status change, before it folded its journal
chroot "$root" dpkg-query -s bash > "$root/var/lib/dpkg/updates/0000"
check "journal only: dpkg --audit reports nothing" test -z "$(chroot "$root" dpkg --audit 2>&1)"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -y install --no-install-recommends bash >"$work/plain2.log" 2>&1 && plain=0 || plain=$?
check "journal only: plain apt-get install fails: dpkg was interrupted (rc $plain)" \
  bash -c "test $plain -ne 0 && grep -q 'dpkg was interrupted' '$work/plain2.log'"
chroot "$root" apt-install bash >"$work/helper2.log" 2>&1 && rc=0 || rc=$?
check "journal only: apt-install finishes it and exits 0 (rc $rc)" \
  bash -c "test $rc -eq 0 && grep -q 'dpkg has unfinished work' '$work/helper2.log'"
check "journal only: no journal file left" bash -c "! compgen -G '$root/var/lib/dpkg/updates/[0-9]*' >/dev/null"

# 3. refusals
chroot --userspec=65534:65534 "$root" apt-install bash >"$work/user.log" 2>&1 && rc=0 || rc=$?
check "not root: refused with exit 1 and the command to run as root" \
  bash -c "test $rc -eq 1 && grep -q 'needs root (apt-get install -y --no-install-recommends bash)' '$work/user.log'"
chroot "$root" apt-install >"$work/usage.log" 2>&1 && rc=0 || rc=$?
check "no package named: refused with exit 2 and the usage" \
  bash -c "test $rc -eq 2 && grep -q 'usage: hack/apt-install.sh PACKAGE' '$work/usage.log'"

# 4. no package lists
rm -rf "$root"/var/lib/apt/lists/*
check "less is not in the chroot yet" bash -c "! chroot '$root' sh -c 'command -v less' >/dev/null"
chroot "$root" apt-install less >"$work/update.log" 2>&1 && rc=0 || rc=$?
check "no package lists: apt-install updates them once and installs (rc $rc)" \
  bash -c "test $rc -eq 0 && chroot '$root' sh -c 'command -v less' >/dev/null"

echo "1..$n"
((failed == 0)) || { echo "# $failed of $n failed; the end of each log:"; for f in "$work"/*.log; do echo "## $f"; sed 's/^/# /' "$f" | tail -n 15; done; exit 1; }
