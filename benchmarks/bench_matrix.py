"""The matrix job on synthetic runs: wall time per stage, peak memory, scaling to 10 million.

    .venv/bin/python benchmarks/bench_matrix.py [--sizes 1000000,2000000,5000000,10000000]
        [--data DIR (default ~/.cache/kafka-conformance/bench-matrix)] [--master local[2]] [--keep]
        [--baseline CHECKOUT (another commit's code, run on the same runs in the same run)]

Synthetic runs are written first (JSON lines in run directories, as the suite writes them: 10,000
records per run, over 100 requirements of the six features; 20 implementations x 10 versions,
runs handed out round-robin), then each size goes through the whole job (validation, Parquet,
every matrix, the diffs, every rendering) in a fresh Python process and JVM, so each peak memory
figure is its own. Peak memory is the largest summed RSS of the job's process and its children
(the Spark JVM), sampled every 0.2 s. Generation time is reported apart and is not job time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS_PER_RUN = 10_000
#: The record layout written (kept runs of another layout are made again): 2 adds the suite's
#: listener and observed fields (what the checks saw), about 500 bytes a line as the suite writes
SHAPE = 3
IMPLEMENTATIONS = 20
VERSIONS = 10
FEATURES = {
    "protocol": ("PROTOCOL", 30),
    "kip-78": ("KIP-78", 15),
    "broker-registration": ("BROKER-REGISTRATION", 20),
    "kip-42": ("KIP-42", 15),
    "kip-536": ("KIP-536", 5),
    "kip-590": ("KIP-590", 15),
}
APIS = [
    (0, "Produce", 11), (1, "Fetch", 16), (3, "Metadata", 12), (18, "ApiVersions", 3),
    (19, "CreateTopics", 7), (60, "DescribeCluster", 1), (62, "BrokerRegistration", 3),
]  # fmt: skip
# Verdict of a (target, test) before per-run noise, and the cumulative weights.
BASE = [("PASS", 0.86), ("FAIL", 0.04), ("NONSTRICT", 0.02), ("UNSUPPORTED", 0.05),
        ("NOT_EXPOSED", 0.01), ("PROPOSAL_ABSENT", 0.01), ("SKIP", 0.01)]  # fmt: skip


def catalog() -> list[str]:
    """10,000 JSON fragments, one per (test, requirement): everything but run, verdict, time."""
    rng = random.Random(7)
    requirements = [
        (feature, f"{prefix}.R{n}", "SHOULD" if n % 7 == 0 else "MUST")
        for feature, (prefix, count) in FEATURES.items()
        for n in range(1, count + 1)
    ]
    out = []
    for i in range(RECORDS_PER_RUN):
        feature, rid, level = requirements[i % len(requirements)]
        key, name, top = APIS[rng.randrange(len(APIS))]
        version = rng.randint(0, top)
        test = f"{name.lower()}/v{version}/{feature}/case-{i:05d}"
        out.append(
            f'"test_id":"{test}","requirement_id":"{rid}","level":"{level}",'
            f'"feature":"{feature}","api_key":{key},"api_name":"{name}","api_version":{version},'
        )
    return out


def targets() -> list[tuple[str, str]]:
    return [(f"impl-{i:02d}", f"1.{v}.0") for i in range(IMPLEMENTATIONS) for v in range(VERSIONS)]


def write_run(args: tuple[Path, int]) -> int:
    """Run ``k`` goes to target ``k % 200`` as its run number ``k // 200``."""
    folder, k = args
    pairs = targets()
    impl, version = pairs[k % len(pairs)]
    number = k // len(pairs)
    run_id = f"{impl}-{version}-run{number:03d}"
    fragments = catalog_cache()
    base_rng = random.Random(f"{impl}/{version}")  # the target's stable behaviour
    rng = random.Random(run_id)  # this run's noise
    names = [v for v, _ in BASE]
    weights = [w for _, w in BASE]
    base = base_rng.choices(names, weights, k=len(fragments))
    run_dir = folder / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    prefix = f'{{"run_id":"{run_id}",'
    lines = []
    for fragment, verdict in zip(fragments, base, strict=True):
        roll = rng.random()
        if verdict == "PASS" and roll < 0.005:
            verdict = "FAIL"
        elif roll > 0.999:
            verdict = "ERROR"
        message = "" if verdict == "PASS" else f"expected 0, got {int(roll * 1000)}"
        seed = rng.getrandbits(40) if roll < 0.3 else "null"
        # what the checks saw, as the suite records it (null when no check ran)
        observed = "null"
        if verdict in ("PASS", "FAIL", "ERROR", "NONSTRICT"):
            seen = ",".join(
                f'"request {j} (v{j % 4}) -> ErrorCode=NONE Throttle=0 epoch={int(roll * 97)}"'
                for j in range(3)
            )
            failed = 0 if verdict == "PASS" else 1
            observed = f'{{"checks":{1 + int(roll * 20)},"failed":{failed},"seen":[{seen}]}}'
        lines.append(
            f'{prefix}{fragment}"verdict":"{verdict}","message":"{message}",'
            f'"duration_ms":{roll * 300:.1f},"seed":{seed},"listener":"client",'
            f'"observed":{observed}}}\n'
        )
    (run_dir / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    start = 1_700_000_000 + k * 600
    manifest = {
        "format_version": 1,
        "run_id": run_id,
        "target_name": impl,
        "target_version": version,
        "bootstrap": "127.0.0.1:9092",
        "api_versions": {str(key): [0, top - (k % 3 == 0)] for key, _, top in APIS},
        "suite_version": "0.1.0",
        "spec_release": "3.9.0",
        "hypothesis_seed": None,
        "hypothesis_profile": "ci",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
        "ended_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + 300)),
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return len(lines)


_CATALOG: list[str] = []


def catalog_cache() -> list[str]:
    if not _CATALOG:
        _CATALOG.extend(catalog())
    return _CATALOG


def generate(folder: Path, records: int) -> float:
    """Write ``records`` synthetic records (whole runs) under ``folder``; returns seconds."""
    runs = math.ceil(records / RECORDS_PER_RUN)
    done = folder / ".complete"
    if done.exists() and done.read_text() == f"{runs} {SHAPE}":
        return 0.0
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        written = sum(pool.map(write_run, [(folder, k) for k in range(runs)], chunksize=8))
    assert written == runs * RECORDS_PER_RUN
    done.write_text(f"{runs} {SHAPE}")
    return time.perf_counter() - start


def _tree(pid: int) -> tuple[int, float]:
    """Summed resident memory (bytes) and CPU time (s) of ``pid`` and all its descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        p = int(entry)
        children.setdefault(int(fields[1]), []).append(p)
        stats[p] = (int(fields[21]) * page, (int(fields[11]) + int(fields[12])) / tick)
    rss, cpu, stack = 0, 0.0, [pid]
    while stack:
        p = stack.pop()
        r, c = stats.get(p, (0, 0.0))
        rss, cpu = rss + r, cpu + c
        stack.extend(children.get(p, []))
    return rss, cpu


def one(data: Path, out: Path, master: str) -> dict:
    """Run the whole job once in this process; called in a fresh interpreter per size."""
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree(os.getpid())[0])
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    from conformance.matrix.job import run_matrix
    from conformance.matrix.model import Timings
    from conformance.matrix.session import spark_session

    spark = spark_session(master)
    session = time.perf_counter() - start
    session_cpu = _tree(os.getpid())[1]
    timings = Timings(cpu_clock=lambda: _tree(os.getpid())[1])
    result = run_matrix([data], out, spark=spark, timings=timings)
    job_cpu = _tree(os.getpid())[1] - session_cpu
    spark.stop()
    total = time.perf_counter() - start
    stop.set()
    sampler.join()
    model = result.model
    return {
        "records": model["records"]["counted"],
        "bad": model["records"]["bad"],
        "runs": len(model["runs"]),
        "cells": len(model["cells"]),
        "flaky": len(model["flakiness"]),
        "regressions": len(model["regressions"]),
        "session_s": round(session, 2),
        "stages_s": model["timings"],
        "stages_cpu_s": timings.cpu,
        "session_cpu_s": round(session_cpu, 1),
        "job_cpu_s": round(job_cpu, 1),
        "job_s": round(total - session, 2),
        "total_s": round(total, 2),
        "peak_rss_mib": round(peak[0] / 2**20),
        "html_mib": round(result.files["html"].stat().st_size / 2**20, 1),
    }


def run_one(code: Path, data: Path, out: Path, master: str) -> dict | None:
    """The job of the checkout ``code`` (its ``conformance`` package first on the path) in a
    fresh interpreter."""
    path = os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])
    script = str(Path(__file__).resolve())
    proc = subprocess.run(
        [sys.executable, script, "--master", master, "--one", str(data), str(out)],
        capture_output=True, text=True, cwd=code, env={**os.environ, "PYTHONPATH": path},
        check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,2000000,5000000,10000000")
    parser.add_argument(
        "--data", type=Path, default=Path.home() / ".cache" / "kafka-conformance" / "bench-matrix"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--keep", action="store_true", help="keep the generated runs")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of other code (e.g. a git worktree of an older commit): its job runs on "
        "the same runs right after this code's, and the ratio of wall time per million records "
        "is printed",
    )
    parser.add_argument("--one", nargs=2, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(Path(args.one[0]), Path(args.one[1]), args.master)))
        return 0
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        data = args.data / f"runs-{size}"
        generated = generate(data, size)
        out = args.data / f"out-{size}"
        shutil.rmtree(out, ignore_errors=True)
        for code in [ROOT] + ([args.baseline.resolve()] if args.baseline else []):
            load = os.getloadavg()[0]
            row = run_one(code, data, out, args.master)
            if row is None:
                return 1
            row.update(code=str(code), generated_s=round(generated, 1), load_before=round(load, 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(out, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
    print()
    stages = ("ingest", "requirements", "history", "apis", "diff", "render")
    print("wall seconds (CPU seconds of the job's processes in brackets)")
    print(
        f"| code | records | runs | cells | session | {' | '.join(stages)} | job | peak RSS MiB"
        " | load |"
    )
    print("| --- " + "| ---: " * (len(stages) + 7) + "|")
    for r in rows:
        wall, cpu = r["stages_s"], r["stages_cpu_s"]
        cells = " | ".join(f"{wall[k]:.1f} ({cpu[k]:.1f})" for k in stages)
        print(
            f"| {Path(r['code']).name} | {r['records']:,} | {r['runs']} | {r['cells']:,} |"
            f" {r['session_s']:.1f} | {cells} | {r['job_s']:.1f} ({r['job_cpu_s']:.1f}) |"
            f" {r['peak_rss_mib']:,} | {r['load_before']} |"
        )
    if args.baseline:
        print()
        for ours, theirs in zip(rows[::2], rows[1::2], strict=True):
            per_m = [r["job_s"] / (r["records"] / 1e6) for r in (ours, theirs)]
            print(
                f"{ours['records']:,} records: {per_m[0]:.2f} s per million records against"
                f" {per_m[1]:.2f} for the baseline: {per_m[0] / per_m[1]:.2f}x its wall time"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
