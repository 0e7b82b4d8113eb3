#!/usr/bin/env bash
# make test-ansible (preflight tier): every bad inventory here must fail in the preflight play, before
# any host is changed, with the messages its "# expect:" lines give (naming the host and the
# variable); good.yml (expect: PASS) must pass. Each runs syncmesh.edge.site with --check against a local connection.
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
ansible_dir=$(cd "$here/../.." && pwd)
venv=${ANSIBLE_VENV:-$ansible_dir/../.cache/ansible-venv}
# json results: messages on one line, as the "# expect:" lines give them
export ANSIBLE_CONFIG=$ansible_dir/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_CALLBACK_RESULT_FORMAT=json
passed=0 failed=0
for inv in "$here"/*.yml; do
  name=$(basename "$inv" .yml)
  mapfile -t expects < <(sed -n 's/^# expect: //p' "$inv")
  expect=${expects[0]}
  # A good inventory runs the preflight play only (tag always): nothing else may touch this machine.
  tags=(); [[ $expect == PASS ]] && tags=(--tags always)
  out=$("$venv/bin/ansible-playbook" -i "$inv" syncmesh.edge.site --check "${tags[@]}" 2>&1) && rc=0 || rc=$?
  recap=$(grep -E '^[a-z-]+ +: ok=' <<<"$out" || true)
  problem=""
  if [[ $expect == PASS ]]; then
    [[ $rc == 0 ]] || problem="expected to pass, exit code $rc"
  else
    [[ $rc != 0 ]] || problem="expected to fail, but passed"
    for e in "${expects[@]}"; do
      grep -qF -- "$e" <<<"$out" || problem="${problem:+$problem; }message not found: $e"
    done
    # Nothing changed and the playbook never got past the preflight play.
    grep -qE 'changed=[1-9]' <<<"$recap" && problem="${problem:+$problem; }a host was changed"
    grep -qF 'PLAY [Install the node runtime]' <<<"$out" && problem="${problem:+$problem; }a later play started"
  fi
  if [[ -z $problem ]]; then
    passed=$((passed + 1)); echo "ok   preflight - $name"
  else
    failed=$((failed + 1)); echo "FAIL preflight - $name: $problem"; echo "$out" | tail -25 | sed 's/^/     /'
  fi
done
echo "$passed passed, $failed failed"
(( failed == 0 ))
