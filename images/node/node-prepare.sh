#!/usr/bin/env bash
# Prepares one faasd node's state directory (what `faasd install` and provisioning do on a real
# node): faasd binary, containerd config, the rendered docker-compose.yaml, prometheus.yml,
# secrets, the list of images to import. Changes nothing outside NODE_STATE. Idempotent: an
# existing basic-auth password, MongoDB data and agent state are kept (node restart).
#
# Env (documented defaults):
#   NODE_STATE        state directory of the node (required; on a real filesystem, not overlay)
#   NODE_ID           node-1            the node's id (listener and agent)
#   NODE_ADDR         (required)        the node's address others reach it at (agent advertise)
#   MISO_PEERS        ""                other agents, node-id@host:port,... (the id pinned; host:port accepts any mesh member)
#   MESH_SECRET_FILE  (required)        file holding the mesh secret, at least 32 bytes (copied into faasd's secrets)
#   MONGODB_PUBLISH   127.0.0.1         where faasd publishes MongoDB's 27017 in the node (0.0.0.0: test meshes load data from outside)
#   MONGODB_URI_FILE  (none)            file holding the services' MongoDB URI (may carry credentials); becomes the
#                                       node secret mongodb-uri. Default: mongodb://mongodb:27017/?directConnection=true
#   LOG_LEVEL         warn
#   IMAGES_DIR        <repo>/.cache/images  OCI archives (<name>.oci.tar) and versions (<name>.ref) from `make images`
#   FAASD_BIN         <repo>/.cache/faasd/bin/<arch>/faasd  from `make faasd-bins`
#   IMAGES_PRELOADED  ""                1: the images are already in the node's containerd store (the appliance
#                                       imports them at build time), so IMAGES_DIR needs only the .ref files
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
arch=$(dpkg --print-architecture)
: "${NODE_STATE:?set NODE_STATE}" "${NODE_ADDR:?set NODE_ADDR}" "${MESH_SECRET_FILE:?set MESH_SECRET_FILE}"
export NODE_ID=${NODE_ID:-node-1} NODE_ADDR MISO_PEERS=${MISO_PEERS:-} MONGODB_PUBLISH=${MONGODB_PUBLISH:-127.0.0.1} LOG_LEVEL=${LOG_LEVEL:-warn}
IMAGES_DIR=${IMAGES_DIR:-$repo/.cache/images}
FAASD_BIN=${FAASD_BIN:-$repo/.cache/faasd/bin/$arch/faasd}

fail() { echo "node-prepare: $*" >&2; exit 1; }
[[ -x "$FAASD_BIN" ]] || fail "no faasd binary at $FAASD_BIN (run: make faasd-bins)"
[[ -r "$MESH_SECRET_FILE" ]] || fail "cannot read MESH_SECRET_FILE $MESH_SECRET_FILE"
# the function, listener and agent refuse a shorter one at start: fail here, before anything changes
secret_bytes=$(tr -d '\n' < "$MESH_SECRET_FILE" | wc -c)
(( secret_bytes >= 32 )) || fail "the mesh secret in $MESH_SECRET_FILE has $secret_bytes bytes; at least 32 are required (openssl rand -hex 32)"
mkdir -p "$NODE_STATE"
[[ "$(stat -fc %T "$NODE_STATE")" != overlayfs ]] || fail "NODE_STATE $NODE_STATE is on overlayfs; containerd's overlay snapshotter needs a real filesystem"

# image reference of one image from `make images`: .cache/images/<name>.ref holds the version
# (or a full reference)
image_ref() {
  local f="$IMAGES_DIR/$1.ref" v
  [[ -r "$f" && ( -r "$IMAGES_DIR/$1.oci.tar" || -n "${IMAGES_PRELOADED:-}" ) ]] || fail "image $1 is missing: $IMAGES_DIR/$1.oci.tar / $1.ref (run: make images)"
  v=$(tr -d ' \n' < "$f")
  if [[ "$v" == */* ]]; then printf '%s' "$v"; else printf 'localhost/syncmesh-edge/%s:%s' "$1" "$v"; fi
}
export IMAGE_GATEWAY IMAGE_QUEUE_WORKER IMAGE_NATS_STREAMING IMAGE_PROMETHEUS IMAGE_MONGODB IMAGE_LISTENER IMAGE_MISO_AGENT
IMAGE_GATEWAY=$(image_ref gateway)
IMAGE_QUEUE_WORKER=$(image_ref queue-worker)
IMAGE_NATS_STREAMING=$(image_ref nats-streaming)
IMAGE_PROMETHEUS=$(image_ref prometheus)
IMAGE_MONGODB=$(image_ref mongo-test-server)
IMAGE_LISTENER=$(image_ref listener)
IMAGE_MISO_AGENT=$(image_ref miso-agent)
fn_ref=$(image_ref syncmesh-fn)

mkdir -p "$NODE_STATE"/{bin,logs,var-lib-faasd/secrets,var-lib-faasd-provider,cni-conf,journal,containerd}
install -m 0755 "$FAASD_BIN" "$NODE_STATE/bin/faasd"

sed "s|@NODE_STATE@|$NODE_STATE|g" "$here/containerd.toml" > "$NODE_STATE/containerd.toml"
# journald of the node: its own journal (kept across node restarts), not the host kernel's log
cat > "$NODE_STATE/journald.conf" <<'EOF_J'
[Journal]
Storage=persistent
ReadKMSG=no
SystemMaxUse=64M
ForwardToSyslog=no
ForwardToWall=no
EOF_J

vars='${IMAGE_GATEWAY} ${IMAGE_QUEUE_WORKER} ${IMAGE_NATS_STREAMING} ${IMAGE_PROMETHEUS} ${IMAGE_MONGODB} ${IMAGE_LISTENER} ${IMAGE_MISO_AGENT} ${NODE_ID} ${NODE_ADDR} ${MISO_PEERS} ${MONGODB_PUBLISH} ${LOG_LEVEL}'
envsubst "$vars" < "$here/docker-compose.yaml" > "$NODE_STATE/var-lib-faasd/docker-compose.yaml"
cp "$here/prometheus.yml" "$NODE_STATE/var-lib-faasd/prometheus.yml"

# Secrets of the core services (faasd's own folder). The gateway's password is generated once.
secrets="$NODE_STATE/var-lib-faasd/secrets"
umask 077
[[ -s "$secrets/basic-auth-user" ]] || printf 'admin' > "$secrets/basic-auth-user"
[[ -s "$secrets/basic-auth-password" ]] || head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40 > "$secrets/basic-auth-password"
# the gateway and queue worker read these as their own (non-root) users
chmod 0644 "$secrets/basic-auth-user" "$secrets/basic-auth-password"
printf '%s:%s' "$(cat "$secrets/basic-auth-user")" "$(cat "$secrets/basic-auth-password")" > "$NODE_STATE/basic-auth"
chmod 0600 "$NODE_STATE/basic-auth"
# the listener and the agent run as the images' app user (10001 in docker-compose.yaml)
install -m 0400 -o 10001 -g 10001 "$MESH_SECRET_FILE" "$secrets/mesh-secret"
# the MongoDB URI of the listener and the agent (the function gets the same value as the faasd
# secret mongodb-uri through /system/secrets): a file, never env, as it may carry credentials
if [[ -n "${MONGODB_URI_FILE:-}" ]]; then
  [[ -r "$MONGODB_URI_FILE" ]] || fail "cannot read MONGODB_URI_FILE $MONGODB_URI_FILE"
  grep -qE '^mongodb(\+srv)?://' "$MONGODB_URI_FILE" || fail "MONGODB_URI_FILE $MONGODB_URI_FILE must hold a URI starting with mongodb:// or mongodb+srv://"
  install -m 0400 -o 10001 -g 10001 "$MONGODB_URI_FILE" "$secrets/mongodb-uri"
else
  printf 'mongodb://mongodb:27017/?directConnection=true' > "$secrets/mongodb-uri.new"
  chown 10001:10001 "$secrets/mongodb-uri.new" && chmod 0400 "$secrets/mongodb-uri.new" && mv -f "$secrets/mongodb-uri.new" "$secrets/mongodb-uri"
fi
umask 022
# volumes, owned by the user their service runs as (faasd would create them root-owned)
for v in nats prometheus; do install -d -o 65534 -g 65534 "$NODE_STATE/var-lib-faasd/$v"; done
for v in mongodb miso-agent; do install -d -o 10001 -g 10001 "$NODE_STATE/var-lib-faasd/$v"; done

# Images to import into the node's containerd: "<containerd namespace> <archive> <reference>"
{
  for name in gateway queue-worker nats-streaming prometheus mongo-test-server listener miso-agent; do
    printf 'openfaas %s %s\n' "$IMAGES_DIR/$name.oci.tar" "$(image_ref "$name")"
  done
  printf 'openfaas-fn %s %s\n' "$IMAGES_DIR/syncmesh-fn.oci.tar" "$fn_ref"
} > "$NODE_STATE/images.list"
printf '%s\n' "$fn_ref" > "$NODE_STATE/function-image"
echo "node-prepare: $NODE_ID ready in $NODE_STATE"
