"""Record the codec's ratios to its peers with the date and commit, and say when they fell.

Run by ``reports/publish.sh`` (and by hand from the repository root)::

    .venv/bin/python benchmarks/record.py              # --rounds N (default 7), --no-append

Each round measures MetadataResponse v12 (``bench_codec``: 3 brokers, 10 topics x 10
partitions) with the three libraries taking turns, CPU time, best of 3 per figure, and keeps
our speed as ratios to kio and kafka-python measured in the same round: the machine's load
moves all three alike. The record (one JSON line in ``benchmarks/history.jsonl``) holds every
round, so a record states its own noise.

The exit status is 1, with one line per finding on stderr, when a round misses a target of
ARCHITECTURE.md (encode >= 5x kio and >= 2x kafka-python, decode >= 2x kafka-python), or when a
ratio fell beyond the noise: the best round of this run below the worst round of the last
record (the last of this machine, by host name, when there is one).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import bench_codec

ROOT = Path(__file__).resolve().parents[1]
HISTORY = Path(__file__).with_name("history.jsonl")
#: the ratios a record keeps, and their targets (None: recorded, no target)
WATCHED = {
    "encode/kio": bench_codec.TARGETS[("encode", "kio")],
    "encode/kafka-python": bench_codec.TARGETS[("encode", "kafka-python")],
    "decode/kafka-python": bench_codec.TARGETS[("decode", "kafka-python")],
    "decode/kio": None,  # kio decodes in Rust: recorded, not a target any more
}
#: what decides the commit's speed: a tree whose codec differs from its commit is marked so
CODE_PATHS = ("conformance/protocol", "specs/messages", "benchmarks/bench_codec.py")


def commit() -> dict[str, Any]:
    """The checkout's commit, and whether the code measured differs from it."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return {"commit": None, "modified": None}
    modified = git("diff", "--quiet", "HEAD", "--", *CODE_PATHS).returncode != 0
    return {"commit": head.stdout.strip(), "modified": modified}


def measure(rounds: int) -> dict[str, Any]:
    import kafka
    import kio

    from conformance.protocol import Codec

    case = bench_codec.metadata_case(Codec.from_specs())
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **commit(),
        "bench": "codec MetadataResponse v12",
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "kio": kio.__version__,
        "kafka-python": kafka.__version__,
        "rounds": [bench_codec.ratios(case) for _ in range(rounds)],
    }


def history(path: Path = HISTORY) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def findings(record: dict[str, Any], earlier: list[dict[str, Any]]) -> list[str]:
    """What the record misses: a target in any round, or a ratio below the noise of the last
    record (of this machine when there is one): this run's best round below its worst."""
    out = []
    rounds = record["rounds"]
    for name, target in WATCHED.items():
        worst = min(r[name] for r in rounds)
        if target is not None and worst < target:
            out.append(f"{name}: {worst:.2f}x in a round, target >= {target}x")
    same = [e for e in earlier if e.get("bench") == record["bench"]]
    if same:
        here = [e for e in same if e.get("host") == record["host"]]
        last = (here or same)[-1]
        for name in WATCHED:
            best = max(r[name] for r in rounds)
            floor = min(r[name] for r in last["rounds"])
            if best < floor:
                out.append(
                    f"{name}: at most {best:.2f}x in {len(rounds)} rounds, below the "
                    f"{floor:.2f}x of every round of {last.get('commit')} ({last['date']}"
                    + ("" if here else f", on {last.get('host')}")
                    + ")"
                )
    return out


def summary(record: dict[str, Any]) -> str:
    rounds = record["rounds"]
    parts = []
    for name in WATCHED:
        values = [r[name] for r in rounds]
        parts.append(
            f"{name} {statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"
        )
    where = record.get("commit") or "no commit"
    if record.get("modified"):
        where += " (modified)"
    return f"codec at {where}, {len(rounds)} rounds, median (range): " + ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--history", type=Path, default=HISTORY)
    ap.add_argument("--no-append", action="store_true", help="measure and compare only")
    args = ap.parse_args(argv)
    earlier = history(args.history)
    record = measure(args.rounds)
    print(summary(record))
    if not args.no_append:
        with args.history.open("a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    missed = findings(record, earlier)
    for line in missed:
        print(f"record: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
