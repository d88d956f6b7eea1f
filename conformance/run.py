"""``kafka-conformance run``: the whole suite against one target, recorded and reported.

It checks the options first (a malformed address, an unknown target or an unreachable external
bootstrap is one line and exit code 2), then runs ``pytest --pyargs conformance.suite`` in this
process with the same options (pytest shows the progress), records the run under
``--results-dir`` and renders its report. Exit code: 0 when no requirement FAILed and the suite
did not break (ERROR); 1 when something did, or when nothing was checked at all; 2 when the run
could not start (bad options, a target that cannot be started or reached); 3 when the target
went down mid-run and was not brought back, so the tests after it were not evaluated (the run
is incomplete; the line saying during which test comes first in the output).
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path

from conformance.plugin import DEFAULT_SEED, parse_seed
from conformance.targets import KINDS, TargetError, TargetOptions, make_target

PROG = "kafka-conformance"
DEFAULT_RESULTS = Path("conformance-results")


class RunError(Exception):
    """The run cannot start; one line, exit code 2."""


def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the conformance suite against a target (default: the bundled reference cluster)",
        description="Run the whole conformance suite against a target, record the results "
        "(results.jsonl + manifest.json) and render the report. Exit code 0: every MUST held; "
        "1: a requirement FAILed, the suite broke, or nothing was checked; 2: the run could not "
        "start; 3: the target went down mid-run and the tests after it were not evaluated.",
    )
    p.add_argument("--target", default=None, metavar="KIND", help=f"one of: {', '.join(KINDS)}")
    p.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="H:P[,H:P]",
        help="an external target's client listener (implies --target external)",
    )
    p.add_argument("--controller-bootstrap", default=None, metavar="H:P")
    p.add_argument("--zookeeper", default=None, metavar="H:P[/chroot]")
    p.add_argument("--sasl-mechanism", default=None, metavar="M")
    p.add_argument("--sasl-username", default=None, metavar="U")
    p.add_argument("--sasl-password", default=None, metavar="P")
    p.add_argument("--target-name", default=None, metavar="NAME")
    p.add_argument("--target-version", default=None, metavar="V")
    p.add_argument("--strict", action="store_true", help="a SHOULD not met is FAIL, not NONSTRICT")
    p.add_argument(
        "--client",
        action="append",
        default=None,
        metavar="python|java:VERSION",
        help="the client KIP-42.R1-R7 judge, repeatable: python (the suite's own, the default) "
        "or a Java kafka-clients release, fetched with Maven (java:3.9.1)",
    )
    p.add_argument(
        "-k",
        "--select",
        default=None,
        metavar="EXPR",
        help="tests by id, requirement id, KIP, API or level: 'KIP-78 and MUST'",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=None,
        metavar="N|random",
        help=f"hypothesis seed (default {DEFAULT_SEED}: the same suite against the same target "
        "gives the same verdicts); 'random' draws a fresh one; the manifest records it",
    )
    p.add_argument(
        "--examples",
        type=int,
        default=None,
        metavar="N",
        help="hypothesis examples per property test",
    )
    p.add_argument("--spec-dir", default=None, metavar="DIR", help="message specs to use")
    p.add_argument(
        "--topics",
        default=None,
        metavar="NAME[,NAME|PREFIX*]",
        help="pre-created topics to write to where the target neither creates nor auto-creates "
        "the suite's own (names, or PREFIX* for every topic so named; one test each)",
    )
    p.add_argument(
        "--results-dir",
        type=Path,
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help=f"the run is recorded in DIR/<run id>/ (default: {DEFAULT_RESULTS})",
    )
    report = p.add_mutually_exclusive_group()
    report.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="where to render the report (default: <run dir>/report)",
    )
    report.add_argument("--no-report", action="store_true")
    p.add_argument("--junit-xml", type=Path, default=None, metavar="FILE")
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="one line per test instead of progress dots",
    )
    p.set_defaults(handler=run_command)


def _seed(text: str) -> int | str:
    try:
        return parse_seed(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--seed {text!r}: ")) from None


def target_options(args: argparse.Namespace) -> TargetOptions:
    return TargetOptions(
        target=args.target,
        bootstrap=args.bootstrap_server,
        controller=args.controller_bootstrap,
        zookeeper=args.zookeeper,
        sasl_mechanism=args.sasl_mechanism,
        sasl_username=args.sasl_username,
        sasl_password=args.sasl_password,
        target_name=args.target_name,
        target_version=args.target_version,
    )


def check_options(args: argparse.Namespace) -> None:
    """Everything that can be checked before starting anything; RunError says what is wrong."""
    if args.examples is not None and args.examples < 1:
        raise RunError("--examples must be at least 1")
    if args.spec_dir and not Path(args.spec_dir).is_dir():
        raise RunError(f"--spec-dir {args.spec_dir}: not a folder of message specs")
    from conformance.targets.java_client import parse_client

    for client in getattr(args, "client", None) or []:
        try:
            parse_client(client)
        except TargetError as e:
            raise RunError(str(e)) from None
    try:
        target = make_target(target_options(args))
    except TargetError as e:
        raise RunError(str(e)) from None
    try:
        target.prepare()
    except TargetError as e:
        raise RunError(str(e)) from None
    if target.kind == "external":
        for ep in [*target.bootstrap, *([target.controller] if target.controller else [])]:
            try:
                with socket.create_connection((ep.host, ep.port), timeout=5):
                    pass
            except OSError as e:
                raise RunError(f"cannot reach {ep}: {e.strerror or e}") from None


def pytest_args(args: argparse.Namespace, results: Path) -> list[str]:
    out = ["--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-r", "fE"]
    out += ["-v"] * args.verbose if args.verbose else ["-q"]
    options = {
        "--target": args.target,
        "--bootstrap-server": args.bootstrap_server,
        "--controller-bootstrap": args.controller_bootstrap,
        "--zookeeper": args.zookeeper,
        "--sasl-mechanism": args.sasl_mechanism,
        "--sasl-username": args.sasl_username,
        "--sasl-password": args.sasl_password,
        "--target-name": args.target_name,
        "--target-version": args.target_version,
        "--select": args.select,
        "--seed": args.seed,
        "--examples": args.examples,
        "--spec-dir": args.spec_dir,
        "--topics": args.topics,
        "--junit-xml": args.junit_xml,
    }
    for flag, value in options.items():
        if value is not None:
            out.append(f"{flag}={value}")
    out += [f"--client={c}" for c in getattr(args, "client", None) or []]
    out.append(f"--results-dir={results}")
    if args.strict:
        out.append("--strict")
    return out


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends the run like Ctrl-C, so the target is still stopped."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def run_command(args: argparse.Namespace) -> int:
    import pytest

    from conformance.matrix.one_run import render_run_report
    from conformance.results.schema import RunError as BadRun
    from conformance.results.summary import summarise

    try:
        check_options(args)
    except RunError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    results: Path = args.results_dir
    results.mkdir(parents=True, exist_ok=True)
    before = {p for p in results.iterdir() if p.is_dir()}
    _interrupt_on_sigterm()
    code = pytest.main(pytest_args(args, results))
    runs = sorted(p for p in results.iterdir() if p.is_dir() and p not in before)
    if code == pytest.ExitCode.USAGE_ERROR:  # pytest printed the one line (ERROR: ...)
        return 2
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(
            f"{PROG}: error: no test selected{f' by {args.select!r}' if args.select else ''}",
            file=sys.stderr,
        )
        return 1
    if code in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR) or not runs:
        print(
            f"{PROG}: error: the run did not complete (pytest exit code {int(code)})",
            file=sys.stderr,
        )
        return 1 if code != pytest.ExitCode.INTERRUPTED else 130
    run_dir = runs[-1]
    try:
        summary = summarise(run_dir)
    except BadRun as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    for line in summary.headlines():  # first: how far the verdicts can be trusted
        print(f"{PROG}: {line}")
    if not args.no_report:
        report = render_run_report(run_dir, args.report or run_dir / "report")
        print(f"report: {report}")
    print(f"results: {run_dir}")
    print(f"verdicts (one per test and requirement): {summary.line()}")
    judged_not = summary.advertised_not_judged()
    if judged_not:
        print("advertised, not judged (no verdict of this run covers these API versions):")
        for line in judged_not:
            print(f"  {line}")
    if summary.unset:
        print(
            f"{len(summary.unset)} requirements could not be set up: the target offers no way to "
            "obtain the topics they need, or no API their tests need besides the ones they judge "
            "(their SKIP messages say which; --topics names pre-created topics)"
        )
    if not summary.scored:
        print(
            f"{PROG}: error: nothing was checked (every requirement was skipped)", file=sys.stderr
        )
    return summary.exit_code()
