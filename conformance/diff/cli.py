"""``kafka-conformance diff``: the differential run between two targets (see the package)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.diff.mask import MASK_FILE, MaskError


def add_diff(sub: argparse._SubParsersAction) -> None:
    from conformance.plugin import DEFAULT_SEED

    parser = sub.add_parser(
        "diff",
        help="send the same requests to two targets and compare every answer field by field",
        description="Start the first target, send it the spec-derived request stream at the "
        "seed and record it; start the second set up alike and replay the recorded requests; "
        "print one line per difference the mask does not explain, a summary per API, and the "
        "ApiVersions comparison; write diff.json and stream.jsonl into --out. Exit code 1 "
        "when a difference is unexplained.",
    )
    parser.add_argument(
        "--target",
        action="append",
        required=True,
        metavar="KIND",
        help="a target kind as for run (give it twice: e.g. reference, then kafka:4.4.0)",
    )
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        metavar="N",
        help="brokers of each target (default 1: no answer then depends on where a partition "
        "or a group's coordinator was placed)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="hypothesis seed")
    parser.add_argument(
        "--examples", type=int, default=3, metavar="N", help="drawn requests per API version"
    )
    parser.add_argument(
        "--api",
        action="append",
        default=None,
        metavar="NAME[:VERSIONS]",
        help="only these APIs (repeatable; e.g. Metadata or Metadata:9-12)",
    )
    parser.add_argument("--out", type=Path, default=Path("diff"), metavar="DIR")
    parser.add_argument("--mask", type=Path, default=MASK_FILE, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per request")
    parser.add_argument(
        "--models",
        action="store_true",
        help="also run the state-machine models against each target (the suite's own set-up, "
        "its default broker count) and compare their exchanges step by step",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="TEST",
        help="with --models: only this model test, by its suite id (repeatable; e.g. "
        "share-groups/consumers/state-machine or consumer-groups/members/state-machine; "
        "default: the models conformance.diff.models.MODEL_TESTS names)",
    )
    parser.set_defaults(handler=diff_command)


def _error(message: str) -> int:
    print(f"kafka-conformance: error: {message}", file=sys.stderr)
    return 2


def diff_command(args: argparse.Namespace) -> int:
    # here, not at the top: the stream draws with hypothesis, which `kafka-conformance` alone
    # (and a wheel install's first command) must not import
    from conformance.diff.runner import DiffOptions, lines, run_diff, write
    from conformance.diff.stream import parse_selection
    from conformance.targets import TargetError

    if len(args.target) != 2:
        return _error("diff needs exactly two --target options")
    if not 1 <= args.brokers <= 9:
        return _error(f"--brokers must be 1 to 9, not {args.brokers}")
    if args.examples < 0:
        return _error("--examples must be 0 or more")
    try:
        select = [parse_selection(s) for s in args.api] if args.api else None
    except ValueError as e:
        return _error(str(e))
    opts = DiffOptions(
        targets=(args.target[0], args.target[1]),
        brokers=args.brokers,
        seed=args.seed,
        examples=args.examples,
        select=select,
        out_dir=args.out,
        mask_file=args.mask,
        timeout=args.timeout,
        models=args.models or bool(args.model),
        model_tests=tuple(args.model) if args.model else None,
    )
    try:
        result = run_diff(opts)
    except (TargetError, MaskError) as e:
        return _error(str(e))
    for line in lines(result):
        print(line)
    print(f"written: {write(result)}")
    return 1 if result.unexplained else 0
