"""Encode of two or more checkouts back to back: each tree's codec against kio and kafka-python.

    git worktree add /tmp/old 278a284
    .venv/bin/python benchmarks/compare_codec.py /tmp/old . --rounds 5
    git worktree remove /tmp/old

The trees take turns, one process each per round (a tree's ``conformance`` and
``benchmarks/bench_codec.py`` imported from it, checked); each process gives 2 figures of
MetadataResponse v12's encode (best of 3, CPU time) with ours as a ratio to kio and to
kafka-python measured side by side in it, so the machine's load moves the three alike. The
ranges per tree come last.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(tree: Path, figures: int) -> None:
    """One process: this tree's codec, its bench_codec's MetadataResponse v12 case."""
    sys.path.insert(0, str(tree))
    spec = importlib.util.spec_from_file_location(
        "bench_codec", tree / "benchmarks" / "bench_codec.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_codec"] = bench
    spec.loader.exec_module(bench)
    import conformance
    from conformance.protocol import Codec

    assert Path(conformance.__file__).resolve().is_relative_to(tree), conformance.__file__
    codec = Codec.from_specs()
    meta = bench.metadata_value()
    # a tree whose specs know fields of later versions decodes them at their defaults
    back = codec.decode(3, 12, "response", codec.encode(3, 12, "response", meta))
    meta.update({k: v for k, v in back.items() if k not in meta})
    case = bench.make_case(codec, "MetadataResponse v12", 3, 12, "response", meta,
                           bench.kp_metadata(meta))  # fmt: skip
    out = []
    for _ in range(figures):
        rate = bench.ops_per_second(case.encoders, 3, time.process_time)
        out.append([rate["ours"], rate["ours"] / rate["kio"], rate["ours"] / rate["kafka-python"]])
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in args.trees]
    if args.child:
        child(trees[0], 2)
        return 0
    got: dict[Path, list[list[float]]] = {t: [] for t in trees}
    for n in range(1, args.rounds + 1):
        for tree in trees:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(tree)],
                capture_output=True, text=True, cwd="/", check=True,
            )  # fmt: skip
            figures = json.loads(proc.stdout.splitlines()[-1])
            got[tree] += figures
            load = os.getloadavg()[0]
            shown = ", ".join(f"{r:,.0f}/s {k:.2f}x kio {p:.2f}x kp" for r, k, p in figures)
            print(f"round {n} {tree}: {shown} (load {load:.1f})", flush=True)
    print()
    print("| tree | ours encode/s | encode / kio (median) | encode / kafka-python |")
    print("| --- | ---: | ---: | ---: |")
    for tree, figs in got.items():
        rate, kio, kp = ([f[i] for f in figs] for i in range(3))
        print(
            f"| {tree} | {min(rate):,.0f} - {max(rate):,.0f} | {min(kio):.2f} - {max(kio):.2f}x "
            f"({statistics.median(kio):.2f}) | {min(kp):.2f} - {max(kp):.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
