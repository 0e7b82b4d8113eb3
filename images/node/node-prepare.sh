#!/usr/bin/env bash
# Prepares one faasd node's state directory (what `faasd install` and provisioning do on a real
# node): faasd binary, containerd config, docker-compose.yaml rendered from the node description
# (node.yml, by the collection's one renderer node_stack.py), prometheus.yml, the description's
# secrets and folders with their owners and modes, the list of images to import. Changes nothing
# outside NODE_STATE. Idempotent: an existing basic-auth password, MongoDB data and agent state
# are kept (node restart).
#
# Env (documented defaults):
#   NODE_STATE        state directory of the node (required; on a real filesystem, not overlay)
#   NODE_ID           node-1            the node's id (listener and agent)
#   NODE_ADDR         (required)        the node's address others reach it at (agent advertise)
#   MISO_PEERS        ""                other agents, node-id@host:port,... (the id pinned; host:port accepts any mesh member)
#   MESH_SECRET_FILE  (required)        file holding the mesh secret, at least 32 bytes (copied into faasd's secrets)
#   WRITE_KEY_FILE    (required)        file holding the clients' write key, at least 32 bytes, not the mesh secret
#                                       (every secret of node.yml with `file: VAR` comes from the file VAR names)
#   MONGODB_PUBLISH   127.0.0.1         where faasd publishes MongoDB's 27017 in the node (0.0.0.0: test meshes load data from outside)
#   MONGODB_URI_FILE  (none)            file holding the services' MongoDB URI (may carry credentials); becomes the
#                                       node secret mongodb-uri. Default: mongodb://mongodb:27017/?directConnection=true
#   REGISTRY_PASSWORD_FILE (none)      file holding the password of the node's registry (32..72 bytes, no ':' or white
#                                       space: provisioning's, e.g. the appliance's node file registry_password); it
#                                       replaces the stored one. Without it the node generates one once and keeps it
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
#   NODE_DESCRIPTION  <this folder>/node.yml   the node description
#   NODE_STACK        the collection's module_utils/node_stack.py (or ../python/node_stack.py beside this folder: the appliance)
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
arch=$(dpkg --print-architecture)
: "${NODE_STATE:?set NODE_STATE}" "${NODE_ADDR:?set NODE_ADDR}" "${MESH_SECRET_FILE:?set MESH_SECRET_FILE}"
export NODE_ID=${NODE_ID:-node-1} NODE_ADDR MISO_PEERS=${MISO_PEERS:-} MONGODB_PUBLISH=${MONGODB_PUBLISH:-127.0.0.1} LOG_LEVEL=${LOG_LEVEL:-warn}
IMAGES_DIR=${IMAGES_DIR:-$repo/.cache/images}
FAASD_BIN=${FAASD_BIN:-$repo/.cache/faasd/bin/$arch/faasd}
NODE_DESCRIPTION=${NODE_DESCRIPTION:-$here/node.yml}
NODE_STACK=${NODE_STACK:-$repo/ansible/collections/ansible_collections/syncmesh/edge/plugins/module_utils/node_stack.py}
[[ -r $NODE_STACK ]] || NODE_STACK=$here/../python/node_stack.py

fail() { echo "node-prepare: $*" >&2; exit 1; }
[[ -x "$FAASD_BIN" ]] || fail "no faasd binary at $FAASD_BIN (run: make faasd-bins)"
[[ -r "$NODE_STACK" && -r "$NODE_DESCRIPTION" ]] || fail "the node description $NODE_DESCRIPTION or its renderer $NODE_STACK is missing"
node_stack() { python3 "$NODE_STACK" "$1" --description "$NODE_DESCRIPTION" "${@:2}"; }
# the description's secrets (name owner mode file-variable min-bytes) and folders (name owner mode)
mapfile -t secret_specs < <(node_stack secrets) && mapfile -t volume_specs < <(node_stack volumes) && (( ${#secret_specs[@]} > 0 )) ||
  fail "cannot read the node description $NODE_DESCRIPTION"
MONGODB_VARIANT=${MONGODB_VARIANT:-test_server}
case $MONGODB_VARIANT in
  test_server) mongodb_image=mongo-test-server ;;
  official)
    mongodb_image=mongodb mongodb_uid=999 mongodb_mode=0750 # the official image runs mongod as 999 (the role's owner and mode)
    [[ -r "${MONGODB_COMPOSE_OVERRIDES:-}" ]] || fail "MONGODB_VARIANT=official needs MONGODB_COMPOSE_OVERRIDES, a readable file (images/appliance/mongo-image.sh render)"
    [[ ${MONGODB_ROOT_USERNAME:=syncmesh} =~ ^[A-Za-z0-9_.-]+$ ]] || fail "MONGODB_ROOT_USERNAME may hold letters, digits, _ . - only"
    [[ ${MONGODB_REPLICA_SET:=rs0} =~ ^[A-Za-z0-9_-]+$ ]] || fail "MONGODB_REPLICA_SET may hold letters, digits, _ - only"
    ;;
  *) fail "MONGODB_VARIANT must be test_server or official, not $MONGODB_VARIANT" ;;
esac
# the secrets the caller gives as files (node.yml's `file:`); the services refuse a short one at
# start: fail here, before anything changes
for spec in "${secret_specs[@]}"; do
  read -r name _ _ var min <<< "$spec"
  [[ $var == - ]] && continue
  [[ -n ${!var:-} && -r ${!var} ]] || fail "$var must name a readable file (the node's secret $name)"
  secret_bytes=$(tr -d '\n' < "${!var}" | wc -c)
  (( secret_bytes >= min )) || fail "the secret $name in ${!var} ($var) has $secret_bytes bytes; at least $min are required (openssl rand -hex 32)"
done
if [[ -n ${REGISTRY_PASSWORD_FILE:-} ]]; then
  [[ -r $REGISTRY_PASSWORD_FILE ]] || fail "REGISTRY_PASSWORD_FILE must name a readable file (the node's registry password)"
  reg_given=$(tr -d '\n' < "$REGISTRY_PASSWORD_FILE")
  [[ ${#reg_given} -ge 32 && ${#reg_given} -le 72 && $reg_given =~ ^[[:graph:]]+$ && $reg_given != *:* ]] ||
    fail "the registry password in REGISTRY_PASSWORD_FILE ($REGISTRY_PASSWORD_FILE) must have 32 to 72 characters, no ':' and no white space (it is written as user:password and hashed with bcrypt)"
  unset reg_given
fi
cmp -s <(tr -d '\n' < "$MESH_SECRET_FILE") <(tr -d '\n' < "$WRITE_KEY_FILE") &&
  fail "the write key ($WRITE_KEY_FILE) is the mesh secret: clients hold the write key, only nodes hold the mesh secret; give it its own value"
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
export IMAGE_GATEWAY IMAGE_QUEUE_WORKER IMAGE_NATS_STREAMING IMAGE_PROMETHEUS IMAGE_MONGODB IMAGE_LISTENER IMAGE_MISO_AGENT IMAGE_REGISTRY
IMAGE_GATEWAY=$(image_ref gateway)
IMAGE_QUEUE_WORKER=$(image_ref queue-worker)
IMAGE_NATS_STREAMING=$(image_ref nats-streaming)
IMAGE_PROMETHEUS=$(image_ref prometheus)
IMAGE_MONGODB=$(image_ref "$mongodb_image")
IMAGE_LISTENER=$(image_ref listener)
IMAGE_MISO_AGENT=$(image_ref miso-agent)
IMAGE_REGISTRY=$(image_ref registry)
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

# the official database's settings are merged in as the Ansible faasd role merges its overrides
overrides=(); [[ $MONGODB_VARIANT == official ]] && overrides=(--override "$MONGODB_COMPOSE_OVERRIDES")
values=()
for name in IMAGE_GATEWAY IMAGE_QUEUE_WORKER IMAGE_NATS_STREAMING IMAGE_PROMETHEUS IMAGE_MONGODB IMAGE_LISTENER IMAGE_MISO_AGENT IMAGE_REGISTRY NODE_ID NODE_ADDR MISO_PEERS MONGODB_PUBLISH LOG_LEVEL; do
  values+=(--value "$name=${!name}")
done
node_stack compose "${values[@]}" "${overrides[@]}" > "$NODE_STATE/docker-compose.yaml.new" || fail "cannot render the node description $NODE_DESCRIPTION (above)"
mv -f "$NODE_STATE/docker-compose.yaml.new" "$NODE_STATE/var-lib-faasd/docker-compose.yaml"
cp "$here/prometheus.yml" "$NODE_STATE/var-lib-faasd/prometheus.yml"

# The node's secrets (faasd's own folder), each with node.yml's owner and mode: the caller's
# files, the gateway's user and password (generated once, kept), the services' MongoDB URI.
secrets="$NODE_STATE/var-lib-faasd/secrets"
umask 077
for spec in "${secret_specs[@]}"; do
  read -r name _ _ var _ <<< "$spec"
  [[ $var == - ]] || install -m 0400 "${!var}" "$secrets/$name"
done
[[ -s "$secrets/basic-auth-user" ]] || printf 'admin' > "$secrets/basic-auth-user"
[[ -s "$secrets/basic-auth-password" ]] || head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40 > "$secrets/basic-auth-password"
printf '%s:%s' "$(cat "$secrets/basic-auth-user")" "$(cat "$secrets/basic-auth-password")" > "$NODE_STATE/basic-auth"
chmod 0600 "$NODE_STATE/basic-auth"
# The node's registry (port 5000 on the node's address): a user and a password, the password
# provisioning's (REGISTRY_PASSWORD_FILE) or generated once and kept (like the gateway's); the
# registry reads their bcrypt hash, faasd's provider pulls with a docker config.json (faasd 0.19.0
# reads /var/lib/faasd/.docker/config.json), the operator gets user:password in NODE_STATE/registry-auth.
registry="$NODE_ADDR:5000"
[[ -s "$secrets/registry-user" ]] || printf 'syncmesh' > "$secrets/registry-user"
if [[ -n ${REGISTRY_PASSWORD_FILE:-} ]]; then
  rm -f "$secrets/registry-password" && tr -d '\n' < "$REGISTRY_PASSWORD_FILE" > "$secrets/registry-password"
fi
[[ -s "$secrets/registry-password" ]] || head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40 > "$secrets/registry-password"
chmod 0400 "$secrets/registry-user" "$secrets/registry-password"
reg_user=$(cat "$secrets/registry-user") reg_password=$(cat "$secrets/registry-password")
python3 "$NODE_STACK" htpasswd --user "$reg_user" <<< "$reg_password" > "$secrets/registry-htpasswd.new" || fail "cannot hash the registry's password (above)"
mv -f "$secrets/registry-htpasswd.new" "$secrets/registry-htpasswd"
printf '%s:%s' "$reg_user" "$reg_password" > "$NODE_STATE/registry-auth"
chmod 0600 "$NODE_STATE/registry-auth"
install -d -m 0700 "$NODE_STATE/var-lib-faasd/.docker"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$registry" "$(printf '%s:%s' "$reg_user" "$reg_password" | base64 -w0)" > "$NODE_STATE/var-lib-faasd/.docker/config.json"
chmod 0600 "$NODE_STATE/var-lib-faasd/.docker/config.json"
# faasd's provider: the node's registry is plain HTTP (patch 0008), and stateful functions get a
# folder of the agent's (node.yml: miso-agent's MISO_FUNCTION_SOCKETS_DIR)
printf 'registry_plain_http=%s\nmiso_functions_dir=/var/lib/faasd/miso-agent/functions\nmiso_agent_uid=10001\n' "$registry" > "$NODE_STATE/var-lib-faasd/provider.env"
printf '%s\n' "$registry" > "$NODE_STATE/registry"
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
  install -m 0400 "$MONGODB_URI_FILE" "$secrets/mongodb-uri.new"
elif [[ $MONGODB_VARIANT == official ]]; then
  # the user name (letters, digits, _ . -) and the password (letters, digits) need no escaping in a URI
  printf 'mongodb://%s:%s@mongodb:27017/?replicaSet=%s&authSource=admin' "$MONGODB_ROOT_USERNAME" "$(cat "$secrets/mongodb-password")" "$MONGODB_REPLICA_SET" > "$secrets/mongodb-uri.new"
else
  printf 'mongodb://mongodb:27017/?directConnection=true' > "$secrets/mongodb-uri.new"
fi
mv -f "$secrets/mongodb-uri.new" "$secrets/mongodb-uri"
for spec in "${secret_specs[@]}"; do
  read -r name owner mode _ _ <<< "$spec"
  [[ -s $secrets/$name ]] || fail "nothing wrote the secret $name the node description declares"
  chown "$owner:$owner" "$secrets/$name" && chmod "$mode" "$secrets/$name"
done
umask 022
# the description's folders, owned by the user their service runs as (faasd would create them
# root-owned); the official database's data belongs to its own user
for spec in "${volume_specs[@]}"; do
  read -r name owner mode <<< "$spec"
  [[ $name == mongodb && $MONGODB_VARIANT == official ]] && owner=$mongodb_uid mode=$mongodb_mode
  install -d -m "$mode" -o "$owner" -g "$owner" "$NODE_STATE/var-lib-faasd/$name"
done

# Images to import into the node's containerd: "<containerd namespace> <archive> <reference>"
{
  for name in gateway queue-worker nats-streaming prometheus "$mongodb_image" listener miso-agent registry; do
    printf 'openfaas %s %s\n' "$IMAGES_DIR/$name.oci.tar" "$(image_ref "$name")"
  done
  printf 'openfaas-fn %s %s\n' "$IMAGES_DIR/syncmesh-fn.oci.tar" "$fn_ref"
} > "$NODE_STATE/images.list"
printf '%s\n' "$fn_ref" > "$NODE_STATE/function-image"
echo "node-prepare: $NODE_ID ready in $NODE_STATE"
