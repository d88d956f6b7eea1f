"""What a target without CreateTopics gets judged, and what its run costs (issue 24).

    .venv/bin/python benchmarks/bench_no_create_topics.py [--modes plain,hide,refuse,small]
        [--select EXPR] [--keep DIR] [--repeat N]

One reference cluster (3 brokers, embedded store) is started, not timed; ``kafka-conformance
run`` then runs the suite against it once per mode, each time through a proxy in front of every
broker (``tests/support/faults_log.ProxiedCluster``), as an external target:

- ``plain``: a transparent proxy, the reference as it is (every ratio is to this run);
- ``hide``: CreateTopics not advertised (a broker that creates topics on first use);
- ``refuse``: CreateTopics advertised but every topic refused TOPIC_AUTHORIZATION_FAILED (a
  cluster whose ACLs do not let the suite's principal create topics);
- ``none``: CreateTopics hidden and no auto-creation either (nothing to judge the data with);
- ``small``: only the APIs and versions of the small broker of issue 24 (Produce v8, Fetch v6,
  ListOffsets v5, Metadata v8, OffsetCommit v7, OffsetFetch v5, FindCoordinator v2, JoinGroup
  v5, Heartbeat/LeaveGroup/SyncGroup v3, ApiVersions v3), served by the reference behind.

Reported per mode: wall time of the run (the median of ``--repeat`` rounds, the modes taking
turns in each) and its ratio to ``plain``'s, requirements judged (a
PASS, FAIL or NONSTRICT record) out of those the run has records for, requirements SKIP because
their set-up could not be had, and the verdict counts. Every run uses the default (fixed) seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.results.summary import SET_UP_MISSING, SET_UP_NEEDS  # noqa: E402
from conformance.targets.reference import ReferenceTarget  # noqa: E402
from tests.support.faults_log import Fault, ProxiedCluster  # noqa: E402
from tests.support.faults_topics import (  # noqa: E402
    Chain,
    HideCreateTopics,
    NoAutoCreation,
    RefuseCreateTopics,
    SmallBroker,
)

MODES = {
    "plain": Fault,
    "hide": HideCreateTopics,
    "refuse": RefuseCreateTopics,
    "none": lambda: Chain(HideCreateTopics(), NoAutoCreation()),
    "small": SmallBroker,
}
JUDGED = {"PASS", "FAIL", "NONSTRICT"}


def run(bootstrap: str, mode: str, select: str | None, results: Path) -> tuple[float, list]:
    """One ``kafka-conformance run`` through the proxies: wall time and its result records."""
    cmd = [
        sys.executable, "-m", "conformance", "run", "--no-report",
        "--bootstrap-server", bootstrap, "--target-name", f"proxied-{mode}",
        "--results-dir", str(results),
    ]  # fmt: skip
    if select:
        cmd += ["--select", select]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - start
    found = sorted(results.glob("*/results.jsonl"))
    if not found:
        raise SystemExit(f"{mode}: no results\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, [json.loads(line) for line in found[-1].read_text().splitlines()]


def figures(records: list[dict]) -> dict:
    judged = {r["requirement_id"] for r in records if r["verdict"] in JUDGED}
    unset = {
        r["requirement_id"]
        for r in records
        if r["verdict"] == "SKIP"
        and (
            SET_UP_MISSING in (r["message"] or "") or (r["message"] or "").startswith(SET_UP_NEEDS)
        )
    } - judged
    return {
        "judged": len(judged),
        "requirements": len({r["requirement_id"] for r in records}),
        "unset": len(unset),
        "verdicts": Counter(r["verdict"] for r in records),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default="plain,hide,refuse,small")
    ap.add_argument("--select", help="a --select expression (default: the whole suite)")
    ap.add_argument("--keep", type=Path, help="keep the results here (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every mode, in turn")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if modes[0] != "plain":
        modes.insert(0, "plain")
    target = ReferenceTarget()
    target.start()
    walls: dict[str, list[float]] = {m: [] for m in modes}
    out: dict[str, tuple[dict, int]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = args.keep or Path(tmp)
            for round_ in range(args.repeat):
                for mode in modes:
                    fault = MODES[mode]()
                    with ProxiedCluster(target, fault) as cluster:
                        where = base / f"{mode}-{round_}"
                        wall, records = run(cluster.bootstrap, mode, args.select, where)
                    walls[mode].append(wall)
                    out[mode] = (figures(records), fault.changed)
                    print(f"{mode}: {wall:.1f} s", file=sys.stderr, flush=True)
    finally:
        target.stop()
    plain_wall, plain = statistics.median(walls["plain"]), out["plain"][0]
    print("| mode | wall s (median; each run) | vs plain | requirements judged | vs plain | "
          "set-up missing | verdicts | answers rewritten |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for mode, (f, changed) in out.items():
        wall = statistics.median(walls[mode])
        each = ", ".join(f"{w:.1f}" for w in walls[mode])
        counts = ", ".join(f"{n} {v}" for v, n in f["verdicts"].most_common())
        print(
            f"| {mode} | {wall:.1f} ({each}) | {wall / plain_wall:.2f}x | {f['judged']}/"
            f"{f['requirements']} | {f['judged'] / max(plain['judged'], 1):.2f} | {f['unset']} "
            f"| {counts} | {changed} |"
        )


if __name__ == "__main__":
    main()
