"""pytest plugin (entry point ``pytest11``): runs ``conformance.suite`` against a target.

    pytest --pyargs conformance.suite --bootstrap-server H:P [--strict] [--select EXPR] ...

It takes the options of ``kafka-conformance run``. It is inert in any session that collects no
suite test (the project's own tests load it too). When suite tests are collected it validates
their requirement ids, applies ``--select``, starts the target (``--target``) and opens the
harness; a target that cannot be used is a usage error (one line). Each test's outcome becomes
one verdict per requirement (``conformance.results.verdicts``); with ``--results-dir`` they are
recorded with the run's manifest, and with ``--report`` rendered.

pytest's own view follows the verdicts: FAIL and ERROR fail, NONSTRICT shows as xfail (it does
not fail the session unless ``--strict``), UNSUPPORTED / NOT_EXPOSED / PROPOSAL_ABSENT / SKIP /
NOT_EVALUATED are skips whose reason starts with the verdict.

A target that goes down: tests marked ``disruptive`` (malformed input) run after all the others.
After a test that failed, or a disruptive one, the target is probed (``suite.liveness``); when it
is down, that test keeps its verdicts (a disruptive test's are FAIL) with messages saying the
target went down during it, and the run either restarts the target (where the suite manages it,
``Target.recover``) and goes on, or sends nothing more: every later test is NOT_EVALUATED
("target unreachable since <test>"). The manifest (``outages``), the terminal summary and the
report say so first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.results.policy import Phase, outcome_shown, requirement_verdicts
from conformance.results.verdicts import NotApplicable, NotEvaluated, Verdict, verdict_for
from conformance.suite.credit import Ledger
from conformance.suite.meta import MARKER, kebab

#: hypothesis examples per property test of the suite (``--examples``)
DEFAULT_EXAMPLES = 5
#: the seed of every run that names none: the same suite against the same target draws the same
#: examples, so it gives the same verdicts (``--seed random`` draws a fresh one, recorded)
DEFAULT_SEED = 20261123
#: times a run restarts a target it manages after it went down, before it gives up on it
MAX_RESTARTS = 3


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


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kafka-conformance", "Kafka conformance suite (conformance.suite)")
    g.addoption(
        "--target",
        default=None,
        metavar="KIND",
        help="reference (default), reference:zookeeper, tansu, external, docker:IMAGE",
    )
    g.addoption(
        "--bootstrap-server",
        default=None,
        metavar="H:P[,H:P]",
        help="an external target's client listener",
    )
    g.addoption(
        "--controller-bootstrap",
        default=None,
        metavar="H:P",
        help="the controller listener (controller tests SKIP without it)",
    )
    g.addoption(
        "--zookeeper",
        default=None,
        metavar="H:P[/chroot]",
        help="the target's ZooKeeper (znode tests SKIP without it)",
    )
    g.addoption("--sasl-mechanism", default=None, metavar="M")
    g.addoption("--sasl-username", default=None, metavar="U")
    g.addoption("--sasl-password", default=None, metavar="P")
    g.addoption("--target-name", default=None, metavar="NAME", help="name in results/reports")
    g.addoption("--target-version", default=None, metavar="V", help="version in results/reports")
    # --strict is pytest's own flag (strict markers and config); the suite reads it too: a
    # SHOULD requirement not met is then FAIL instead of NONSTRICT.
    g.addoption(
        "--select",
        default=None,
        metavar="EXPR",
        help="run tests whose id, requirement id, KIP, API or level matches "
        "(and/or/not, parentheses), e.g. 'KIP-78 and MUST'",
    )
    g.addoption(
        "--seed",
        default=None,
        metavar="N|random",
        help=f"hypothesis seed (default {DEFAULT_SEED}: runs are deterministic; 'random' for a "
        "fresh one); recorded in the manifest, it reproduces a run",
    )
    g.addoption(
        "--examples",
        default=DEFAULT_EXAMPLES,
        type=int,
        metavar="N",
        help=f"hypothesis examples per property test (default {DEFAULT_EXAMPLES})",
    )
    g.addoption(
        "--spec-dir",
        default=None,
        metavar="DIR",
        help="message specs to use (default: the project's, Kafka 3.9)",
    )
    g.addoption(
        "--results-dir",
        default=None,
        metavar="DIR",
        help="record the run in DIR/<run id>/ (results.jsonl and manifest.json)",
    )
    g.addoption("--report", default=None, metavar="DIR", help="render the run's report here")
    g.addoption(
        "--client",
        action="append",
        default=None,
        metavar="python|java:VERSION",
        help="the client KIP-42's client requirements judge (repeatable; default: python, the "
        "suite's own)",
    )
    g.addoption(
        "--topics",
        default=None,
        metavar="NAME[,NAME|PREFIX*]",
        help="pre-created topics the suite may write to where it can neither create nor "
        "auto-create its own: names, or PREFIX* for every topic so named (one test each)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(test_id, requirements, api): a conformance suite test (conformance.suite.meta)",
    )
    config.stash[STATE] = State()
    config.pluginmanager.register(_Selection(), "kafka-conformance-selection")


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
    #: the test since which the target is unreachable (nothing is sent after it), or None
    unreachable_since: str | None = None


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
    expr_text = config.getoption("select")
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
    _disruptive_last(items)
    if config.option.collectonly:
        return
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
    chosen = config.getoption("client") or ["python"]
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
    from conformance.suite.harness import Harness
    from conformance.targets import TargetError, TargetOptions, make_target

    opts = TargetOptions(
        target=config.getoption("target"),
        bootstrap=config.getoption("bootstrap_server"),
        controller=config.getoption("controller_bootstrap"),
        zookeeper=config.getoption("zookeeper"),
        sasl_mechanism=config.getoption("sasl_mechanism"),
        sasl_username=config.getoption("sasl_username"),
        sasl_password=config.getoption("sasl_password"),
        target_name=config.getoption("target_name"),
        target_version=config.getoption("target_version"),
    )
    spec_dir = config.getoption("spec_dir")
    try:
        codec = Codec.from_specs(spec_dir, strict=False)
    except SpecError as e:
        raise pytest.UsageError(f"--spec-dir: {e}") from None
    if spec_dir:
        state.spec_release = Path(spec_dir).resolve().name
    try:
        state.seed = run_seed(
            None if config.getoption("seed") is None else parse_seed(str(config.getoption("seed")))
        )
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    state.strict = bool(config.getoption("strict"))
    results_dir = config.getoption("results_dir")
    run_id = None
    try:
        target = make_target(opts)
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
            examples=config.getoption("examples"),
            seed=state.seed,
            strict=state.strict,
        )
        state.harness = harness
        harness.open()
        from conformance.suite.provision import give

        give(harness, config.getoption("topics"))
    except TargetError as e:
        _close_run(state)
        raise pytest.UsageError(str(e)) from None
    state.active = True
    if results_dir and run_id:
        from conformance.results.recorder import Recorder

        state.recorder = Recorder(Path(results_dir) / run_id, run_id)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"kafka-conformance: {target.describe()}; seed {state.seed}"
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
    """The run's :class:`conformance.suite.harness.Harness` (target started, versions known)."""
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
        _finish_test(item, ti, state)


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


def _finish_test(item: pytest.Item, ti: TestInfo, state: State) -> None:
    phases = state.phases.pop(item.nodeid, [])
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
        state.counts[verdict.value] = state.counts.get(verdict.value, 0) + 1
        if state.recorder is None:
            continue
        api_key = notes.api_key if notes and notes.api_key is not None else ti.api
        version = notes.api_version if notes and notes.api_key is not None else None
        name = harness.api_name(api_key) if api_key is not None and harness else None
        state.recorder.add(
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
                "listener": (notes.listener if notes and notes.listener else reqs[rid].listener),
                "observed": (ledger.observed[rid].record() if rid in ledger.observed else None),
                **({"subject": subject} if (subject := _subject(item, ti)) else {}),
            }
        )
    if harness is not None:
        harness.end_test()
    if outage is not None:
        _recover(item.config, ti, state, outage)


def _went_down(ti: TestInfo, state: State, found: list) -> str | None:
    """Why the target is down after this test, when it failed or was disruptive; else None."""
    if state.harness is None or state.unreachable_since is not None:
        return None
    bad = any(v in (Verdict.FAIL, Verdict.ERROR, Verdict.NONSTRICT) for _, v, _ in found)
    if not (bad or ti.disruptive):
        return None
    from conformance.suite.liveness import down

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


def _recover(config: pytest.Config, ti: TestInfo, state: State, why: str) -> None:
    """Restart a target the suite manages and go on; otherwise send nothing more."""
    outage: dict[str, Any] = {"test_id": ti.test_id, "reason": why, "restarted": False}
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
        state.unreachable_since = ti.test_id
    if reporter is not None:
        from conformance.results.summary import outage_line

        reporter.write_line(f"\nkafka-conformance: {outage_line(outage)}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[STATE]
    if info(item) is not None and state.harness is not None:
        state.harness.end_test()
        state.harness.notes.test_id = info(item).test_id  # cited by later tests' evidence
        if state.unreachable_since is not None:
            raise NotEvaluated(f"not evaluated: target unreachable since {state.unreachable_since}")


# --- the end -----------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.counts:
        return
    order = [v.value for v in Verdict]
    parts = [f"{state.counts[v]} {v}" for v in order if state.counts.get(v)]
    # pytest's own line counts tests; these count result records (test x requirement)
    terminalreporter.write_sep("=", "conformance verdicts, one per test and requirement")
    from conformance.results.summary import outage_line

    for outage in state.outages:  # first: it says how far the verdicts below can be trusted
        terminalreporter.write_line(outage_line(outage), red=True, bold=True)
    terminalreporter.write_line(", ".join(parts))
    if state.recorder is not None:
        terminalreporter.write_line(f"results: {state.recorder.dir}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[STATE]
    if not state.active:
        return
    try:
        if state.recorder is not None:
            _write_manifest(session.config, state)
            report_dir = session.config.getoption("report")
            if report_dir:
                from conformance.matrix.one_run import render_run_report

                render_run_report(state.recorder.dir, Path(report_dir))
    finally:
        _close_run(state)
        state.active = False


def _write_manifest(config: pytest.Config, state: State) -> None:
    from conformance.results.recorder import fingerprint, suite_version

    # deferred: hypothesis imported while pytest loads its plugins could not be assert-rewritten
    # (a warning in every run)
    from conformance.suite import profile

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
        not_judged=_not_judged(h, state.recorder.judged),
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
