"""pytest plugin (entry point ``pytest11``): runs ``conformance.suite`` against a target.

    pytest --pyargs conformance.suite --bootstrap-server H:P [--strict] [--select EXPR] ...

It takes the options of ``kafka-conformance run``: one table (:data:`OPTIONS`) declares them
for both; ``run`` hands them parsed to a :class:`SuiteRun` plugin object, the pytest-only path
makes one from pytest's options. It is inert in any session that collects no
suite test (the project's own tests load it too). When suite tests are collected it validates
their requirement ids, applies ``--select``, starts the target (``--target``) and opens the
harness; a target that cannot be used is a usage error (one line). Each test's outcome becomes
one verdict per requirement (``conformance.results.verdicts``); with ``--results-dir`` they are
recorded with the run's manifest, and with ``--report`` (``run``: unless ``--no-report``)
rendered, here only.

pytest's own view follows the verdicts: FAIL and ERROR fail, NONSTRICT shows as xfail (it does
not fail the session unless ``--strict``), UNSUPPORTED / NOT_EXPOSED / PROPOSAL_ABSENT / SKIP /
NOT_EVALUATED are skips whose reason starts with the verdict.

Concurrency (``--jobs N``, ``run``'s default 'auto'): the tests run in N pytest-xdist workers
against the one target this process (xdist's controller) started; the ``disruptive`` ones run
after them in this process, one at a time, so verdicts are those of a one-process run at the same
seed (see the section "concurrency" below). ``run`` against a cluster it starts (the bundled
reference, Apache Kafka) runs them instead beside the workers, in side runs with clusters of their
own, and in this process once the workers are done (``conformance.side_runs``).

A target that goes down: tests marked ``disruptive`` (malformed input, DURABILITY's faults,
restarts) run after all the others. After a test that failed, or a disruptive one, the target is
probed (``suite.kit.liveness``); when it is down, that test keeps its verdicts (a disruptive
test's are FAIL) with messages saying the target went down during it, and the run either
restarts the target (where the suite manages it, ``Target.recover``) and goes on, or sends
nothing more: every later test is NOT_EVALUATED ("target unreachable since <test>"). The
manifest (``outages``), the terminal summary and the report say so first.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.results.content_key import narrowed
from conformance.results.policy import Phase, outcome_shown, requirement_verdicts
from conformance.results.verdicts import NotApplicable, NotEvaluated, Verdict, verdict_for
from conformance.suite.kit.credit import Ledger
from conformance.suite.kit.meta import MARKER, kebab
from conformance.targets import KINDS

#: hypothesis examples per property test of the suite (``--examples``)
DEFAULT_EXAMPLES = 5
#: the seed of every run that names none: the same suite against the same target draws the same
#: examples, so it gives the same verdicts (``--seed random`` draws a fresh one, recorded)
DEFAULT_SEED = 20261123
#: times a run restarts a target it manages after it went down, before it gives up on it
MAX_RESTARTS = 3
#: where ``run`` records its runs unless told ``--results-dir``
DEFAULT_RESULTS = Path("conformance-results")


def parse_seed(text: str) -> int | str:
    """``--seed``: a non-negative integer, or ``random`` for a fresh seed."""
    if text == "random":
        return text
    try:
        seed = int(text)
    except ValueError:
        raise ValueError(f"--seed {text!r}: an integer or 'random'") from None
    if seed < 0:
        raise ValueError(f"--seed {text!r}: an integer or 'random'")
    return seed


def run_seed(option: int | str | None) -> int:
    """The seed a run uses: the fixed default, the one given, or a fresh one for 'random'."""
    if option is None:
        return DEFAULT_SEED
    if option == "random":
        return random.SystemRandom().randrange(2**32)
    return int(option)


# --- the run's options: one table for ``kafka-conformance run`` and for pytest ------------------


def seed_option(text: str) -> int | str:
    """``--seed`` as parsed on both command lines (argparse's one-line error when malformed)."""
    try:
        return parse_seed(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--seed {text!r}: ")) from None


@dataclass(frozen=True)
class Option:
    """One option of a run, declared once: :func:`add_run_options` puts it on ``kafka-conformance
    run``'s parser, :func:`pytest_addoption` on pytest's, both under the same ``dest``."""

    flag: str
    help: str = ""
    metavar: str | None = None
    default: Any = None
    type: Any = None
    #: argparse's action ("store_true", "append", "count"), or None to store a value
    action: str | None = None
    #: flags on ``run`` only (``-k`` is pytest's own there)
    run_aliases: tuple[str, ...] = ()
    #: the default on ``run`` where it differs from pytest's (``--results-dir``: run records)
    run_default: Any = None
    #: options pytest already has under this flag (``--strict``, ``--junit-xml``, ``-v``): only
    #: ``run`` declares them; ``pytest_args`` is what ``run`` tells pytest (pytest's own options
    #: are the one thing it is told as arguments)
    pytest_own: bool = False
    pytest_args: Any = None
    #: where pytest keeps its own option (``--junit-xml``: ``xmlpath``)
    pytest_dest: str | None = None
    #: options of which at most one may be given (``--report`` / ``--no-report``)
    exclusive: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def kwargs(self, *, run: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"help": self.help, "dest": self.dest}
        default = self.run_default if run and self.run_default is not None else self.default
        if self.action is not None:
            out["action"] = self.action
        if self.action in (None, "append"):
            out["metavar"] = self.metavar
        if self.action is None and self.type is not None:
            out["type"] = self.type
        out["default"] = default
        return out


def jobs_option(text: str) -> int | str:
    """``--jobs``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError("a positive integer or 'auto'")
    return jobs


def run_jobs(option: int | str | None) -> int:
    """The processes a run uses: the number given, or for 'auto' the machine's choice."""
    if option is None:
        return 1
    if option == "auto":
        return min(4, 2 * (os.cpu_count() or 1))
    return int(option)


def _path(text: str) -> Path:
    return Path(text)


OPTIONS: tuple[Option, ...] = (
    Option(
        "--target",
        f"the target: {', '.join(KINDS)} (default: reference; external with --bootstrap-server)",
        "KIND",
    ),
    Option(
        "--bootstrap-server",
        "an external target's client listener (implies --target external)",
        "H:P[,H:P]",
    ),
    Option(
        "--controller-bootstrap",
        "the controller listener (controller tests SKIP without it)",
        "H:P",
    ),
    Option("--zookeeper", "the target's ZooKeeper (znode tests SKIP without it)", "H:P[/chroot]"),
    Option("--sasl-mechanism", "SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", "M"),
    Option("--sasl-username", "SASL user name", "U"),
    Option("--sasl-password", "SASL password", "P"),
    Option(
        "--unprivileged-username",
        "a user of the same SASL mechanism with no ACL, for the authorization requirements",
        "U",
    ),
    Option("--unprivileged-password", "that user's password", "P"),
    Option("--target-name", "the target's name in results and reports", "NAME"),
    Option("--target-version", "the target's version in results and reports", "V"),
    Option(
        "--strict",
        "a SHOULD not met is FAIL, not NONSTRICT (pytest's own --strict, which the suite reads)",
        action="store_true",
        default=False,
        pytest_own=True,
    ),
    Option(
        "--client",
        "the client KIP-42.R1-R7 judge, repeatable: python (the suite's own, the default) or a "
        "Java kafka-clients release, fetched with Maven (java:3.9.1)",
        "python|java:VERSION",
        action="append",
    ),
    Option(
        "--select",
        "tests by id, requirement id, KIP, API or level (and/or/not, parentheses): "
        "'KIP-78 and MUST'",
        "EXPR",
        run_aliases=("-k",),
    ),
    Option(
        "--seed",
        f"hypothesis seed (default {DEFAULT_SEED}: the same suite against the same target gives "
        "the same verdicts); 'random' draws a fresh one; the manifest records it",
        "N|random",
        type=seed_option,
    ),
    Option(
        "--examples",
        f"hypothesis examples per property test (default {DEFAULT_EXAMPLES})",
        "N",
        type=int,
    ),
    Option("--spec-dir", "message specs to use (default: the project's)", "DIR"),
    Option(
        "--topics",
        "pre-created topics to write to where the target neither creates nor auto-creates the "
        "suite's own (names, or PREFIX* for every topic so named; one test each)",
        "NAME[,NAME|PREFIX*]",
    ),
    Option(
        "--results-dir",
        "record the run in DIR/<run id>/ (results.jsonl, manifest.json; run's default: "
        f"{DEFAULT_RESULTS})",
        "DIR",
        type=_path,
        run_default=DEFAULT_RESULTS,
    ),
    Option(
        "--report",
        "render the run's report in DIR (run's default: <run dir>/report)",
        "DIR",
        type=_path,
        exclusive="report",
    ),
    Option(
        "--no-report",
        "render no report (what pytest does unless --report)",
        action="store_true",
        default=False,
        exclusive="report",
    ),
    Option(
        "--jobs",
        "tests run concurrently by N pytest-xdist workers against the one target, the disruptive "
        "ones (malformed frames, DURABILITY's faults, restarts) after them one by one, or, "
        "against the reference and kafka:V, beside them on clusters of their own; "
        "'auto' (run's default): min(4, 2 x CPUs); 1 (pytest's default): one process",
        "N|auto",
        type=jobs_option,
        default=1,
        run_default="auto",
    ),
    Option(
        "--junit-xml",
        "also write a JUnit XML file (pytest's own --junit-xml)",
        "FILE",
        type=_path,
        pytest_own=True,
        pytest_args=lambda v: [f"--junit-xml={v}"] if v else [],
        pytest_dest="xmlpath",
    ),
    Option(
        "--verbose",
        "one line per test instead of progress dots (pytest's own -v)",
        action="count",
        default=0,
        run_aliases=("-v",),
        pytest_own=True,
        pytest_args=lambda v: ["-v"] * v if v else ["-q"],
    ),
)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The table on ``kafka-conformance run``'s parser."""
    groups: dict[str, Any] = {}
    for o in OPTIONS:
        into: Any = parser
        if o.exclusive:
            if o.exclusive not in groups:
                groups[o.exclusive] = parser.add_mutually_exclusive_group()
            into = groups[o.exclusive]
        into.add_argument(*o.run_aliases, o.flag, **o.kwargs(run=True))


def pytest_addoption(parser: pytest.Parser) -> None:
    """The table on pytest's parser (the options pytest has itself are left to it)."""
    g = parser.getgroup("kafka-conformance", "Kafka conformance suite (conformance.suite)")
    for o in OPTIONS:
        if not o.pytest_own:
            g.addoption(o.flag, **o.kwargs(run=False))


def options_of(config: pytest.Config) -> argparse.Namespace:
    """The table's options as pytest parsed them (the pytest-only path)."""
    return argparse.Namespace(
        **{o.dest: config.getoption(o.pytest_dest or o.dest) for o in OPTIONS}
    )


def args_for_pytest(options: argparse.Namespace) -> list[str]:
    """What ``run`` tells pytest as arguments: the suite, and pytest's own options.

    ``--assert=plain``: the suite judges through ``verify`` and its few bare asserts only narrow
    types, so rewriting them buys nothing; it made every worker and side run re-parse and
    rewrite the whole ``conformance`` package (an entry-point plugin) from source, where plain
    imports read the bytecode ``./dev.sh setup`` writes."""
    out = ["--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-r", "fE", "--assert=plain"]
    for o in OPTIONS:
        if o.pytest_args is not None:
            out += o.pytest_args(getattr(options, o.dest))
    return out


def make_run_target(options: argparse.Namespace):
    """The run's target, the one place a run builds it (TargetError when the options are wrong).
    ``make_target`` is looked up when called: a project test's plugin may replace it."""
    import conformance.targets as targets

    return targets.make_target(
        targets.TargetOptions(
            target=options.target,
            bootstrap=options.bootstrap_server,
            controller=options.controller_bootstrap,
            zookeeper=options.zookeeper,
            sasl_mechanism=options.sasl_mechanism,
            sasl_username=options.sasl_username,
            sasl_password=options.sasl_password,
            unprivileged_username=options.unprivileged_username,
            unprivileged_password=options.unprivileged_password,
            target_name=options.target_name,
            target_version=options.target_version,
        )
    )


class SuiteRun:
    """One run of the suite, handed to pytest as a plugin object (``pytest.main(args,
    plugins=[SuiteRun(options)])``): the options as ``run`` parsed them, the target it prepared
    (or None: made here), whether a report is rendered unless ``--no-report``; after the session,
    :attr:`run_dir` (None when nothing was recorded) and :attr:`report` (the page rendered).
    The pytest-only path makes one from pytest's options (:func:`pytest_configure`)."""

    def __init__(
        self, options: argparse.Namespace, *, target: Any = None, report_by_default: bool = False
    ) -> None:
        self.options = options
        self.target = target
        self.report_by_default = report_by_default
        self.run_dir: Path | None = None
        self.report: Path | None = None
        #: a side run of a concurrent run: its disruptive tests only (``conformance.side_runs``)
        self.disruptive_only = False
        #: called with the session's exit status once the records and the manifest are written,
        #: before the target stops (a side run tells its controller so: ``side_runs.RECORDED``)
        self.recorded: Callable[[int], None] | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[RUN] = self
        _mirror(config, self.options)

    def report_dir(self) -> Path | None:
        if self.options.no_report or self.run_dir is None:
            return None
        if self.options.report is not None:
            return Path(self.options.report)
        return self.run_dir / "report" if self.report_by_default else None


RUN = pytest.StashKey[SuiteRun]()


def _mirror(config: pytest.Config, options: argparse.Namespace) -> None:
    """A suite module that reads an option (kip42's ``--client``) sees the run's value."""
    for o in OPTIONS:
        if not o.pytest_own:
            setattr(config.option, o.dest, getattr(options, o.dest))


def opt(config: pytest.Config, name: str) -> Any:
    """The run's option ``name`` (``dest``), whichever path started the run."""
    return getattr(config.stash[RUN].options, name)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(test_id, requirements, api): a conformance suite test "
        "(conformance.suite.kit.meta)",
    )
    given = getattr(config, "workerinput", {}).get(WORKER_INPUT)
    if given is not None:  # a worker of a concurrent run: the controller's options
        options = argparse.Namespace(**given["options"])
        config.stash[RUN] = SuiteRun(options)
        _mirror(config, options)
    elif RUN not in config.stash:  # the pytest-only path: the run is what pytest parsed
        config.stash[RUN] = SuiteRun(options_of(config))
    if opt(config, "report") is not None and opt(config, "no_report"):
        raise pytest.UsageError("--report and --no-report: one or the other")
    if not hasattr(config, "workerinput") and (problem := requirements_problem()):
        raise pytest.UsageError(problem)
    state = config.stash[STATE] = State()
    config.pluginmanager.register(_Selection(), "kafka-conformance-selection")
    if hasattr(config, "workerinput"):
        state.worker = given if given is not None else {}
        if given is not None:
            state.outage_flag = Path(given["flag"])
    elif (jobs := _jobs(config)) > 1 and not config.option.collectonly:
        _distribute(config, jobs)


def requirements_problem() -> str | None:
    """What is wrong with the requirements files, checked once before anything starts: a
    malformed file is one line, not an internal error in every process that loads it (a
    concurrent run's workers each crashed on it)."""
    from conformance.protocol.errors import SpecError
    from conformance.requirements import requirements

    try:
        requirements()
    except SpecError as e:
        return f"requirements: {e}"
    return None


def _jobs(config: pytest.Config) -> int:
    """The run's processes. Topics given with ``--topics`` are handed out one test at a time by
    one process, so such a run has one ('auto' chooses it; a number is refused)."""
    jobs = run_jobs(opt(config, "jobs"))
    if jobs > 1 and opt(config, "topics"):
        if opt(config, "jobs") != "auto":
            raise pytest.UsageError(
                f"--jobs {jobs} with --topics: the given topics are handed out to one test at "
                "a time by one process; use --jobs 1"
            )
        return 1
    return jobs


# --- state -----------------------------------------------------------------------------------


@dataclass
class TestInfo:
    __test__ = False  # not a pytest test class

    test_id: str
    requirements: tuple[str, ...]
    api: int | None
    #: may bring a target down: runs after the others (``meta.conformance``)
    disruptive: bool = False


@dataclass
class State:
    harness: Any = None
    target: Any = None
    recorder: Any = None
    seed: int | None = None
    strict: bool = False
    select: str | None = None
    spec_release: str = "3.9.0"
    phases: dict[str, list[tuple[str, Phase]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    active: bool = False
    #: each time the target went down: {test_id, reason, restarted[, restart_error]}
    outages: list[dict[str, Any]] = field(default_factory=list)
    #: (api key, version, node) -> the manifest's setup_defects entry (issue 42)
    setup_defects: dict[tuple, dict[str, Any]] = field(default_factory=dict)
    #: the test since which the target is unreachable (nothing is sent after it), or None
    unreachable_since: str | None = None
    #: in an xdist worker of a concurrent run: what the controller passed (``WORKER_INPUT``);
    #: ``{}`` in a worker started some other way (``-n``), which runs no suite test
    worker: dict[str, Any] | None = None
    #: a worker that saw the target down defers every later test to the controller
    deferring: bool = False
    #: in the controller: the first outage a worker saw, and the tests workers deferred
    worker_outage: dict[str, Any] | None = None
    deferred: set[str] = field(default_factory=set)
    #: a file whose existence tells every worker that the target went down
    outage_flag: Path | None = None
    #: the processes running tests (``--jobs``)
    jobs: int = 1
    #: a concurrent run's phases: (what, tests, seconds, beside: ran from the run's start)
    phases_timed: list[tuple[str, int, float, bool]] = field(default_factory=list)
    #: the run's content key over every feature, taken when the run opens (issue 41); the
    #: manifest keeps it narrowed to the features whose tests recorded
    content_key: dict[str, Any] | None = None
    #: a concurrent run's side runs of the disruptive tests (``conformance.side_runs.Sides``)
    sides: Any = None
    #: a concurrent run's controller: its target starting in a thread of its own (``_Opening``)
    opening: Any = None


STATE = pytest.StashKey[State]()


def info(item: pytest.Item) -> TestInfo | None:
    return item.stash.get(INFO, None)


INFO = pytest.StashKey[TestInfo]()


# --- collection --------------------------------------------------------------------------------


def _format_id(template: str, item: pytest.Item) -> str:
    params = getattr(getattr(item, "callspec", None), "params", {})
    try:
        return template.format(**{k: str(v) for k, v in params.items()})
    except (KeyError, IndexError) as e:
        raise pytest.UsageError(
            f"{item.nodeid}: test id {template!r} names unknown parameter {e}"
        ) from None


def _terms(item: pytest.Item, ti: TestInfo) -> set[str]:
    """Lower-case names a selection term may match exactly."""
    from conformance.requirements import requirements

    reqs = requirements()
    terms = {ti.test_id.lower()}
    for rid in ti.requirements:
        r = reqs[rid]
        terms |= {rid.lower(), r.feature.lower(), r.file.lower(), r.level.lower()}
        for a in r.apis:
            terms |= {a.api.lower(), kebab(a.api), f"api:{a.api.lower()}"}
    return terms


def _matcher(item: pytest.Item, ti: TestInfo):
    terms = _terms(item, ti)
    tid = ti.test_id.lower()

    def match(name: str, **kwargs: Any) -> bool:
        n = name.lower()
        if n in terms:
            return True
        if n.startswith("api:") and n[4:] in tid.split("/"):
            return True
        return n in tid.split("/") or ("/" in n and n in tid) or tid.startswith(n + "/")

    return match


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list
) -> None:
    """Before pytest's own -k/-m: give every suite test its id and requirement keywords."""
    suite = [i for i in items if i.get_closest_marker(MARKER) is not None]
    if not suite:
        return
    from conformance.requirements import requirements

    reqs = requirements()
    for item in suite:
        mark = item.get_closest_marker(MARKER)
        unknown = [r for r in mark.kwargs["requirements"] if r not in reqs]
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: unknown requirement id(s) {', '.join(unknown)}"
            )
        ti = TestInfo(
            _format_id(mark.kwargs["test_id"], item),
            mark.kwargs["requirements"],
            mark.kwargs.get("api"),
            bool(mark.kwargs.get("disruptive")),
        )
        item.stash[INFO] = ti
        item.extra_keyword_matches.update({ti.test_id, *ti.requirements})
        item.user_properties.append(("conformance_id", ti.test_id))


class _Selection:
    """Registered as a second plugin: a module cannot implement one hook twice."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list
    ) -> None:
        _select_and_open(config, items)


def _select_and_open(config: pytest.Config, items: list) -> None:
    """After pytest's own selection: apply --select, then start the target for what is left."""
    if not any(info(i) for i in items):
        return
    _by_client(config, items)
    from _pytest.mark.expression import Expression

    state = config.stash[STATE]
    expr_text = opt(config, "select")
    if expr_text:
        try:
            expr = Expression.compile(expr_text)
        except SyntaxError as e:
            raise pytest.UsageError(f"--select {expr_text!r}: {e.msg or e}") from None
        keep, drop = [], []
        for item in items:
            ti = info(item)
            (keep if ti is None or expr.evaluate(_matcher(item, ti)) else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        state.select = expr_text
        if not any(info(i) for i in items):
            return
    if state.worker is not None:
        _worker_items(config, state, items)
    if config.stash[RUN].disruptive_only:  # a side run (``conformance.side_runs``)
        keep = [i for i in items if (ti := info(i)) is not None and ti.disruptive]
        if len(keep) < len(items):
            chosen = set(map(id, keep))
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in chosen])
            items[:] = keep
        if not keep:
            return
    _disruptive_last(items)
    if config.option.collectonly or state.active or state.opening is not None:
        return  # a concurrent run's controller opens it at its start (``_Opening``)
    _open_run(config, state)


def _subject(item: pytest.Item, ti: TestInfo) -> dict | None:
    """The client a test judges (None: the broker target): tests of client-library
    requirements judge the suite's own client unless a ``client`` parameter names another."""
    from conformance.requirements import requirements
    from conformance.results.recorder import suite_version

    client = getattr(getattr(item, "callspec", None), "params", {}).get("client")
    if client is not None:  # pytest's NOTSET where no client of the kind was named
        return {
            "kind": "client",
            "implementation": getattr(client, "implementation", "unnamed"),
            "version": getattr(client, "version", None),
        }
    reqs = requirements()
    if ti.requirements and all(reqs[r].listener == "client-library" for r in ti.requirements):
        return {"kind": "client", "implementation": "python", "version": suite_version()}
    return None


def _by_client(config: pytest.Config, items: list) -> None:
    """``--client``: keep the client tests of the clients named (default: python)."""
    chosen = opt(config, "client") or ["python"]
    keep, drop = [], []
    for item in items:
        ti = info(item)
        subject = _subject(item, ti) if ti is not None else None
        name = None
        if subject is not None:
            name = subject["implementation"]
            name = name if name == "python" else f"{name}:{subject['version']}"
        (keep if name is None or name in chosen else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _disruptive_last(items: list) -> None:
    """Tests that may bring the target down run after all the others (as Autobahn orders its
    cases), each group in its collected order, so every run keeps the same order."""
    last = [i for i in items if (ti := info(i)) is not None and ti.disruptive]
    if last:
        chosen = set(map(id, last))
        items[:] = [i for i in items if id(i) not in chosen] + last


def _open_run(config: pytest.Config, state: State) -> None:
    from conformance.protocol import Codec
    from conformance.protocol.errors import SpecError
    from conformance.suite.kit.harness import Harness
    from conformance.targets import TargetError

    run = config.stash[RUN]
    spec_dir = opt(config, "spec_dir")
    try:
        codec = Codec.from_specs(spec_dir, strict=False)
    except SpecError as e:
        raise pytest.UsageError(f"--spec-dir: {e}") from None
    if spec_dir:
        state.spec_release = Path(spec_dir).resolve().name
    try:
        seed = opt(config, "seed")
        if state.worker:  # the controller's seed, drawn once ('random')
            seed = state.worker["seed"]
        if state.seed is None:  # a concurrent run's controller drew it at its start
            state.seed = run_seed(None if seed is None else parse_seed(str(seed)))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    state.strict = bool(opt(config, "strict"))
    examples = opt(config, "examples")
    results_dir = opt(config, "results_dir") if not state.worker else None
    run_id = None
    try:
        if state.worker:
            target = attached_target(_published(state.worker))
        elif state.target is not None:  # a concurrent run's controller made it at its start
            target = state.target
        else:
            target = run.target if run.target is not None else make_run_target(run.options)
        if results_dir:
            from conformance.results.recorder import new_run_id

            # the run's own folder: what the target leaves (node logs, configs) stays with it
            run_id = new_run_id(target.name)
            target.logs_dir = Path(results_dir) / run_id
        state.target = target
        target.start()
        harness = Harness(
            target,
            codec,
            examples=DEFAULT_EXAMPLES if examples is None else examples,
            seed=state.seed,
            strict=state.strict,
        )
        state.harness = harness
        if state.worker and state.outage_flag is not None:  # a concurrent run's worker
            harness.share(state.outage_flag.parent)  # what the workers learn, live
        harness.open()
        from conformance.suite.kit.provision import give

        give(harness, opt(config, "topics"))
    except TargetError as e:
        _close_run(state)
        raise pytest.UsageError(str(e)) from None
    state.active = True
    if results_dir and run_id:
        from conformance.results.recorder import Recorder

        state.recorder = Recorder(Path(results_dir) / run_id, run_id)
        run.run_dir = state.recorder.dir
        state.content_key = _content_key(config, state)
    if state.opening is None:  # else said by the controller's thread once it joins it
        _say_opened(config, state)


def _say_opened(config: pytest.Config, state: State) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not state.worker:
        jobs, target = state.jobs, state.target
        reporter.write_line(
            f"kafka-conformance: {target.describe()}; seed {state.seed}"
            f"{f'; {jobs} processes' if jobs > 1 else ''}"
            f"{'; strict' if state.strict else ''}"
        )


def _close_run(state: State) -> None:
    if state.harness is not None:
        state.harness.close()
        state.harness = None
    if state.target is not None:
        state.target.stop()


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def harness(request: pytest.FixtureRequest):
    """The run's :class:`conformance.suite.kit.harness.Harness` (target started, versions known)."""
    state = request.config.stash[STATE]
    if state.harness is None:
        raise RuntimeError("the conformance harness is not open (no suite test was collected)")
    return state.harness


# --- outcomes ----------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    ti = info(item)
    state = item.config.stash[STATE]
    if ti is None or not state.active:
        return
    report: pytest.TestReport = outcome.get_result()
    exc = call.excinfo.value if call.excinfo is not None else None
    message = "" if report.passed else _message(report, exc)
    state.phases.setdefault(item.nodeid, []).append(
        (call.when, Phase(report.outcome, exc, call.duration, message))
    )
    if call.when == "call":
        _adjust_call_report(item, ti, state, report, exc)
    if call.when == "teardown":
        _finish_test(item, ti, state, report)


def _message(report: pytest.TestReport, exc: BaseException | None) -> str:
    if isinstance(exc, NotApplicable):
        return exc.reason
    if exc is not None and not isinstance(exc, pytest.skip.Exception):
        text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, AssertionError) else str(exc)
        return " ".join(text.split())[:2000]
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return " ".join(str(report.longrepr or "").split())[-2000:]


def _requirement_verdicts(ti: TestInfo, state: State, phases: dict[str, Phase], notes: Any):
    """The policy (``conformance.results.policy``) applied to one test's phases and notes."""
    from conformance.requirements import requirements

    reqs = requirements()

    def judges(rid: str, api_key: int) -> bool:
        # a requirement that names no API is taken to judge any (nothing is downgraded)
        return not reqs[rid].apis or any(a.key == api_key for a in reqs[rid].apis)

    return requirement_verdicts(
        [(rid, reqs[rid].level) for rid in ti.requirements],
        phases,
        soft=dict(notes.soft) if notes else {},
        credits=notes.ledger if notes else Ledger(),
        strict=state.strict,
        judges=judges,
    )


def _adjust_call_report(item, ti: TestInfo, state: State, report, exc) -> None:
    """Make pytest's outcome agree with the verdicts (soft failures, NONSTRICT as xfail, a
    passed test that credited nothing as the skip its verdicts say)."""
    notes = state.harness.notes if state.harness else None
    message = _message(report, exc) if not report.passed else ""
    phases = {"setup": Phase("passed", None, 0, ""), "call": Phase(report.outcome, exc, 0, message)}
    found = _requirement_verdicts(ti, state, phases, notes)
    view = outcome_shown(found, report.passed, dict(notes.soft) if notes else {})
    if view is None:
        return
    outcome, text = view
    if outcome == "failed":
        report.outcome, report.longrepr = "failed", text
    elif outcome == "xfail":
        report.outcome = "skipped"
        report.wasxfail = f"NONSTRICT: {text or message}"[:500]
    else:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {text}"[:1000])


def _finish_test(item: pytest.Item, ti: TestInfo, state: State, report: pytest.TestReport) -> None:
    phases = state.phases.pop(item.nodeid, [])
    if state.worker is not None and item.nodeid in state.deferred:  # run by the controller
        report.kafka_conformance = {"deferred": True}  # type: ignore[attr-defined]
        if state.harness is not None:
            state.harness.end_test()
        return
    records: list[dict[str, Any]] = []
    harness = state.harness
    notes = harness.notes if harness is not None else None
    ledger = notes.ledger if notes else Ledger()
    duration_ms = round(sum(p.duration for _, p in phases) * 1000, 3)
    from conformance.requirements import requirements

    reqs = requirements()
    uses_hypothesis = hasattr(getattr(item, "obj", None), "hypothesis") or bool(
        notes and notes.seeded
    )
    found = _requirement_verdicts(ti, state, dict(phases), notes)
    outage = _went_down(ti, state, found)
    if outage is not None:
        found = _blamed(ti, state, found, outage)
    for rid, verdict, message in found:
        api_key, version, listener = (
            notes.judged(ti.api, {a.key for a in reqs[rid].apis}) if notes else (ti.api, None, None)
        )
        name = harness.api_name(api_key) if api_key is not None and harness else None
        records.append(
            {
                "test_id": ti.test_id,
                "requirement_id": rid,
                "level": reqs[rid].level,
                "feature": reqs[rid].file,
                "api_key": api_key,
                "api_name": name,
                "api_version": version,
                "verdict": verdict.value,
                "message": message or None,
                "duration_ms": duration_ms,
                "seed": state.seed if uses_hypothesis else None,
                "listener": listener or reqs[rid].listener,
                "observed": (ledger.observed[rid].record() if rid in ledger.observed else None),
                **({"subject": subject} if (subject := _subject(item, ti)) else {}),
            }
        )
    if state.worker is not None:  # the controller records them (``_Controller``)
        import json  # plain types for execnet (an ApiKey is written as its number)

        sent = {"records": json.loads(json.dumps(records))}
        if defects := _setup_defects_met(harness, ti.test_id):  # issue 42
            sent["setup_defects"] = json.loads(json.dumps(defects))
        report.kafka_conformance = sent  # type: ignore[attr-defined]
        if outage is not None:
            sent["outage"] = {"test_id": ti.test_id, "reason": outage}
            _defer_the_rest(state, ti.test_id)
    else:
        for record in records:
            _record(state, record)
        _merge_setup_defects(state, _setup_defects_met(harness, ti.test_id))
    if harness is not None:
        harness.end_test()
    if outage is not None and state.worker is None:
        _recover(item.config, ti.test_id, state, outage)


def _setup_defects_met(harness: Any, test_id: str) -> list[dict]:
    """The set-up defects (``Harness.setup_defects``, issue 42) this test's set-up met."""
    if harness is None:
        return []
    return [d.as_dict() for d in harness.setup_defects.values() if test_id in d.tests]


def _merge_setup_defects(state: State, met: list[dict]) -> None:
    """Count each test once per defect it met; the same API version and node met in several
    workers (each remembers its own) is one defect, first met where the run met it first."""
    for d in met:
        key = (d["api_key"], d["version"], d["node"])
        kept = state.setup_defects.setdefault(key, {**d, "tests": 0})
        kept["tests"] += 1


def _went_down(ti: TestInfo, state: State, found: list) -> str | None:
    """Why the target is down after this test, when it failed or was disruptive; else None."""
    if state.harness is None or state.unreachable_since is not None:
        return None
    bad = any(v in (Verdict.FAIL, Verdict.ERROR, Verdict.NONSTRICT) for _, v, _ in found)
    if not (bad or ti.disruptive):
        return None
    from conformance.suite.kit.liveness import down

    return down(state.harness)


def _blamed(ti: TestInfo, state: State, found: list, why: str) -> list:
    """The verdicts of the test during which the target went down: kept, with messages saying
    so; a disruptive test's are failures (its input brought the target down)."""
    from conformance.requirements import requirements

    reqs = requirements()
    head = f"the target went down during this test ({why})"
    out = []
    for rid, verdict, message in found:
        if ti.disruptive:
            verdict = verdict_for(
                "failed", reqs[rid].level, strict=state.strict, exc=AssertionError()
            )
        if verdict != Verdict.PASS:
            message = f"{head}: {message}" if message else head
        out.append((rid, verdict, message))
    return out


def _record(state: State, record: dict[str, Any]) -> None:
    state.counts[record["verdict"]] = state.counts.get(record["verdict"], 0) + 1
    if state.recorder is not None:
        state.recorder.add(record)


def _recover(config: pytest.Config, test_id: str, state: State, why: str) -> None:
    """Restart a target the suite manages and go on; otherwise send nothing more."""
    outage: dict[str, Any] = {"test_id": test_id, "reason": why, "restarted": False}
    state.outages.append(outage)
    target = state.target
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if target.manages_processes and len(state.outages) <= MAX_RESTARTS:
        try:
            target.recover()
            state.harness.open()
            outage["restarted"] = True
        except Exception as e:  # whatever stops the restart, the run must not go on blind
            outage["restart_error"] = f"the restart failed: {e}"
    elif target.manages_processes:
        outage["restart_error"] = f"not restarted: it had gone down {MAX_RESTARTS} times"
    if not outage["restarted"]:
        state.unreachable_since = test_id
    if reporter is not None:
        from conformance.results.summary import outage_line

        reporter.write_line(f"\nkafka-conformance: {outage_line(outage)}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[STATE]
    if info(item) is not None and state.harness is not None:
        state.harness.end_test()
        state.harness.notes.test_id = info(item).test_id  # cited by later tests' evidence
        if state.worker is not None and (
            state.deferring or (state.outage_flag is not None and state.outage_flag.exists())
        ):
            state.deferring = True
            state.deferred.add(item.nodeid)
            pytest.skip("deferred: the target went down; the controller runs this test after")
        if state.unreachable_since is not None:
            raise NotEvaluated(f"not evaluated: target unreachable since {state.unreachable_since}")


# --- concurrency (``--jobs N``): pytest-xdist workers against the controller's target ----------
#
# The controller (the process ``run`` or pytest runs in) starts the target once, at the session's
# start, in a thread of its own while xdist spawns N workers (``_Opening``); it passes them the
# run's options and seed (``pytest_configure_node``), and the target's endpoints once it is up
# (``_published``). Each worker collects the suite meanwhile, leaves the disruptive tests out,
# opens its own harness on those endpoints and runs what xdist's load scheduler gives it; a
# test's result records travel back on its teardown report and the controller records them,
# so one results.jsonl and one manifest hold the run. When xdist is done, the controller runs the
# disruptive tests itself, one by one in their collected order, with the target it manages
# (faults, restarts, recovery), as a one-process run does. A worker that finds the target down
# after a test says so on its report and creates a flag file: from then on every worker defers
# its tests (no verdict), and the controller restarts the target (or, for an external one, marks
# it unreachable) and runs the deferred tests before the disruptive ones.
# What a worker's harness learns of requests the target leaves unanswered it shares with the other
# workers while they run, through files in the run's flags folder (``Harness.share``): a silence
# one worker waited for in full the others wait for briefly or not at all, as one process would.

#: the key of the controller's input in each worker's ``workerinput``
WORKER_INPUT = "kafka_conformance"


def _distribute(config: pytest.Config, jobs: int) -> None:
    """Make this session xdist's controller with ``jobs`` workers (xdist's own ``-n``)."""
    if not config.pluginmanager.hasplugin("xdist"):
        raise pytest.UsageError("--jobs N needs pytest-xdist (pip install pytest-xdist)")
    config.option.dist = "load"
    # one test at a time to the first worker free, in the workers' ``durations.dispatch_order``
    config.option.maxschedchunk = 1
    config.option.numprocesses = jobs
    config.option.tx = ["popen"] * jobs
    config.stash[STATE].jobs = jobs
    config.pluginmanager.register(_Controller(config), "kafka-conformance-controller")


def target_facts(t: Any) -> dict[str, Any]:
    """What a worker needs of the controller's target, in types execnet carries."""

    def ep(e: Any) -> list | None:
        return None if e is None else [e.host, e.port]

    return {
        "kind": t.kind,
        "name": t.name,
        "version": t.version,
        "bootstrap": [ep(e) for e in t.bootstrap],
        "controller": ep(t.controller),
        "controllers": [ep(e) for e in t.controllers],
        "zookeeper": t.zookeeper,
        "sasl": None if t.sasl is None else [t.sasl.mechanism, t.sasl.username, t.sasl.password],
        "unprivileged": None
        if t.unprivileged is None
        else [t.unprivileged.mechanism, t.unprivileged.username, t.unprivileged.password],
        "client_listener_types": list(t.client_listener_types),
        "controller_client": ep(t.controller_client),
        "started": {str(k): list(v) for k, v in t.started.items()},
        "given": sorted(t.given),
    }


def attached_target(facts: dict[str, Any]) -> Any:
    """A worker's view of the controller's target: its endpoints and facts, nothing to start,
    stop or restart (no ``restartable`` brokers: tests that restart one are disruptive)."""
    from conformance.targets.base import Endpoint, Sasl, Target

    def ep(e: list | None) -> Endpoint | None:
        return None if e is None else Endpoint(e[0], int(e[1]))

    return Target(
        kind=facts["kind"],
        name=facts["name"],
        version=facts["version"],
        bootstrap=[Endpoint(h, int(p)) for h, p in facts["bootstrap"]],
        controller=ep(facts["controller"]),
        controllers=[Endpoint(h, int(p)) for h, p in facts["controllers"]],
        zookeeper=facts["zookeeper"],
        sasl=None if facts["sasl"] is None else Sasl(*facts["sasl"]),
        unprivileged=None if facts["unprivileged"] is None else Sasl(*facts["unprivileged"]),
        client_listener_types=tuple(facts["client_listener_types"]),
        controller_client=ep(facts["controller_client"]),
        started={int(k): (v[0], v[1]) for k, v in facts["started"].items()},
        given=frozenset(facts["given"]),
    )


def _worker_items(config: pytest.Config, state: State, items: list) -> None:
    """A worker runs the suite's tests that cannot disturb the others, the controller the rest;
    xdist hands them out one at a time in ``durations.dispatch_order`` (long ones early)."""
    if not state.worker:
        raise pytest.UsageError(
            "run the conformance suite concurrently with --jobs N (its controller starts the "
            "target once for every worker), not with pytest-xdist's -n"
        )
    drop = [i for i in items if (ti := info(i)) is not None and ti.disruptive]
    if drop:
        chosen = set(map(id, drop))
        items[:] = [i for i in items if id(i) not in chosen]
    if state.worker.get("jobs"):  # the same order in every worker: xdist hands out positions
        from conformance.durations import dispatch_order

        ids = [ti.test_id if (ti := info(i)) is not None else i.nodeid for i in items]
        order = dispatch_order(ids, state.worker["kind"], state.worker["jobs"])
        items[:] = [items[n] for n in order]


def _defer_the_rest(state: State, test_id: str) -> None:
    state.deferring = True
    if state.outage_flag is not None:
        try:
            with state.outage_flag.open("x", encoding="utf-8") as f:
                f.write(test_id)
        except FileExistsError:
            pass


class _Controller:
    """The hooks of a concurrent run's controller (registered by :func:`_distribute`)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: the tests the workers finished
        self.finished = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The side runs spawned, then the target started in a thread of its own
        (``_Opening``) while xdist spawns the workers after this hook: they import and collect
        the suite meanwhile, then wait for its endpoints (``_published``)."""
        import tempfile

        from conformance import side_runs
        from conformance.targets import TargetError

        config, state = session.config, session.config.stash[STATE]
        run = config.stash[RUN]
        try:
            state.seed = run_seed(opt(config, "seed"))  # drawn once ('random') for every process
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        # ``run``'s runs only (it gives the target): a pytest session's ``-p`` plugins (a
        # project test's faulty target) would not be in the side runs; nor with --junit-xml,
        # which would not list the sides' tests
        if (
            run.target is not None
            and not opt(config, "junit_xml")
            and side_runs.beside(run.target, state.jobs)
        ):  # spawned first: their start overlaps the target's
            sides = side_runs.sides_for(state.jobs, run.target.kind)
            state.sides = side_runs.start(_given_options(config), state.seed, sides)
        try:
            state.target = run.target if run.target is not None else make_run_target(run.options)
        except TargetError as e:
            raise pytest.UsageError(str(e)) from None
        flags = Path(tempfile.mkdtemp(prefix="kafka-conformance-"))
        state.outage_flag = flags / "target-down"
        state.opening = _Opening(config, state, flags)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        import shutil

        state = config.stash[STATE]
        if state.opening is not None:  # a run that ended before it joined the thread
            state.opening.settle()
            state.opening.release()
        if state.outage_flag is not None:
            shutil.rmtree(state.outage_flag.parent, ignore_errors=True)
        if (sides := state.sides) is not None:
            sides.close()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker that finished is let go at once: its process ends beside the disruptive
        tests and the side runs, not at the session's end, where xdist waits for every worker
        to exit (0.8 s quiet, 2 s loaded, in the run's tail). What it learned of the target's
        unanswered requests becomes the controller's, which runs the disruptive tests after the
        workers against the same nodes (``Harness.learn``): a silence is waited for once."""
        known = (getattr(node, "workeroutput", None) or {}).get("harness")
        state = self.config.stash[STATE]
        if known and state.harness is not None:
            state.harness.learn(known)
        if error is None:
            node.gateway.exit()

    def pytest_configure_node(self, node: Any) -> None:
        config = node.config
        state = config.stash[STATE]
        node.workerinput[WORKER_INPUT] = {
            "options": _given_options(config),
            "kind": state.target.kind,  # its endpoints: ``_published`` once it is up
            "seed": state.seed,
            "flag": str(state.outage_flag),
            "jobs": state.jobs,
            "controller": os.getpid(),
        }

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A worker's test: its records, and whether it saw the target down or deferred."""
        sent = getattr(report, "kafka_conformance", None)
        if not sent:
            return
        state = self.config.stash[STATE]
        self.finished += not sent.get("deferred")
        for record in sent.get("records", ()):
            _record(state, record)
        _merge_setup_defects(state, sent.get("setup_defects", ()))
        if sent.get("outage") and state.worker_outage is None:
            state.worker_outage = sent["outage"]
        if sent.get("deferred"):
            state.deferred.add(report.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        state = self.config.stash[STATE]
        try:
            state.opening.wait()  # the target is up (or what stopped it is raised here)
        except BaseException:
            _stop_workers(self.config)
            raise
        _say_opened(self.config, state)
        if self.config.stash[RUN].report_dir() is not None:
            _import_beside("conformance.matrix.one_run", "conformance.report.plots")
        started = time.monotonic()
        result = yield  # xdist's workers ran every test that cannot disturb the others
        state = self.config.stash[STATE]
        state.phases_timed.append(
            (f"{state.jobs} processes", self.finished, time.monotonic() - started, False)
        )
        _the_rest(session)
        return result


#: in the run's flags folder: the controller's target's facts (``target_facts``) once it is up,
#: or the file saying it did not start; its workers wait for either (``_published``)
TARGET_FACTS = "target.json"
TARGET_FAILED = "target-failed"
#: how long a worker waits for the controller's target at most (its start has bounds of its
#: own; this is the last resort)
TARGET_WAIT_S = 900.0


class _Opening:
    """A concurrent run's target started in a thread of its own while xdist spawns the workers
    (each ~0.4 s, one after another) and they import and collect the suite (~2 s on two
    cores): on the reference the workers used to start only once the cluster listened, on
    Kafka after its ~8 s start. Its facts are then published in the run's flags folder
    (``TARGET_FACTS``, else ``TARGET_FAILED``), where the workers wait for them.
    The thread lives until the target is closed (``release``): Kafka's JVMs die with the
    thread that started them (``PR_SET_PDEATHSIG`` is per thread)."""

    def __init__(self, config: pytest.Config, state: State, flags: Path) -> None:
        import threading

        self.error: BaseException | None = None
        self.done = threading.Event()
        self.closed = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(config, state, flags), name="kafka-conformance-target"
        )
        self.thread.daemon = True
        self.thread.start()

    def _run(self, config: pytest.Config, state: State, flags: Path) -> None:
        import json

        try:
            _open_run(config, state)
            _publish(flags / TARGET_FACTS, json.dumps(target_facts(state.target)))
        except BaseException as e:  # raised again in the controller's thread (``wait``)
            self.error = e
            _publish(flags / TARGET_FAILED, f"{type(e).__name__}: {e}")
        finally:
            self.done.set()
        self.closed.wait()

    def wait(self) -> None:
        """Until the target is up; what stopped it is raised here."""
        self.done.wait()
        if self.error is not None:
            raise self.error

    def settle(self) -> None:
        """Until the thread is done opening, whatever came of it (bounded by the target's
        start)."""
        self.done.wait()

    def release(self) -> None:
        self.closed.set()


def _import_beside(*modules: str) -> None:
    """The report's modules imported in a thread while the workers run (matplotlib: ~0.35
    CPU-s), not on the run's tail where the report renders; the controller's own thread imports
    nothing meanwhile. A failure is left to the import the report makes."""
    import importlib
    import threading

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:
                return

    threading.Thread(target=load, name="kafka-conformance-imports", daemon=True).start()


def _stop_workers(config: pytest.Config) -> None:
    """The workers of a run whose target did not start have nothing to finish: stopped now
    (xdist's session end gives each 10 s to exit; one still importing the suite takes seconds)."""
    nodes = getattr(config.pluginmanager.getplugin("dsession"), "nodemanager", None)
    if nodes is not None:
        nodes.group.terminate(timeout=0.5)


def _publish(path: Path, text: str) -> None:
    """Written whole or not at all (renamed into place)."""
    part = path.with_name(f"{path.name}.part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def _published(worker: dict[str, Any]) -> dict[str, Any]:
    """In a worker: the controller's target's facts once it is up (it starts while the workers
    import and collect); a usage error when it did not start or the controller is gone."""
    import json

    folder = Path(worker["flag"]).parent
    deadline = time.monotonic() + TARGET_WAIT_S
    while True:
        try:
            return json.loads((folder / TARGET_FACTS).read_text(encoding="utf-8"))
        except FileNotFoundError:
            pass
        if (folder / TARGET_FAILED).exists():
            raise pytest.UsageError("the run's target did not start (the controller says why)")
        if os.getppid() != worker["controller"] or time.monotonic() > deadline:
            raise pytest.UsageError("the run's controller is gone or its target never started")
        time.sleep(0.02)


def _given_options(config: pytest.Config) -> dict[str, Any]:
    """The run's options in types execnet and JSON carry (for workers and side runs)."""
    run = config.stash[RUN]
    return {
        o.dest: str(v) if isinstance(v := getattr(run.options, o.dest), Path) else v
        for o in OPTIONS
    }


def _the_rest(session: pytest.Session) -> None:
    """In the controller, after the workers: the target restarted if a worker saw it down, the
    deferred tests, then, with side runs, the disruptive tests this process claims before a side
    does (on its own target, now free), the side runs' records taken, and the disruptive tests
    nobody recorded, one by one, in their collected order."""
    from conformance.side_runs import claimed, in_turn

    config = session.config
    state = config.stash[STATE]
    if state.worker_outage is not None:
        _recover(config, state.worker_outage["test_id"], state, state.worker_outage["reason"])
    if state.outage_flag is not None:
        import shutil

        shutil.rmtree(state.outage_flag.parent, ignore_errors=True)
    started = time.monotonic()
    items = _collect_the_rest(session, state)
    ran = in_turn(session, [i for i in items if i.nodeid in state.deferred])
    disruptive = [i for i in items if (ti := info(i)) is not None and ti.disruptive]
    if state.sides is not None and disruptive:
        ran += in_turn(
            session,
            claimed(
                state.sides.claims,
                disruptive,
                lambda: state.unreachable_since is None,
                state.target.kind,
            ),
        )
        took = time.monotonic() - started
        if ran:  # none when the sides were done first
            state.phases_timed.append(("this process beside the side runs", len(ran), took, False))
    sided = _sides_done(session, state)
    done = {info(i).test_id for i in ran} | (sided[0] if sided is not None else set())
    here = time.monotonic() if sided is not None else started
    rest = in_turn(session, [i for i in disruptive if info(i).test_id not in done])
    if sided is None or rest:
        count = len(rest) + (len(ran) if sided is None else 0)
        state.phases_timed.append(
            ("this process, one at a time", count, time.monotonic() - here, False)
        )


def _collect_the_rest(session: pytest.Session, state: State) -> list[pytest.Item]:
    """The controller's own collection, after the workers: the tests they deferred and the
    disruptive ones. With side runs and nothing deferred, only the modules of the disruptive
    tests, as a side collected them (``side_runs.noted``; the whole suite took 0.3 s quiet and
    2-3 s loaded on the run's tail), when that gives the same disruptive tests in the same
    order; else the whole suite."""
    from conformance.side_runs import noted

    workers = session.testscollected  # xdist's: what the workers collected
    seen = noted(state.sides.claims) if state.sides is not None and not state.deferred else None
    if seen is not None:
        paths, ids = seen
        items = list(session.perform_collect(paths)) if paths else []
        if [ti.test_id for i in items if (ti := info(i)) is not None and ti.disruptive] == ids:
            session.testscollected = workers + len(ids)  # as the whole suite's collection
            return items
    return list(session.perform_collect())


def _sides_done(session: pytest.Session, state: State) -> tuple[set[str], bool] | None:
    """A run with side runs (``conformance.side_runs``): wait for them, take their records,
    outages and set-up defects into the run. The tests they recorded, and whether every side
    completed (else the controller runs the disruptive tests not recorded); None: no sides."""
    sides = state.sides
    if sides is None:
        return None
    started = time.monotonic()
    sides.finish()
    failed: set[str] = set()
    done: set[str] = set()
    for record in sides.merged():
        _record(state, record)
        done.add(record["test_id"])
        if record["verdict"] in ("FAIL", "ERROR"):
            failed.add(record["test_id"])
    session.testsfailed += len(failed)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    from conformance.side_runs import log_tail

    for side in sides.runs:
        state.outages += side.manifest.get("outages", [])
        for d in side.manifest.get("setup_defects", []):
            key = (d["api_key"], d["version"], d["node"])
            kept = state.setup_defects.setdefault(key, {**d, "tests": 0})
            kept["tests"] += d["tests"]
        side.keep = side.records is None or bool(failed)  # its cluster's logs for the reader
        if reporter is not None and side.keep:
            reporter.write_line(
                f"\nkafka-conformance: side run {side.index} (exit {side.exit_code}"
                f"{'' if side.records is not None else ', what it claimed runs here'}; "
                f"its folder: {side.folder}):\n" + log_tail(side)
            )
    waited = f"waited for {time.monotonic() - started:.1f} s at the end"
    what = f"{len(sides.runs)} side runs beside them, from their spawn ({waited})"
    state.phases_timed.append((what, len(done), max(s.took() for s in sides.runs), True))
    return done, all(s.records is not None for s in sides.runs)


# --- the end -----------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.counts:
        return
    order = [v.value for v in Verdict]
    parts = [f"{state.counts[v]} {v}" for v in order if state.counts.get(v)]
    # pytest's own line counts tests; these count result records (test x requirement)
    terminalreporter.write_sep("=", "conformance verdicts, one per test and requirement")
    from conformance.results.summary import outage_line, phase_line, setup_defect_line

    for outage in state.outages:  # first: it says how far the verdicts below can be trusted
        terminalreporter.write_line(outage_line(outage), red=True, bold=True)
    for defect in state.setup_defects.values():  # beside them: one finding each (issue 42)
        terminalreporter.write_line(setup_defect_line(defect), red=True)
    terminalreporter.write_line(", ".join(parts))
    if state.phases_timed:
        terminalreporter.write_line(phase_line(state.phases_timed))
    if state.recorder is not None:
        terminalreporter.write_line(f"results: {state.recorder.dir}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[STATE]
    if state.opening is not None:  # interrupted while the target started: it is stopped here
        state.opening.settle()
    if not state.active:
        return
    if state.worker is not None and state.harness is not None:  # for the controller's harness
        # (xdist's worker sends its output after every plain sessionfinish hook)
        session.config.workeroutput["harness"] = state.harness.knowledge()
    stopping: Callable[[], None] | None = None
    try:
        if state.recorder is not None and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            # a concurrent run's controller opened the run before the workers' selection came
            # out empty: nothing ran, nothing is recorded (as a one-process run, which does not
            # open it)
            import shutil

            state.recorder._out.close()
            shutil.rmtree(state.recorder.dir, ignore_errors=True)
            session.config.stash[RUN].run_dir = state.recorder = None
        if state.recorder is not None:
            _write_manifest(session.config, state)
            run = session.config.stash[RUN]
            if run.recorded is not None:
                run.recorded(int(exitstatus))
            report_dir = run.report_dir()
            if report_dir is not None:  # the one place a run's report is rendered
                from conformance.matrix.one_run import render_run_report

                stopping = _close_beside(state)  # the report needs the records only
                run.report = render_run_report(state.recorder.dir, report_dir)
    finally:
        if stopping is None:
            _close_run(state)
        else:
            stopping()
        state.active = False
        if state.opening is not None:
            state.opening.release()


def _close_beside(state: State) -> Callable[[], None]:
    """``_close_run`` in a thread of its own (a cluster's stop mostly waits for its processes:
    its brokers' controlled shutdown), so that the report renders meanwhile; the function
    returned waits for it and raises what it raised."""
    import threading

    raised: list[BaseException] = []

    def close() -> None:
        try:
            _close_run(state)
        except BaseException as e:  # raised again in the caller's thread
            raised.append(e)

    thread = threading.Thread(target=close, name="kafka-conformance-stop")
    thread.start()

    def wait() -> None:
        thread.join()
        if raised:
            raise raised[0]

    return wait


def _write_manifest(config: pytest.Config, state: State) -> None:
    from conformance.results.recorder import fingerprint, suite_version

    # deferred: hypothesis imported while pytest loads its plugins could not be assert-rewritten
    # (a warning in every run)
    from conformance.suite.kit import profile

    t, h = state.target, state.harness
    state.recorder.finish(
        target_name=t.name,
        target_version=t.version or "unknown",
        target_kind=t.kind,
        bootstrap=",".join(map(str, t.bootstrap)),
        controller_bootstrap=str(t.controller) if t.controller else None,
        api_versions=fingerprint(h.advertised),
        controller_api_versions=fingerprint(h.controller_advertised),
        suite_version=suite_version(),
        spec_release=state.spec_release,
        hypothesis_seed=state.seed,
        hypothesis_profile=f"{profile.PROFILE}(max_examples={h.examples})",
        strict=state.strict,
        select=state.select,
        **({"outages": state.outages} if state.outages else {}),
        **({"setup_defects": list(state.setup_defects.values())} if state.setup_defects else {}),
        not_judged=_not_judged(h, state.recorder.judged),
        **(
            {"content_key": narrowed(state.content_key, state.recorder.features)}
            if state.content_key
            else {}
        ),
    )


def _content_key(config: pytest.Config, state: State) -> dict[str, Any]:
    """What the run's verdicts depend on (``conformance.results.content_key``): the target as
    asked for, the seed as given (the drawn one for 'random'), the options that change what is
    sent or judged, and the digests of the files the run loads."""
    from conformance.results.content_key import content_key, run_options

    seed = opt(config, "seed")
    target = opt(config, "target") or (
        f"external:{opt(config, 'bootstrap_server')}"
        if opt(config, "bootstrap_server")
        else "reference"
    )
    return content_key(
        target,
        seed=state.seed if seed == "random" else seed,
        options=run_options(
            examples=opt(config, "examples"),
            strict=state.strict,
            clients=opt(config, "client"),
            spec_dir=opt(config, "spec_dir"),
            select=opt(config, "select"),
        ),
    )


def _not_judged(h: Any, judged: set[tuple[str, int, int]]) -> list[dict]:
    """The API versions the target advertises that no spec in use defines, or no record of the
    run judged (``conformance.results.advertised``): the run says what it could not judge."""
    from conformance.results.advertised import not_judged

    listeners = {"client": h.advertised}
    if h.controller_advertised is not None:
        listeners["controller"] = h.controller_advertised
    specs = {
        m.api_key: (m.name.removesuffix("Request"), m.valid_versions)
        for m in h.codec.specs
        if m.type == "request" and m.api_key is not None
    }
    return not_judged(listeners, specs, judged)
