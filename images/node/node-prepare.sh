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
#   MONGODB_VARIANT   test_server       test_server: the MongoDB-compatible test server (image mongo-test-server).
#                                       official: MongoDB's official image as a single-node replica set with
#                                       authentication (image `mongodb`: IMAGES_DIR/mongodb.ref holds its full reference;
#                                       its archive is needed unless containerd already holds it, e.g. pulled); the root
#                                       password and the replica set's key file are generated once and kept, and the
#                                       services' URI carries them. The caller initiates the replica set once faasd runs it
#                                       (the Ansible mongodb role's files/rs-init.js)
#   MONGODB_COMPOSE_OVERRIDES (official: required)  the mongodb service's settings merged into docker-compose.yaml
#                                       (images/appliance/mongo-image.sh render: the Ansible role's compose-official.yml.j2)
#   MONGODB_ROOT_USERNAME syncmesh      official: the root user (the Ansible mongodb role's mongodb_root_username)
#   MONGODB_REPLICA_SET   rs0           official: the set's name in the services' URI (the role's mongodb_replica_set)
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
MONGODB_VARIANT=${MONGODB_VARIANT:-test_server}
case $MONGODB_VARIANT in
  test_server) mongodb_image=mongo-test-server mongodb_uid=10001 mongodb_mode=0755 ;;
  official)
    mongodb_image=mongodb mongodb_uid=999 mongodb_mode=0750 # the official image runs mongod as 999 (the role's owner and mode)
    [[ -r "${MONGODB_COMPOSE_OVERRIDES:-}" ]] || fail "MONGODB_VARIANT=official needs MONGODB_COMPOSE_OVERRIDES, a readable file (images/appliance/mongo-image.sh render)"
    [[ ${MONGODB_ROOT_USERNAME:=syncmesh} =~ ^[A-Za-z0-9_.-]+$ ]] || fail "MONGODB_ROOT_USERNAME may hold letters, digits, _ . - only"
    [[ ${MONGODB_REPLICA_SET:=rs0} =~ ^[A-Za-z0-9_-]+$ ]] || fail "MONGODB_REPLICA_SET may hold letters, digits, _ - only"
    ;;
  *) fail "MONGODB_VARIANT must be test_server or official, not $MONGODB_VARIANT" ;;
esac
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
IMAGE_MONGODB=$(image_ref "$mongodb_image")
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
if [[ $MONGODB_VARIANT == official ]]; then
  # merged as the Ansible faasd role merges faasd_compose_overrides: maps recursively, the rest replaced
  python3 - "$NODE_STATE/var-lib-faasd/docker-compose.yaml" "$MONGODB_COMPOSE_OVERRIDES" << 'PY' || fail "cannot merge $MONGODB_COMPOSE_OVERRIDES into docker-compose.yaml"
import sys, yaml
path, overrides = sys.argv[1:]
def merge(base, extra):
    for key, value in extra.items():
        base[key] = merge(base[key], value) if isinstance(base.get(key), dict) and isinstance(value, dict) else value
    return base
compose = merge(yaml.safe_load(open(path)), yaml.safe_load(open(overrides)))
with open(path, "w") as f:
    f.write(f"# images/node/docker-compose.yaml with {overrides} merged in (node-prepare.sh)\n")
    yaml.safe_dump(compose, f, sort_keys=False)
PY
fi
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
if [[ $MONGODB_VARIANT == official ]]; then
  # the official image's entrypoint creates the root user from these on an empty data folder;
  # mongod reads the key file as its own user and refuses one others can read
  printf '%s' "$MONGODB_ROOT_USERNAME" > "$secrets/mongodb-username"
  [[ -s "$secrets/mongodb-password" ]] || head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40 > "$secrets/mongodb-password"
  [[ -s "$secrets/mongodb-keyfile" ]] || head -c 1024 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 756 > "$secrets/mongodb-keyfile"
  chown 999:999 "$secrets/mongodb-username" "$secrets/mongodb-password" "$secrets/mongodb-keyfile"
  chmod 0400 "$secrets/mongodb-username" "$secrets/mongodb-password" "$secrets/mongodb-keyfile"
fi
if [[ -n "${MONGODB_URI_FILE:-}" ]]; then
  [[ -r "$MONGODB_URI_FILE" ]] || fail "cannot read MONGODB_URI_FILE $MONGODB_URI_FILE"
  grep -qE '^mongodb(\+srv)?://' "$MONGODB_URI_FILE" || fail "MONGODB_URI_FILE $MONGODB_URI_FILE must hold a URI starting with mongodb:// or mongodb+srv://"
  install -m 0400 -o 10001 -g 10001 "$MONGODB_URI_FILE" "$secrets/mongodb-uri"
elif [[ $MONGODB_VARIANT == official ]]; then
  # the user name (letters, digits, _ . -) and the password (letters, digits) need no escaping in a URI
  printf 'mongodb://%s:%s@mongodb:27017/?replicaSet=%s&authSource=admin' "$MONGODB_ROOT_USERNAME" "$(cat "$secrets/mongodb-password")" "$MONGODB_REPLICA_SET" > "$secrets/mongodb-uri.new"
  chown 10001:10001 "$secrets/mongodb-uri.new" && chmod 0400 "$secrets/mongodb-uri.new" && mv -f "$secrets/mongodb-uri.new" "$secrets/mongodb-uri"
else
  printf 'mongodb://mongodb:27017/?directConnection=true' > "$secrets/mongodb-uri.new"
  chown 10001:10001 "$secrets/mongodb-uri.new" && chmod 0400 "$secrets/mongodb-uri.new" && mv -f "$secrets/mongodb-uri.new" "$secrets/mongodb-uri"
fi
umask 022
# volumes, owned by the user their service runs as (faasd would create them root-owned)
for v in nats prometheus; do install -d -o 65534 -g 65534 "$NODE_STATE/var-lib-faasd/$v"; done
install -d -o 10001 -g 10001 "$NODE_STATE/var-lib-faasd/miso-agent"
install -d -m "$mongodb_mode" -o "$mongodb_uid" -g "$mongodb_uid" "$NODE_STATE/var-lib-faasd/mongodb"

# Images to import into the node's containerd: "<containerd namespace> <archive> <reference>"
{
  for name in gateway queue-worker nats-streaming prometheus "$mongodb_image" listener miso-agent; do
    printf 'openfaas %s %s\n' "$IMAGES_DIR/$name.oci.tar" "$(image_ref "$name")"
  done
  printf 'openfaas-fn %s %s\n' "$IMAGES_DIR/syncmesh-fn.oci.tar" "$fn_ref"
} > "$NODE_STATE/images.list"
printf '%s\n' "$fn_ref" > "$NODE_STATE/function-image"
echo "node-prepare: $NODE_ID ready in $NODE_STATE"
