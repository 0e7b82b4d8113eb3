# shellcheck shell=bash
# TEST ONLY. The project's MongoDB-compatible test server (mongo-java-server 1.47.0 with a capped
# oplog, tools/mongo-test-server; the jar and its libraries are built by `make deps`) on a
# minimal Java 17 runtime made by jlink from Debian bookworm's OpenJDK (base layer "jre"). It
# stands in for MongoDB on the local faasd mesh because no MongoDB server can be installed here;
# real nodes run the official mongo image (images/README.md). In memory by default; add
# `--data-dir /data/db` to the command (and mount a volume there) to keep data on disk.
JAR_DIR="$REPO/tools/mongo-test-server/java/target"
IMAGE_VERSION=$(jq -r .version "$REPO/tools/mongo-test-server/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(tools/mongo-test-server/java tools/mongo-test-server/package.json)
IMAGE_TITLE="Syncmesh Edge MongoDB test server (test only)"
IMAGE_DESCRIPTION="TEST ONLY, not MongoDB: mongo-java-server 1.47.0 (MongoDB wire protocol, capped oplog) on a jlink'd Java 17, standing in for MongoDB on the local faasd mesh."
IMAGE_LICENSES="MIT AND BSD-3-Clause AND Apache-2.0 AND (MPL-2.0 OR EPL-1.0) AND GPL-2.0-only WITH Classpath-exception-2.0"
IMAGE_LABELS=(dev.syncmesh-edge.test-only=true)
IMAGE_BASE=jre
IMAGE_WORKDIR=/opt/mongo-test-server
IMAGE_CMD=(/usr/bin/java -Xmx96m -Xms16m -XX:+UseSerialGC -Xss512k -XX:MaxMetaspaceSize=64m
  -XX:ReservedCodeCacheSize=32m -XX:+ExitOnOutOfMemoryError -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
  -jar /opt/mongo-test-server/mongo-test-server.jar --bind 0.0.0.0 --port 27017)
IMAGE_PORTS=(27017/tcp)
IMAGE_VOLUMES=(/data/db)

image_inputs() {
  [[ -f $JAR_DIR/mongo-test-server.jar ]] || die "$JAR_DIR/mongo-test-server.jar is missing: run make deps"
  printf '%s\n' "$JAR_DIR/mongo-test-server.jar" "$JAR_DIR/lib" "$IMAGES_DIR/mongo-test-server/licenses.txt"
}

image_rootfs() {
  local root=$1 jar prefix licence
  install -d -m 0755 "$root/opt/mongo-test-server/lib" "$root/licenses/maven"
  install -m 0644 "$JAR_DIR/mongo-test-server.jar" "$root/opt/mongo-test-server/"
  install -m 0644 "$JAR_DIR"/lib/*.jar "$root/opt/mongo-test-server/lib/"
  install -d -m 0755 "$root/data"
  install -d -m 0750 -o 10001 -g 10001 "$root/data/db"
  # licence of every jar (the jars carry no licence text; the texts come from Debian's common-licenses)
  for jar in "$JAR_DIR"/lib/*.jar; do
    jar=$(basename "$jar")
    licence=
    while read -r prefix lic; do
      [[ -z $prefix || $prefix == \#* ]] && continue
      [[ $jar == "$prefix"* ]] && licence=$lic && break
    done < "$IMAGES_DIR/mongo-test-server/licenses.txt"
    [[ -n $licence ]] || die "no licence known for $jar: add it to images/mongo-test-server/licenses.txt"
    printf '%s %s\n' "$jar" "$licence"
  done > "$root/licenses/maven/jars.txt"
  install -m 0644 /usr/share/common-licenses/Apache-2.0 /usr/share/common-licenses/MPL-2.0 "$root/licenses/maven/"
  unzip -p "$JAR_DIR"/lib/slf4j-api-*.jar META-INF/LICENSE.txt > "$root/licenses/maven/slf4j-LICENSE.txt"
  chmod 0644 "$root/licenses/maven/slf4j-LICENSE.txt"
}
