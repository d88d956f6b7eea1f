"""``kafka-conformance run``: the whole suite against one target, recorded and reported.

Its options are the plugin's table (``conformance.plugin.OPTIONS``), which gives pytest the same
ones. It checks them first (a malformed address, an unknown target or an unreachable external
bootstrap is one line and exit code 2) and prepares the target, then runs ``pytest --pyargs
conformance.suite`` in this process with the parsed options handed to the plugin object
(``SuiteRun``: pytest is told only its own options, -v and --junit-xml, as flags). The plugin
starts the target, records the run under ``--results-dir``, renders its report and says where;
``run`` prints the summary. Exit code: 0 when no requirement FAILed and the suite
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
import time
from pathlib import Path

from conformance.plugin import (
    SuiteRun,
    add_run_options,
    args_for_pytest,
    make_run_target,
    requirements_problem,
)
from conformance.targets import Target, TargetError

PROG = "kafka-conformance"


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
    add_run_options(p)  # the plugin's table: pytest gets the same options from it
    p.set_defaults(handler=run_command)


def check_options(args: argparse.Namespace) -> Target:
    """Everything that can be checked before starting anything; RunError says what is wrong.
    Returns the target, prepared (not started): the plugin starts it."""
    if problem := requirements_problem():
        raise RunError(problem)
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
        target = make_run_target(args)
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
    return target


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends the run like Ctrl-C, so the target is still stopped."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def run_command(args: argparse.Namespace) -> int:
    import pytest

    from conformance.results.schema import RunError as BadRun
    from conformance.results.summary import summarise

    try:
        target = check_options(args)
    except RunError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    started = time.monotonic()
    args.results_dir.mkdir(parents=True, exist_ok=True)
    _interrupt_on_sigterm()
    run = SuiteRun(args, target=target, report_by_default=True)
    code = pytest.main(args_for_pytest(args), plugins=[run])
    if code == pytest.ExitCode.USAGE_ERROR:  # pytest printed the one line (ERROR: ...)
        return 2
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(
            f"{PROG}: error: no test selected{f' by {args.select!r}' if args.select else ''}",
            file=sys.stderr,
        )
        return 1
    run_dir = run.run_dir
    if code in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR) or run_dir is None:
        print(
            f"{PROG}: error: the run did not complete (pytest exit code {int(code)})",
            file=sys.stderr,
        )
        return 1 if code != pytest.ExitCode.INTERRUPTED else 130
    try:
        summary = summarise(run_dir)
    except BadRun as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    for line in summary.headlines():  # first: how far the verdicts can be trusted
        print(f"{PROG}: {line}")
    if run.report is not None:  # rendered by the plugin, the one place a report is rendered
        print(f"report: {run.report}")
    print(f"results: {run_dir}")
    print(f"verdicts (one per test and requirement): {summary.line()}")
    wall = time.monotonic() - started  # the target's start, the tests and the report
    print(f"{summary.total} verdicts in {wall:.1f} s: {summary.total / wall:.1f} verdicts/s")
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
