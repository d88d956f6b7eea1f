"""The page ``reports/latest/kafka-truth-table.md``: every verdict other than PASS that Apache
Kafka's published runs got, each with the truth-table row that explains it (the rows, their
format and their matching are ``conformance.results.truth_table``; this module only renders them
against runs):

    python -m conformance.matrix.explain_kafka reports/runs > reports/latest/kafka-truth-table.md

One line per (requirement, verdict, explanation) with the Kafka targets that got it and how many
result records; the released Java clients judged by KIP-42's client tests
(``kip-42/client/java:V/``, run with whichever broker) are subjects too, labelled ``java V``, as
their rows name them; a verdict no row explains is listed first as UNEXPLAINED, and the exit
code is 1. With ``--matrix reports/latest/matrix.json`` (the report's model) the report's
regressions of Apache Kafka follow, each read against the rows (``regression_lines``).
The rows are read from ``reports/kafka-truth-table`` of the checkout (``KAFKA_TRUTH_TABLE`` names
another folder).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from conformance.matrix.versions import version_key
from conformance.results import truth_table
from conformance.results.schema import find_runs, load_run

#: the rows, in the checkout (reports/ is not shipped in the wheel)
TABLE = Path(os.environ.get("KAFKA_TRUTH_TABLE", "reports/kafka-truth-table"))
KAFKA = ("apache-kafka", "apache-kafka-zookeeper")
#: a client test's id names the client it judged: kip-42/client/java:3.0.2/on-acknowledgement
CLIENT_TESTS = "kip-42/client/"


def client_label(test_id: str) -> str | None:
    """``java 3.0.2`` for a test of the released Java client 3.0.2, else None (the bundled
    Python client is the project's own, not a release the truth table speaks for)."""
    if not test_id.startswith(CLIENT_TESTS):
        return None
    client = test_id.removeprefix(CLIENT_TESTS).split("/", 1)[0]
    kind, _, version = client.partition(":")
    return f"{kind} {version}" if kind == "java" and version else None


#: (implementation, version, records) of each Kafka run read
Seen = list[tuple[str, str, list]]


def regression_lines(regressions: Sequence[Mapping], seen: Seen, rows: list) -> list[str]:
    """The report's regressions of Apache Kafka (a release failing a requirement the release
    before it passed), each read against the rows: one naming both releases explains a known
    behaviour the failing release's run met and the other's did not (one run per release shows
    a failure that varies from run to run so: session 16's publication listed 10 regressions,
    8 of them the classic coordinator's), one naming the failing release only a change
    between the two; a failing record no row explains leaves it UNEXPLAINED."""
    out = [
        "## Regressions across releases",
        "",
        "The report's regressions: a release failing a requirement that the release before it "
        "(in version order) passed. A row naming both releases explains a known behaviour "
        "that the failing release's run met and the other's did not (with one run per release, "
        "a failure that varies from run to run shows as a regression); a row naming the failing "
        "release only, a change between the two.",
        "",
        "| implementation | requirement | passed in | fails in | reading |",
        "| --- | --- | --- | --- | --- |",
    ]
    kafka = [r for r in regressions if r["implementation"] in KAFKA]
    for reg in kafka:
        impl, req, verdict = reg["implementation"], reg["requirement_id"], reg["to_verdict"]
        to, before = f"{impl} {reg['to_version']}", f"{impl} {reg['from_version']}"
        failing = [
            r
            for i, v, records in seen
            if (i, v) == (impl, reg["to_version"])
            for r in records
            if r["requirement_id"] == req and r["verdict"] == verdict
        ]
        matched = [next((row for row in rows if row.matches(r, to)), None) for r in failing]
        if not failing or None in matched:
            reading = "UNEXPLAINED: a failing record no row explains"
        elif all(any(fnmatchcase(before, p) for p in row.targets) for row in matched):
            reading = f"the same known behaviour: the rows explaining it name {before} too"
        else:
            reading = f"changed between the releases: a row explaining it does not name {before}"
        where = f"{reg['from_version']} ({reg['from_verdict']})"
        out.append(f"| {impl} | {req} | {where} | {reg['to_version']} ({verdict}) | {reading} |")
    if not kafka:
        out.append("| (none) | | | | |")
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.matrix.explain_kafka")
    p.add_argument("runs", nargs="*", default=["reports/runs"], help="run folders or their parents")
    p.add_argument("--matrix", type=Path, help="the report's model (matrix.json): its regressions")
    args = p.parse_args(argv)
    matrix: Path | None = args.matrix
    if matrix is not None and not matrix.is_file():
        p.error(f"--matrix {matrix}: no such file")
    rows = truth_table.load(TABLE)
    groups: dict[tuple[str, str, int | None], dict[str, int]] = defaultdict(dict)
    targets: set[tuple[str, str]] = set()
    seen_records: Seen = []
    for run_dir in find_runs(args.runs):
        run = load_run(run_dir)
        impl, version = run.manifest["target_name"], run.manifest["target_version"]
        kafka = impl in KAFKA
        if kafka:
            targets.add((impl, version))
            seen_records.append((impl, version, run.records))
        for r in run.records:
            if r["verdict"] == "PASS":
                continue
            label = f"{impl} {version}" if kafka else client_label(r["test_id"])
            if label is None:
                continue
            match = next((i for i, row in enumerate(rows) if row.matches(r, label)), None)
            key = (r["requirement_id"], r["verdict"], match)
            groups[key][label] = groups[key].get(label, 0) + 1
    order = sorted(targets, key=lambda t: (t[0], version_key(t[1])))
    print("# Apache Kafka: every verdict that is not PASS, explained\n")
    print("Targets: " + ", ".join(f"{i} {v}" for i, v in order) + ".\n")
    print("| requirement | verdict | targets (result records) | kind | explanation | evidence |")
    print("| --- | --- | --- | --- | --- | --- |")
    missing = 0

    def sort_key(item: tuple[tuple[str, str, int | None], dict[str, int]]) -> tuple:
        (req, verdict, match), _ = item
        feature, _, n = req.rpartition(".R")
        return (match is not None, feature, int(n) if n.isdigit() else 0, verdict)

    for (req, verdict, match), seen in sorted(groups.items(), key=sort_key):
        where = ", ".join(f"{t} ({n})" for t, n in seen.items())
        if match is None:
            missing += 1
            print(f"| {req} | {verdict} | {where} | UNEXPLAINED | | |")
            continue
        row = rows[match]
        text = row.explanation.replace("|", "\\|")
        print(f"| {req} | {verdict} | {where} | {row.kind} | {text} | {row.evidence} |")
    stale = [
        row
        for row in rows
        if not any(
            row.matches(r, f"{impl} {version}")
            for impl, version, records in seen_records
            for r in records
        )
        and any(fnmatchcase(f"{i} {v}", p) for i, v in targets for p in row.targets)
    ]
    if stale:
        print("\nRows that explained nothing in these runs (stale, or their target not run):\n")
        for row in stale:
            print(f"- {row.feature}: {row.requirement} {row.verdict} {row.tests} {row.targets}")
    if matrix is not None:
        regressions = json.loads(matrix.read_text(encoding="utf-8"))["regressions"]
        print("\n" + "\n".join(regression_lines(regressions, seen_records, rows)))
    if missing:
        print(f"\n{missing} verdict groups have no explanation yet.")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
