#!/usr/bin/env bash
# The project's one entry point for set-up and the two jobs README names.
#   ./dev.sh main    set up, then run the whole suite against the bundled reference cluster
#   ./dev.sh test    set up, then run the project's own tests
#   ./dev.sh setup   set up only (idempotent): .venv with the project and its test dependencies
set -euo pipefail
cd "$(dirname "$0")"
VENV=${KC_VENV:-.venv}

# install_deb PACKAGE WHY: install a Debian package when root, else say why it is wanted
install_deb() {
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing the Debian package $1 ($2 need it)" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null; } ||
            echo "note: could not install the Debian package $1 ($2 need it)" >&2
    else
        echo "note: not root: install the Debian package $1 ($2 need it)" >&2
    fi
}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV"
    fi
    local stamp="$VENV/.kc-installed"
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        echo "setup: installing the project and its test dependencies into $VENV (a minute or two; once per change of pyproject.toml)" >&2
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        "$VENV/bin/python" -m pip install --quiet -e '.[test]'
        touch "$stamp"
        echo "setup: done" >&2
    fi
    # Bytecode of the project's own packages, as pip writes it for the ones it installs: a run
    # starts every node and worker as a fresh process that imports them, and where
    # PYTHONDONTWRITEBYTECODE=1 none of them would ever find it (about 0.1 CPU-s per start).
    "$VENV/bin/python" -m compileall -q -j 0 conformance reference_impl >/dev/null ||
        echo "note: could not write the bytecode of conformance/ and reference_impl/" >&2
    # The codec's compiled units likewise (conformance/protocol/code_cache.py: each process
    # compiled the ones it uses; about 0.03 CPU-s of every node start).
    "$VENV/bin/python" -c "from conformance.protocol.code_cache import warm; warm()" ||
        echo "note: could not write the codec's compiled units" >&2
    command -v javac >/dev/null || echo "note: javac not found; install Java 17 (openjdk-17-jdk-headless) for the codec oracle tests" >&2
    if ! command -v chromium >/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            echo "setup: installing the Debian package chromium (the HTML report tests need it)" >&2
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
                echo "note: could not install chromium (Debian package); the HTML report tests need it" >&2
        else
            echo "note: chromium not found and not root: install the Debian package chromium for the HTML report tests" >&2
        fi
    fi
    # ZooKeeper (Debian package) for the reference cluster's zookeeper:// metadata store tests
    [ -f /usr/share/java/zookeeper.jar ] || install_deb zookeeper "the ZooKeeper-mode reference tests"
    kafka_releases
    docker_engine
    local_images
}

# Container images for the docker target's tests, built here from Debian and the fetched Kafka
# jars when no registry is reachable (conformance.targets.images). Kept between runs by a content
# key: about two minutes on a machine with none, seconds after.
LOCAL_IMAGES=${KC_LOCAL_IMAGES:-"reference kafka:3.9.1"}
local_images() {
    "$VENV/bin/python" -c 'import docker; docker.from_env().ping()' 2>/dev/null || return 0
    command -v debootstrap >/dev/null || install_deb debootstrap "the container images built here"
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m conformance.targets.images $LOCAL_IMAGES >/dev/null ||
        echo "note: could not build the images $LOCAL_IMAGES (the docker target's image tests need them)" >&2
}

# Apache Kafka releases from Maven Central (the kafka:VERSION target; cached outside the repo, so
# this is quick once done): the one the project's tests run against, and the 4.x releases whose
# message specs the spec-facts, codec-oracle and release-table tests read; and the kafka-clients
# release the KIP-42 client tests judge (--client java:VERSION, its harness compiled here).
KAFKA_RELEASES=${KC_KAFKA_RELEASES:-"kafka:3.9.1 kafka:4.0.2 kafka:4.4.0 java:3.9.1"}
kafka_releases() {
    command -v mvn >/dev/null || install_deb maven "the Apache Kafka target (kafka:VERSION)"
    command -v mvn >/dev/null || return 0
    # shellcheck disable=SC2086
    "$VENV/bin/kafka-conformance" fetch $KAFKA_RELEASES >/dev/null ||
        echo "note: could not fetch $KAFKA_RELEASES from Maven Central (the Apache Kafka tests need them)" >&2
}

# A Docker engine (Debian's docker.io) for the docker target's tests, started when not running.
# Its containers use the host's network, so the daemon needs no bridge or iptables rules.
docker_engine() {
    engine_up() { "$VENV/bin/python" -c 'import docker; docker.from_env().ping()' 2>/dev/null; }
    engine_up && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "note: no Docker engine reachable and not root: install Debian's docker.io and start dockerd (the docker target's tests need it)" >&2
        return 0
    fi
    command -v dockerd >/dev/null || install_deb docker.io "the docker target's tests"
    command -v dockerd >/dev/null || return 0
    if ! pgrep -x dockerd >/dev/null; then
        setsid dockerd --iptables=false --ip6tables=false --bridge=none \
            >>/var/log/kc-dockerd.log 2>&1 </dev/null &
    fi
    local i
    for i in $(seq 60); do
        [ -S /var/run/docker.sock ] && engine_up && return 0
        sleep 0.5
    done
    echo "note: dockerd did not answer on /var/run/docker.sock within 30 s (see /var/log/kc-dockerd.log)" >&2
}

case "${1:-}" in
    setup) setup ;;
    main)
        setup
        shift
        exec "$VENV/bin/kafka-conformance" run "$@"
        ;;
    test)
        setup
        shift
        # in parallel (pytest-xdist): KC_TEST_JOBS workers (default 3; 0: one process), whole
        # modules each, tests sharing a costly fixture or suite run in one worker, the longest
        # waits handed out first (tests/xdist_groups.py). The 30 slowest tests close the output:
        # where the CI budget (15 min) goes. Heavy whole runs a cheaper test covers are marked
        # publication and left out (reports/publish.sh runs them; so does `./dev.sh test -m
        # publication`, a later -m replacing this one)
        exec "$VENV/bin/python" -m pytest -n "${KC_TEST_JOBS:-3}" --dist loadfile --durations=30 \
            -m "not publication" "$@"
        ;;
    *)
        echo "usage: ./dev.sh main|test|setup [args...]" >&2
        exit 2
        ;;
esac
