#!/usr/bin/env bash
# install-deps.sh: install what the tests need when it is missing. Debian packages are
# installed with apt-get when running as root; otherwise a missing one is reported (and under
# CI=true that is a failure, never a silent skip).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use, as "command-or-path:package".
NEEDS=(
  mvn:maven
  javac:openjdk-17-jdk-headless
  kcat:kcat
  zsh:zsh
  chromium:chromium
  gcc:gcc
  cargo:cargo
  node:nodejs
  npm:npm
  make:make
  pkg-config:pkg-config
  valgrind:valgrind
  /usr/include/librdkafka/rdkafka.h:librdkafka-dev
  /usr/share/java/zookeeper.jar:zookeeper
  /usr/lib/python3/dist-packages/kafka:python3-kafka
  /usr/lib/python3/dist-packages/pytest:python3-pytest
  /usr/lib/python3/dist-packages/confluent_kafka:python3-confluent-kafka
  /usr/lib/python3/dist-packages/snappy:python3-snappy
  /usr/lib/python3/dist-packages/lz4:python3-lz4
  /usr/lib/python3/dist-packages/zstandard:python3-zstandard
)

missing=()
for need in "${NEEDS[@]}"; do
  probe=${need%%:*} pkg=${need#*:}
  if [[ $probe == /* ]]; then [ -e "$probe" ] && continue; else command -v "$probe" >/dev/null 2>&1 && continue; fi
  missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "install-deps: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install-deps: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
    [ "${CI:-}" = true ] && exit 1
  fi
fi

# The rest are three independent downloads (Go modules, Maven artifacts, npm packages), run
# side by side: on a fresh machine each waits mostly on its registry. Each is a no-op when what
# it fetches is present.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

gomods() {
  for m in protocol-spec broker sdk-go sdk-cgo conformance examples; do
    (cd "$m" && go mod download)
  done
  (cd bench && GOWORK=off go mod download)
}

maven() {
  # Apache Kafka's jars, where make bench-compare, make reference-kafka and the tests that run
  # Kafka's tools or brokers (brokertest.KafkaJars) look for them: fetched once here, so that no
  # test waits on Maven Central.
  make --no-print-directory -s "bench/.cache/kafka-$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' bench/pom.xml)/libs/.complete"
  # Maven artifacts of the Java binding (JNA, JUnit, the plugins and surefire's JUnit
  # provider), so its tests run Maven offline: a build that runs no test, in a scratch directory.
  # A stamp in the local repository, named by the hash of the pom, says this was done.
  local javabuild stamp
  stamp=~/.m2/repository/.spool-java-binding-$(sha256sum sdk-cgo/bindings/java/pom.xml | cut -c1-16)
  [ -e "$stamp" ] && return
  javabuild=$(mktemp -d)
  mvn -q -B -f sdk-cgo/bindings/java/pom.xml -Dspool.buildDir="$javabuild" test -Dtest=NoTest \
    -Dsurefire.failIfNoSpecifiedTests=false dependency:build-classpath -Dmdep.outputFile="$javabuild/cp.txt" >/dev/null
  rm -rf "$javabuild"
  # That build runs no test, so surefire never resolves its JUnit provider and the launcher
  # it loads, which it resolves only when tests run: fetched here by name (the versions go
  # with maven-surefire-plugin 3.2.5 and junit-jupiter 5.10.2 of the pom).
  for a in org.apache.maven.surefire:surefire-junit-platform:3.2.5 org.junit.platform:junit-platform-launcher:1.10.2; do
    mvn -q -B dependency:get -Dartifact="$a" >/dev/null
  done
  touch "$stamp"
}

npms() {
  # npm packages of the Node binding (koffi), of its example (the binding, linked) and of its
  # benchmark (KafkaJS, the reference it is measured against).
  for d in sdk-cgo/bindings/node examples/node sdk-cgo/bench/node; do
    # npm ci starts by deleting node_modules: only when the lock file is newer than what
    # npm last installed there.
    [ "$d/node_modules/.package-lock.json" -nt "$d/package-lock.json" ] && continue
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  done
}

gomods >"$logs/go" 2>&1 & gopid=$!
maven >"$logs/maven" 2>&1 & mvnpid=$!
npms >"$logs/npm" 2>&1 & npmpid=$!
rc=0
for job in go:$gopid maven:$mvnpid npm:$npmpid; do
  if ! wait "${job#*:}"; then
    echo "install-deps: fetching the ${job%%:*} dependencies failed:" >&2
    cat "$logs/${job%%:*}" >&2
    rc=1
  fi
done
exit $rc
