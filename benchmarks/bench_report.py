"""One run's report: the Python engine against the Spark job over the same run, one session.

    .venv/bin/python benchmarks/bench_report.py RUN_DIR [--rounds 3]

Each round renders RUN_DIR's report twice into fresh folders: through
``render_run_report`` as ``run`` calls it (one run: the model in Python, no Spark), and through
the Spark job as ``run`` did before (a fresh ``local[2]`` session started and stopped in the
round, as each ``run`` starts its own). Reported: wall seconds of each, their ratio, and whether
both wrote the same ``matrix.json`` (generation time and timings aside). The machine's load
average is printed with each round.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.matrix.job import run_matrix  # noqa: E402
from conformance.matrix.one_run import render_run_report  # noqa: E402
from conformance.matrix.session import spark_session  # noqa: E402

VARYING = ("generated_at", "timings")


def _matrix(folder: Path) -> dict:
    model = json.loads((folder / "matrix.json").read_text())
    return {k: v for k, v in model.items() if k not in VARYING}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for n in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="kc-bench-report-") as tmp:
            python_out, spark_out = Path(tmp) / "python", Path(tmp) / "spark"
            start = time.perf_counter()
            render_run_report(args.run_dir, python_out)
            python_s = time.perf_counter() - start
            start = time.perf_counter()
            session = spark_session("local[2]", log_file=spark_out / "spark.log")
            try:
                run_matrix([args.run_dir], spark_out, spark=session)
            finally:
                session.stop()
            spark_s = time.perf_counter() - start
            same = _matrix(python_out) == _matrix(spark_out)
        print(
            f"round {n} (load average {load:.1f}): python {python_s:.2f} s, "
            f"spark {spark_s:.2f} s, ratio {spark_s / python_s:.1f}x, same matrix.json: {same}",
            flush=True,
        )


if __name__ == "__main__":
    main()
