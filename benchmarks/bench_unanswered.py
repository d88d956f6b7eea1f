"""What a target that leaves some requests unanswered costs a run: wall time against a clean run.

    .venv/bin/python benchmarks/bench_unanswered.py [--swallow 15:0,19:3] [--select E] [--keep D]

One reference cluster (embedded store) is started; ``kafka-conformance run`` then runs the suite
twice against it, each time through a proxy on the client listener (``tests/support/proxies.py``):
a transparent one (the clean run), and one that never forwards, so never answers, the requests
named by ``--swallow`` (``API[:VERSION]``, comma-separated; without a version every version of
the API), leaving the connection open. Reported: each run's wall time, the ratio, how many
requests the proxy swallowed, and the verdict counts. Both runs use the default (fixed) seed.
``--keep D`` keeps both runs' results there (``D/clean``, ``D/silent``, their output ``D/*.out``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.targets.reference import ReferenceTarget  # noqa: E402
from tests.support.faults_silence import Swallow  # noqa: E402
from tests.support.proxies import FaultyProxy, passthrough  # noqa: E402


def parse_swallow(text: str) -> dict[int, set[int] | None]:
    out: dict[int, set[int] | None] = {}
    for item in text.split(","):
        api, _, version = item.partition(":")
        if not version:
            out[int(api)] = None
        else:
            versions = out.setdefault(int(api), set())
            if versions is not None:
                versions.add(int(version))
    return out


def run(proxy: str, controller: str, select: str | None, results: Path) -> tuple[float, Counter]:
    cmd = [
        sys.executable, "-m", "conformance", "run", "--no-report",
        "--bootstrap-server", proxy, "--controller-bootstrap", controller,
        "--results-dir", str(results),
    ]  # fmt: skip
    if select:
        cmd += ["--select", select]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=results.parent, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - started
    (results.parent / f"{results.name}.out").write_text(proc.stdout + proc.stderr)
    verdicts: Counter = Counter()
    for path in results.glob("*/results.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            verdicts[record["verdict"]] += 1
            if record["verdict"] in ("FAIL", "ERROR"):
                print(f"  {results.name}: {record['verdict']} {record['test_id']} "
                      f"{record['requirement_id']}: {(record['message'] or '')[:160]}")  # fmt: skip
    return wall, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--swallow", default="15:0,19:3", metavar="API[:V],...")
    ap.add_argument("--select", default=None, metavar="EXPR")
    ap.add_argument("--keep", default=None, type=Path, metavar="DIR")
    args = ap.parse_args()
    swallow = Swallow(parse_swallow(args.swallow))
    target = ReferenceTarget()
    target.start()
    try:
        boot, ctrl = target.bootstrap[0], str(target.controller)
        with tempfile.TemporaryDirectory() as tmp:
            with FaultyProxy((boot.host, boot.port), passthrough) as clean:
                clean_s, clean_v = run(clean.address, ctrl, args.select, Path(tmp) / "clean")
            with FaultyProxy((boot.host, boot.port), passthrough, swallow.request) as silent:
                silent_s, silent_v = run(silent.address, ctrl, args.select, Path(tmp) / "silent")
            if args.keep is not None:
                shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    finally:
        target.stop()
    print(f"swallowed requests ({args.swallow}): {sum(swallow.swallowed.values())} "
          f"{dict(sorted(swallow.swallowed.items()))}")  # fmt: skip
    print(f"clean run:      {clean_s:7.1f} s  {dict(sorted(clean_v.items()))}")
    print(f"unanswered run: {silent_s:7.1f} s  {dict(sorted(silent_v.items()))}")
    print(f"ratio: {silent_s / clean_s:.2f}")


if __name__ == "__main__":
    main()
