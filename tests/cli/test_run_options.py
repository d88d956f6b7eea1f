"""One table of run options (``conformance.plugin.OPTIONS``): every option it holds reaches
``kafka-conformance run`` and pytest under the same name, with the same value, by both paths: a
pytest-only run (``pytest --pyargs conformance.suite --FLAG VALUE``) and ``run``, which hands the
options to the plugin object (``SuiteRun``) and tells pytest only pytest's own options."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from _pytest.config import _prepareconfig

from conformance import plugin
from conformance.cli import build_parser
from conformance.plugin import OPTIONS, RUN, SuiteRun, args_for_pytest, options_of

#: a value for each option that takes one (the flag's text and what the run should see)
SAMPLES: dict[str, tuple[str, Any]] = {
    "target": ("tansu", "tansu"),
    "bootstrap_server": ("127.0.0.1:9", "127.0.0.1:9"),
    "controller_bootstrap": ("127.0.0.1:8", "127.0.0.1:8"),
    "zookeeper": ("127.0.0.1:7/kc", "127.0.0.1:7/kc"),
    "sasl_mechanism": ("PLAIN", "PLAIN"),
    "sasl_username": ("u", "u"),
    "sasl_password": ("p", "p"),
    "unprivileged_username": ("alice", "alice"),
    "unprivileged_password": ("q", "q"),
    "target_name": ("n", "n"),
    "target_version": ("9.9", "9.9"),
    "client": ("java:3.9.1", ["java:3.9.1"]),
    "select": ("KIP-78 and MUST", "KIP-78 and MUST"),
    "seed": ("12", 12),
    "examples": ("3", 3),
    "spec_dir": ("/tmp/specs", "/tmp/specs"),
    "topics": ("a,b*", "a,b*"),
    "results_dir": ("/tmp/results", Path("/tmp/results")),
    "report": ("/tmp/report", Path("/tmp/report")),
    "junit_xml": ("/tmp/junit.xml", Path("/tmp/junit.xml")),
    "jobs": ("auto", "auto"),  # (a number with --topics is refused: one process hands them out)
}
#: flags without a value, and what the run should see when given once
SWITCHES: dict[str, Any] = {"strict": True, "no_report": True, "verbose": 1}


def given(o: plugin.Option) -> list[str]:
    if o.dest in SWITCHES:
        return [o.flag]
    return [f"{o.flag}={SAMPLES[o.dest][0]}"]


def expected(o: plugin.Option) -> Any:
    return SWITCHES[o.dest] if o.dest in SWITCHES else SAMPLES[o.dest][1]


def same(o: plugin.Option, seen: Any) -> bool:
    """pytest keeps its own --junit-xml as text."""
    want = expected(o)
    return seen == want or (isinstance(want, Path) and seen == str(want))


def test_every_option_has_a_sample_and_the_table_is_the_whole_run_parser() -> None:
    assert {o.dest for o in OPTIONS} == set(SAMPLES) | set(SWITCHES)
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS)
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    declared = {a.dest for a in run._actions if a.dest != "help"}
    assert declared == {o.dest for o in OPTIONS}, "an option of run declared outside the table"


def _run_args(o: plugin.Option) -> argparse.Namespace:
    return build_parser().parse_args(["run", *given(o)])


@pytest.mark.parametrize("o", OPTIONS, ids=lambda o: o.flag)
def test_each_option_reaches_run(o: plugin.Option) -> None:
    assert same(o, getattr(_run_args(o), o.dest))


def _pytest_config(args: list[str], plugins: list | None = None):
    config = _prepareconfig(["-p", "no:cacheprovider", *args], plugins)
    config._do_configure()
    return config


def test_every_option_reaches_pytest_alone() -> None:
    """The pytest-only path: every option of the table given to pytest, read back as the run's."""
    args = [a for o in OPTIONS if o.dest != "no_report" for a in given(o)]
    config = _pytest_config(args)
    try:
        seen = vars(options_of(config))
        for o in OPTIONS:
            if o.dest != "no_report":
                assert same(o, seen[o.dest]), (o.flag, seen[o.dest])
        assert config.stash[RUN].options.select == "KIP-78 and MUST"
    finally:
        config._ensure_unconfigure()
    config = _pytest_config(["--no-report"])
    try:
        assert options_of(config).no_report is True
    finally:
        config._ensure_unconfigure()


def test_every_option_reaches_pytest_from_run() -> None:
    """``run``'s path: the parsed options go to the plugin object, which is what the suite reads
    (``config.getoption`` included); pytest's own options are passed to pytest as its flags."""
    argv = [a for o in OPTIONS if o.dest != "report" for a in given(o)]
    args = build_parser().parse_args(["run", *argv])
    run = SuiteRun(args)
    config = _pytest_config(args_for_pytest(args), plugins=[run])
    try:
        assert config.stash[RUN] is run
        for o in OPTIONS:
            if o.dest == "report":
                continue
            assert same(o, plugin.opt(config, o.dest)), o.flag  # what the plugin reads
            if not o.pytest_own:  # what a suite module reads
                assert same(o, config.getoption(o.dest)), o.flag
            elif o.pytest_args is not None:  # pytest's own, told as its flag
                assert same(o, config.getoption(o.pytest_dest or o.dest)), o.flag
    finally:
        config._ensure_unconfigure()


def test_jobs_is_a_positive_number_or_the_machines_choice(monkeypatch) -> None:
    assert plugin.jobs_option("3") == 3 and plugin.jobs_option("auto") == "auto"
    for bad in ("0", "-1", "many"):
        with pytest.raises(argparse.ArgumentTypeError):
            plugin.jobs_option(bad)
    monkeypatch.setattr(plugin.os, "cpu_count", lambda: 2)
    assert plugin.run_jobs("auto") == 4 and plugin.run_jobs(1) == 1 and plugin.run_jobs(None) == 1
    monkeypatch.setattr(plugin.os, "cpu_count", lambda: 1)
    assert plugin.run_jobs("auto") == 2
    assert build_parser().parse_args(["run"]).jobs == "auto"  # run's default; pytest's is 1


def test_given_topics_make_a_one_process_run() -> None:
    """``--topics`` are handed out one test at a time by one process: 'auto' chooses one process,
    a number of them is refused."""
    with pytest.raises(pytest.UsageError, match="--jobs 2 with --topics"):
        _pytest_config(["--topics=given", "--jobs=2"])
    config = _pytest_config(["--topics=given", "--jobs=auto"])
    try:
        assert not config.pluginmanager.has_plugin("kafka-conformance-controller")
    finally:
        config._ensure_unconfigure()
    config = _pytest_config(["--jobs=2"])
    try:
        assert config.pluginmanager.has_plugin("kafka-conformance-controller")
    finally:
        config._ensure_unconfigure()
