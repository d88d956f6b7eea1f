#!/usr/bin/env bash
# Publishes the compatibility report of the bundled reference cluster and tansu from fresh runs:
#   reports/publish.sh            (RUNS=3 runs per target by default; RUNS=5 reports/publish.sh)
# The reference runs in two set-ups, both reported as "reference": the embedded metadata store,
# and the ZooKeeper store with two standby controllers (what the ZooKeeper requirements and
# KIP-590.R5, NOT_CONTROLLER from a standby, need).
# Each run is a directory reports/runs/<run id>/ (manifest.json + results.jsonl, kept so the
# report can be rebuilt and diffed later); the report goes to reports/latest/.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
KC=.venv/bin/kafka-conformance
[ -x "$KC" ] || ./dev.sh setup
rm -rf reports/runs reports/latest
mkdir -p reports/runs
for target in reference 'reference:zookeeper?controllers=3' tansu; do
    for n in $(seq 1 "$RUNS"); do
        before=$(find reports/runs -name manifest.json | wc -l)
        # Each run records itself in reports/runs/<run id>/. A failing MUST makes `run` exit
        # non-zero and is recorded all the same; a run that recorded nothing stops publication.
        "$KC" run --target "$target" --results-dir reports/runs --no-report || true
        if [ "$(find reports/runs -name manifest.json | wc -l)" -le "$before" ]; then
            echo "publish: $target run $n recorded no manifest.json; not publishing" >&2
            exit 1
        fi
    done
done
"$KC" matrix reports/runs --out reports/latest \
    --title "Kafka protocol conformance: reference cluster (embedded and ZooKeeper stores) and tansu"
rm -rf reports/latest/results.parquet  # rebuilt from reports/runs by the command above
echo "published: reports/latest/report.html"
