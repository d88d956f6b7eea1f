"""``kafka-conformance matrix RUNS_DIR... --out DIR [--spark-master URL]``: the matrix job.

Reads every run under the given folders (a run directory is manifest.json + results.jsonl),
writes the Parquet dataset and the report (HTML, Markdown, JSON, CSV, badges, plot) into
``--out``. Bad result lines are listed on stderr with file and line and left out; the rest count.
A run without a manifest stops the job with one error line (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.matrix.session import DEFAULT_MASTER


def add_matrix(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "matrix",
        help="aggregate recorded runs into compatibility matrices and a report (PySpark)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUNS_DIR",
        help="a run directory, or a folder of them",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--spark-master",
        default=DEFAULT_MASTER,
        metavar="URL",
        help=f"Spark master (default {DEFAULT_MASTER})",
    )
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        help="compare these two runs (run ids or directories); default: each implementation's "
        "latest run against the run before it",
    )
    parser.add_argument(
        "--kips-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="requirement texts (default: the project's specs/requirements)",
    )
    parser.add_argument("--title", default=None, help="the report's title")
    parser.set_defaults(handler=matrix_command)


def matrix_command(args: argparse.Namespace) -> int:
    from conformance.matrix.job import run_matrix
    from conformance.protocol.errors import SpecError
    from conformance.results.schema import RunError, find_runs

    try:
        find_runs(args.runs)  # fail on a bad path or a missing manifest before Spark starts
        result = run_matrix(
            args.runs,
            args.out,
            spark_master=args.spark_master,
            diff=tuple(args.diff) if args.diff else None,
            kips_dir=args.kips_dir,
            title=args.title,
        )
    except (RunError, SpecError) as e:
        print(f"kafka-conformance: error: {e}", file=sys.stderr)
        return 2
    model = result.model
    for p in model["problems"]:
        print(f"{p['file']}:{p['line']}: {p['message']}", file=sys.stderr)
    records = model["records"]
    print(
        f"{len(model['runs'])} runs, {records['counted']} result records counted, "
        f"{records['bad']} bad lines skipped; {len(model['cells'])} cells, "
        f"{len(model['flakiness'])} flaky, {len(model['regressions'])} regressions across versions"
    )
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in model["timings"].items())
    print(f"stages: {stages}")
    print(f"report: {result.files['html']}")
    return 0
