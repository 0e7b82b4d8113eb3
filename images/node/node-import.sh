#!/usr/bin/env bash
# Imports a node's images into its containerd, once: each line of IMAGES_LIST is
# "<containerd namespace> <archive> <reference>" (node-prepare.sh writes it); an image whose
# reference containerd already holds is skipped. Used by node-run.sh (the local mesh) and by the
# appliance's first boot (images/appliance). Talks to containerd's default socket.
#
#   node-import.sh IMAGES_LIST
set -o errexit -o nounset -o pipefail

list=${1:?usage: node-import.sh IMAGES_LIST}
arch=$(dpkg --print-architecture)
log() { printf '%s node-import: %s\n' "$(date -u +%H:%M:%S.%3N)" "$*"; }
while read -r ns archive ref; do
  [[ -n "$ns" ]] || continue
  # (the list in a variable: `ctr … | grep -q` fails under pipefail when grep stops early)
  have=$(ctr -n "$ns" images ls -q)
  if grep -qx "$ref" <<<"$have"; then continue; fi
  t0=$(date +%s%N)
  ctr -n "$ns" images import --platform "linux/$arch" "$archive" >/dev/null
  have=$(ctr -n "$ns" images ls -q)
  grep -qx "$ref" <<<"$have" || { log "import of $archive did not give $ref"; exit 1; }
  log "imported $ref into $ns in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done < "$list"
