#!/usr/bin/env bash
# make test-collection: the collection as a user outside this repository gets it.
#   1. ansible-galaxy collection build   -> .cache/collection/syncmesh-edge-<version>.tar.gz
#   2. a fresh venv with only ansible-core (the version pinned in ansible/requirements.txt), the
#      tarball installed into a collections folder of its own, run from a folder outside the
#      repository with an empty ansible.cfg (nothing of the checkout is found by accident)
#   3. there: the README and changelog are in it; every playbook resolves by name
#      (syncmesh.edge.site, .add_node, .remove_node, .upgrade, .verify: --syntax-check); the
#      roles' documentation loads; the site playbook's preflight passes a good inventory (--check)
#   4. ansible-test sanity on the installed collection (what ships), --venv --python of the venv
# Prints one line per check. Env: COLLECTION_OUT (.cache/collection), COLLECTION_KEEP=1 keeps the
# temporary folder (venv, installed collection, sanity output) and says where.
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
src=$repo/ansible/collections/ansible_collections/syncmesh/edge
out=${COLLECTION_OUT:-$repo/.cache/collection}
dev_venv=${ANSIBLE_VENV:-$repo/.cache/ansible-venv}
core=$(grep -E '^ansible-core==' "$repo/ansible/requirements.txt")
python=${COLLECTION_PYTHON:-python3}
t0=$SECONDS
step() { printf 'collection: %-58s %s\n' "$1" "${2:-ok}"; }
fail() { printf 'collection: FAIL: %s\n' "$*" >&2; exit 1; }

version=$(sed -n 's/^version: *//p' "$src/galaxy.yml")
mkdir -p "$out"
rm -f "$out"/syncmesh-edge-*.tar.gz
(cd "$src" && "$dev_venv/bin/ansible-galaxy" collection build --force --output-path "$out" >/dev/null) || fail "ansible-galaxy collection build"
tarball=$out/syncmesh-edge-$version.tar.gz
[[ -f $tarball ]] || fail "no $tarball after the build"
step "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"

tmp=$(mktemp -d /tmp/syncmesh-collection.XXXXXX)
[[ ${COLLECTION_KEEP:-0} == 1 ]] && echo "collection: keeping $tmp" || trap 'rm -rf "$tmp"' EXIT
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check "$core" || fail "pip install $core into a fresh venv"
step "fresh venv: $core"
cd "$tmp"
: > "$tmp/ansible.cfg"
export ANSIBLE_CONFIG=$tmp/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$tmp/collections ANSIBLE_HOME=$tmp/home ANSIBLE_NOCOLOR=1
"$tmp/venv/bin/ansible-galaxy" collection install --force "$tarball" -p "$tmp/collections" >/dev/null || fail "ansible-galaxy collection install"
installed=$tmp/collections/ansible_collections/syncmesh/edge
"$tmp/venv/bin/ansible-galaxy" collection list syncmesh.edge 2>/dev/null | grep -qE "^syncmesh\.edge +$version" || fail "ansible-galaxy collection list does not show syncmesh.edge $version"
step "installed from the tarball: syncmesh.edge $version"

for f in README.md CHANGELOG.md playbooks/site.yml playbooks/tasks/mesh-node.yml roles/faasd/files/syncmesh-metadata-block.service; do
  [[ -f $installed/$f ]] || fail "the installed collection has no $f"
done
grep -q "^## $version" "$installed/CHANGELOG.md" || fail "CHANGELOG.md has no entry for $version"
step "README, changelog ($version), playbooks and task lists in it"

inventory=$repo/ansible/tests/preflight/good.yml
for pb in site add_node remove_node upgrade verify; do
  "$tmp/venv/bin/ansible-playbook" -i "$inventory" --syntax-check "syncmesh.edge.$pb" > "$tmp/syntax-$pb.log" 2>&1 ||
    { cat "$tmp/syntax-$pb.log" >&2; fail "syncmesh.edge.$pb does not resolve or parse"; }
  grep -q "$installed/playbooks/$pb.yml" "$tmp/syntax-$pb.log" || fail "syncmesh.edge.$pb resolved elsewhere: $(tail -n1 "$tmp/syntax-$pb.log")"
done
step "playbooks by name: syncmesh.edge.{site,add_node,remove_node,upgrade,verify}"
for role in preflight base containerd faasd mongodb syncmesh_node; do
  "$tmp/venv/bin/ansible-doc" -t role "syncmesh.edge.$role" > /dev/null 2>&1 || fail "ansible-doc -t role syncmesh.edge.$role"
done
"$tmp/venv/bin/ansible-doc" syncmesh.edge.syncmesh_registry > /dev/null 2>&1 || fail "ansible-doc syncmesh.edge.syncmesh_registry"
step "ansible-doc: 6 roles and the module"
"$tmp/venv/bin/ansible-playbook" -i "$inventory" syncmesh.edge.site --check --tags always > "$tmp/preflight.log" 2>&1 ||
  { tail -n 30 "$tmp/preflight.log" >&2; fail "the installed syncmesh.edge.site's preflight on a good inventory"; }
step "syncmesh.edge.site --check --tags always (preflight) on a good inventory"

# ansible-test puts pip into the empty venvs of its tests with a bootstrap script it downloads
# from its own CI host, which this machine cannot reach (no internet, only the package index). Its
# cache slot gets a stand-in that does the same thing the offline way: pip, run from pip's own
# wheel (fetched through pip from the index), installs the pip version ansible-test asks for.
# HOME for ansible-test is .cache/collection/home: its venvs are kept between runs, root's
# ~/.ansible is not touched; pip's download cache stays the user's.
t_sanity=$SECONDS
pyver=$("$tmp/venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
test_home=$out/home
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',\$/\1/p" "$tmp/venv/lib/python$pyver/site-packages/ansible_test/_internal/python_requirements.py")
[[ -n $pip_version ]] || fail "cannot read the pip version ansible-test bootstraps"
bootstrap=$test_home/.ansible/test/cache/get_pip_${pip_version//./_}.py
if [[ ! -s $bootstrap ]]; then
  mkdir -p "$test_home/wheels" "$(dirname "$bootstrap")"
  "$tmp/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --dest "$test_home/wheels" "pip==$pip_version" || fail "pip download pip==$pip_version"
  wheel=$(ls "$test_home/wheels/pip-$pip_version-"*.whl)
  cat > "$bootstrap.tmp" <<PY
"""Stand-in for ansible-test's get-pip $pip_version bootstrap (written by ansible/tests/collection/run.sh):
pip run from its wheel installs what ansible-test asks for (pip==$pip_version) into this venv."""
import sys

sys.path.insert(0, "$wheel")
from pip._internal.cli.main import main  # noqa: E402

sys.exit(main(["install"] + [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]))
PY
  mv "$bootstrap.tmp" "$bootstrap"
fi
(cd "$installed" && HOME=$test_home PIP_CACHE_DIR=$("$tmp/venv/bin/pip" cache dir) "$tmp/venv/bin/ansible-test" sanity --venv --python "$pyver" --color no > "$tmp/sanity.log" 2>&1) ||
  { tail -n 60 "$tmp/sanity.log" >&2; grep -E '^ERROR: ' "$tmp/sanity.log" | head -n 40 >&2; fail "ansible-test sanity (its ERROR lines and the log's end above)"; }
step "ansible-test sanity --venv --python $pyver" "ok ($(grep -c '^Running sanity test' "$tmp/sanity.log") tests, $((SECONDS - t_sanity)) s)"
echo "collection: all checks passed in $((SECONDS - t0)) s ($tarball)"
