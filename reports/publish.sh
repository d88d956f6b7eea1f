#!/usr/bin/env bash
# Publishes the compatibility report of the bundled reference cluster, tansu and Apache Kafka's
# releases from fresh runs:
#   reports/publish.sh            (RUNS=3 runs per target, KAFKA_RUNS=2 per Kafka release;
#                                  FRESH=1: every run done again, none reused)
# The reference runs in two set-ups, both reported as "reference": the embedded metadata store,
# and the ZooKeeper store with two standby controllers (what the ZooKeeper requirements and
# KIP-590.R5, NOT_CONTROLLER from a standby, need). Apache Kafka runs as released (jars from
# Maven Central, `kafka-conformance fetch`): each KAFKA_TARGETS entry is a column
# (apache-kafka for KRaft, apache-kafka-zookeeper for ZooKeeper mode, by release).
# Each run is a directory reports/runs/<run id>/ (manifest.json + results.jsonl, kept so the
# report can be rebuilt and diffed later, and reused by the next publication while its content
# key holds; a Kafka run keeps its brokers' settings, not their logs); the report goes to
# reports/latest/, with Apache Kafka's truth table
# (reports/latest/kafka-truth-table.md: every verdict that is not PASS, explained, and the
# report's regressions between releases read against it). Last, the
# codec's benchmark is recorded in benchmarks/history.jsonl (benchmarks/record.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# SIGTERM or ^C stops the step under way and then publication: the step is SIGTERMed by its pid
# and waited for (a run stops its target, Kafka's ZooKeeper included; the publication step stops
# its run first). Bash runs a trap only once its foreground command has ended, so each long
# step runs in the background and is waited for (`step`); session 16 left a run and a
# ZooKeeper running when publish was stopped.
step_pid=
stopped() {
    trap - TERM INT
    if [ -n "$step_pid" ]; then
        kill -TERM "$step_pid" 2>/dev/null || true
        wait "$step_pid" 2>/dev/null || true
    fi
    echo "publish: stopped" >&2
    exit 143
}
trap stopped TERM INT
step() {
    "$@" &
    step_pid=$!
    wait "$step_pid"
}
RUNS=${RUNS:-3}
KAFKA_RUNS=${KAFKA_RUNS:-2}
KAFKA_TARGETS=${KAFKA_TARGETS:-"kafka:3.9.1 kafka:3.9.1?store=zookeeper kafka:4.0.2 kafka:4.4.0"}
# KAFKA_TARGETS=all: the latest patch of every release line 2.8-4.4 that Maven Central serves here
# (issue 41), KRaft from 3.3 (production-ready) and ZooKeeper mode to 3.9 (gone in 4.0); each was
# started on this machine's Java 17 (reports/README.md, "Apache Kafka releases")
ALL_KAFKA_TARGETS="kafka:2.8.2?store=zookeeper kafka:3.0.2?store=zookeeper kafka:3.1.2?store=zookeeper
kafka:3.2.3?store=zookeeper kafka:3.3.2 kafka:3.3.2?store=zookeeper kafka:3.4.1 kafka:3.4.1?store=zookeeper
kafka:3.5.2 kafka:3.5.2?store=zookeeper kafka:3.6.2 kafka:3.6.2?store=zookeeper kafka:3.7.2
kafka:3.7.2?store=zookeeper kafka:3.8.1 kafka:3.8.1?store=zookeeper kafka:3.9.2 kafka:3.9.2?store=zookeeper
kafka:4.0.2 kafka:4.1.2 kafka:4.2.2 kafka:4.3.1 kafka:4.4.0"
[ "$KAFKA_TARGETS" = all ] && KAFKA_TARGETS=$ALL_KAFKA_TARGETS
# the clients KIP-42.R1-R7 are judged on (the report's Clients section), with the reference's runs
CLIENTS=${CLIENTS:-"python java:2.8.2 java:3.0.2 java:3.9.1 java:4.0.2 java:4.4.0"}
KC=.venv/bin/kafka-conformance
[ -x "$KC" ] || ./dev.sh setup
# the project's heavy tests CI leaves out (marked publication: a Spark standalone cluster, Kafka
# in a built image, ... ; `grep -rn mark.publication tests`), first: a red one stops publication.
# PUBLICATION_TESTS=0 leaves them out (run them apart at the same commit: a publication timed
# for its runs alone, as in session 14's)
if [ "${PUBLICATION_TESTS:-1}" != 0 ]; then
    step .venv/bin/python -m pytest -n 3 --dist loadfile -m publication -q
else
    echo "publish: the publication-marked tests are left out (PUBLICATION_TESTS=0)" >&2
fi
rm -rf reports/latest
# Each target's runs: those in reports/runs whose content key (the manifest's) is unchanged are
# kept, a feature whose files changed is rerun alone and merged with the earlier run's other
# features, anything else is rerun whole; one line per target says which and why
# (conformance/matrix/publish.py, issue 41). FRESH=1 reruns everything. Runs of targets not listed
# here (a KAFKA_TARGETS narrower than the last publication's) are moved into
# reports/runs-set-aside/<UTC time>/, not deleted: `mv` them back to publish them again.
client_options=()
for client in $CLIENTS; do
    client_options+=(--client "$client")
done
set -f  # the targets' '?' is no glob
kafka_targets=($KAFKA_TARGETS)
set +f
# SPARK_MASTER=spark://host:7077: the reruns are the tasks of one Spark job on that standalone
# cluster, all at once (conformance/matrix/publish_spark.py; reports/README.md)
step .venv/bin/python -m conformance.matrix.publish reports/runs ${FRESH:+--fresh} \
    ${SPARK_MASTER:+--spark-master "$SPARK_MASTER"} \
    --runs "$RUNS" --kafka-runs "$KAFKA_RUNS" "${client_options[@]}" --clients-on reference \
    reference 'reference:zookeeper?controllers=3' tansu "${kafka_targets[@]}"
find reports/runs -path '*/kafka/*.log' -delete
step "$KC" matrix reports/runs --out reports/latest ${SPARK_MASTER:+--spark-master "$SPARK_MASTER"} \
    --title "Kafka protocol conformance: Apache Kafka releases, the reference cluster (embedded and ZooKeeper stores) and tansu"
rm -rf reports/latest/results.parquet  # rebuilt from reports/runs by the command above
.venv/bin/python -m conformance.matrix.explain_kafka reports/runs --matrix reports/latest/matrix.json \
    > reports/latest/kafka-truth-table.md ||
    echo "publish: some of Apache Kafka's verdicts are not explained yet (reports/latest/kafka-truth-table.md)" >&2
# the codec's speed as ratios to kio and kafka-python, appended to benchmarks/history.jsonl with
# the date and commit; a round below a target, or a fall beyond the last record's noise, is said
.venv/bin/python benchmarks/record.py ||
    echo "publish: the codec's ratios fell (above; benchmarks/history.jsonl, benchmarks/README.md)" >&2
echo "published: reports/latest/report.html"
