#!/usr/bin/env bash
# Builds the upstream OpenFaaS CLI (faas-cli 0.18.12, MIT) from the source snapshot in
# ../shared/third_party, offline (its vendor/ folder), into .cache/faas-cli/faas-cli: the tool a
# user of a node already knows (login, new, build --shrinkwrap, deploy, invoke, scale, remove).
# Never committed. Cached on the archive's hash and the Go version; prints the binary's path.
#
# Env: THIRD_PARTY_DIR (default ../shared/third_party beside the repo, else /work/shared/third_party)
set -o errexit -o nounset -o pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out="$repo/.cache/faas-cli"
VERSION=0.18.12
if [[ -z "${THIRD_PARTY_DIR:-}" ]]; then
  for d in "$repo/../shared/third_party" /work/shared/third_party; do [[ -d $d ]] && { THIRD_PARTY_DIR=$d; break; }; done
fi
archive="${THIRD_PARTY_DIR:?set THIRD_PARTY_DIR to the folder holding faas-cli-$VERSION.tar.xz}/faas-cli-$VERSION.tar.xz"
[[ -r $archive ]] || { echo "faas-cli: $archive is missing" >&2; exit 1; }
key=$(printf '%s %s' "$(sha256sum "$archive" | cut -c1-16)" "$(go env GOVERSION)" | sha256sum | cut -c1-32)
if [[ -x $out/faas-cli && "$(cat "$out/stamp" 2>/dev/null)" == "$key" ]]; then echo "$out/faas-cli"; exit 0; fi
echo "faas-cli: building $VERSION from $archive (offline, vendor/)" >&2
rm -rf "$out/src" && mkdir -p "$out/src"
tar -xJf "$archive" -C "$out/src"
(cd "$out/src/faas-cli-$VERSION" && GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
  go build -mod=vendor -trimpath -ldflags "-s -w -X github.com/openfaas/faas-cli/version.Version=$VERSION" -o "$out/faas-cli.new" .)
mv -f "$out/faas-cli.new" "$out/faas-cli"
cp "$out/src/faas-cli-$VERSION/LICENSE" "$out/LICENSE"
rm -rf "$out/src"
printf '%s' "$key" > "$out/stamp"
echo "$out/faas-cli"
