"""Incremental publication (issue 41, ``conformance.matrix.publish``): on a small tree of the
suite's shape and tiny runs made by a stand-in runner, a one-file change reruns exactly what
depends on it, and a partial rerun is merged with the earlier run's other features."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conformance.matrix import publish
from conformance.results.content_key import Sources, content_key, differences, run_options
from conformance.results.schema import load_run, read_manifest

FILES = {
    "conformance/__init__.py": "",
    "conformance/plugin.py": "plugin",
    "conformance/client/conn.py": "client",
    "conformance/protocol/codec.py": "codec",
    "conformance/results/recorder.py": "recorder",
    "conformance/targets/kafka.py": "kafka target",
    "conformance/strategies/draw.py": "draw",
    "conformance/matrix/job.py": "job",
    "conformance/report/html.py": "html",
    "conformance/suite/__init__.py": "",
    "conformance/suite/kit/harness.py": "harness",
    "conformance/suite/groups/shared.py": "groups helper",
    "conformance/suite/groups/test_join.py": "from conformance.suite.groups import shared\n",
    "conformance/suite/txn/test_commit.py": "from conformance.suite.groups.shared import x\n",
    "conformance/suite/kip78/test_id.py": "from conformance.suite.kit import harness\n",
    "specs/messages/Metadata.json": "{}",
    "specs/schema/result.schema.json": "{}",
    "specs/requirements/groups.json": "{}",
    "specs/requirements/txn.json": "{}",
    "specs/requirements/kip-78.json": "{}",
    "specs/models/txn-producers.json": "{}",
    "reference_impl/broker.py": "broker",
    "conformance/matrix/kafka_releases.json": json.dumps(
        {"releases": [{"release": r, "apis": [{"api_key": 3}]} for r in ("3.9.2", "4.0.2")]}
    ),
}
#: each feature's tests in the stand-in runs, and the requirement they record
TESTS = {"groups": "GROUPS.R1", "txn": "TXN.R2", "kip-78": "KIP-78.R1"}
KAFKA, REF = "kafka:4.3.1", "reference"
START = datetime(2026, 11, 28, tzinfo=UTC)


@pytest.fixture
def tree(tmp_path: Path) -> Sources:
    for name, text in FILES.items():
        p = tmp_path / "src" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    root = tmp_path / "src"
    return Sources(root / "conformance", root / "specs", root / "reference_impl")


def touch(src: Sources, name: str) -> None:
    p = src.package.parent / name
    p.write_text(p.read_text() + "\n# changed\n")


class Runner:
    """Stands in for ``kafka-conformance run``: a run of the selected features' tests (every
    feature when no selection; a selection also picks a test of another feature, as --select
    does with a test crediting a selected feature's requirement), recorded with the key of the
    tree as it is."""

    def __init__(self, src: Sources) -> None:
        self.src, self.calls, self.n = src, [], 0

    def __call__(self, target, clients, select, into: Path) -> Path:
        self.calls.append((target, select))
        self.n += 1
        chosen = set(TESTS) if select is None else set(select.split(" or "))
        ran = chosen | ({"kip-78"} if select else set())
        run_id = f"run-{self.n}"
        d = into / run_id
        d.mkdir(parents=True)
        records = [
            {
                "run_id": run_id,
                "test_id": f"{f}/check",
                "requirement_id": TESTS[f],
                "level": "MUST",
                "feature": f,
                "api_key": 3,
                "api_name": "Metadata",
                "api_version": 12,
                "listener": "client",
                "verdict": "PASS",
                "message": f"made by {run_id}",
                "duration_ms": 1.0,
                "seed": None,
            }
            for f in sorted(ran)
        ]
        (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        key = content_key(
            target,
            seed=None,
            options=run_options(
                examples=None, strict=False, clients=list(clients), spec_dir=None, select=select
            ),
            src=self.src,
            only=ran,
        )
        manifest = {
            "format_version": 1,
            "run_id": run_id,
            "started_at": (START + timedelta(minutes=self.n)).isoformat(),
            "ended_at": (START + timedelta(minutes=self.n, seconds=30)).isoformat(),
            "target_name": "t",
            "target_version": "1",
            "bootstrap": "127.0.0.1:9092",
            "api_versions": {"3": [0, 13]},
            "suite_version": "0.1.0",
            "spec_release": "3.9.0",
            "hypothesis_seed": 20261123,
            "hypothesis_profile": "p",
            "select": select,
            "not_judged": [
                {
                    "listener": "client",
                    "api_key": 3,
                    "api_name": "Metadata",
                    "versions": [12, 13] if select else [13],
                    "reason": "no selected test judged it",
                }
            ],
            "content_key": key,
        }
        (d / "manifest.json").write_text(json.dumps(manifest))
        return d


WANTED = [publish.Wanted(REF, 1), publish.Wanted(KAFKA, 2)]


def republish(src: Sources, runs: Path) -> tuple[publish.Plan, Runner]:
    runner = Runner(src)
    runner.n = 10 * len(list(runs.glob("*"))) + 100  # run ids not used before
    the_plan = publish.plan(runs, WANTED, src)
    publish.execute(the_plan, runs, runner, log=lambda line: None)
    return the_plan, runner


def first_publication(tree: Sources, tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    the_plan, runner = republish(tree, runs)
    assert [s.action for s in the_plan.steps] == ["new"] * 3
    assert runner.calls == [(REF, None), (KAFKA, None), (KAFKA, None)]
    return runs


def test_nothing_changed_reruns_nothing(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    touch(tree, "conformance/report/html.py")  # the report makes no verdict
    before = sorted(p.name for p in runs.iterdir())
    the_plan, runner = republish(tree, runs)
    assert runner.calls == []
    assert {s.action for s in the_plan.steps} == {"reuse"}
    assert sorted(p.name for p in runs.iterdir()) == before
    assert the_plan.lines() == [
        "publish: reference (1 run): reused 1 (key unchanged)",
        "publish: kafka:4.3.1 (2 runs): reused 2 (key unchanged)",
    ]


def test_a_feature_file_reruns_that_feature_only_and_merges(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    old = {read_manifest(d)["run_id"] for d in runs.iterdir()}
    touch(tree, "conformance/suite/kip78/test_id.py")
    the_plan, runner = republish(tree, runs)
    assert runner.calls == [(REF, "kip-78"), (KAFKA, "kip-78"), (KAFKA, "kip-78")]
    assert "publish: kafka:4.3.1 (2 runs): reran 2 (kip-78: files changed)" in the_plan.lines()
    dirs = list(runs.iterdir())
    assert len(dirs) == 3 and not {read_manifest(d)["run_id"] for d in dirs} & old
    for d in dirs:
        m = read_manifest(d)
        run = load_run(d)
        assert run.problems == []
        records = {r["test_id"]: r for r in run.records}
        assert set(records) == {"groups/check", "txn/check", "kip-78/check"}
        assert {r["run_id"] for r in records.values()} == {m["run_id"]}
        assert records["kip-78/check"]["message"] == f"made by {m['run_id']}"
        (entry,) = m["reused"]
        assert entry["run_id"] in old and entry["features"] == ["groups", "txn"]
        assert entry["records"] == 2
        assert records["txn/check"]["message"] == f"made by {entry['run_id']}"
        assert m["select"] is None and set(m["content_key"]["features"]) == set(TESTS)
        # Metadata v12 was judged by the reused records: only v13 is left not judged
        assert [e["versions"] for e in m["not_judged"]] == [[13]]
    # the merged runs' keys are whole again: publishing once more reuses every run
    _, runner = republish(tree, runs)
    assert runner.calls == []


def test_a_requirement_file_reruns_its_feature(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    touch(tree, "specs/requirements/txn.json")
    _, runner = republish(tree, runs)
    assert {select for _, select in runner.calls} == {"txn"} and len(runner.calls) == 3


def test_a_feature_imported_by_another_reruns_both(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    touch(tree, "conformance/suite/groups/shared.py")  # txn's tests import it
    _, runner = republish(tree, runs)
    assert {select for _, select in runner.calls} == {"groups or txn"}
    # merged twice: the second merge still names the first run for what it kept of it
    first = {read_manifest(d)["run_id"] for d in runs.iterdir()}
    touch(tree, "conformance/suite/kip78/test_id.py")
    republish(tree, runs)
    for d in runs.iterdir():
        reused = read_manifest(d)["reused"]
        assert sorted(f for e in reused for f in e["features"]) == ["groups", "txn"]
        assert {e["run_id"] for e in reused} <= first


@pytest.mark.parametrize(
    ("changed", "rerun", "why"),
    [
        ("conformance/suite/kit/harness.py", {REF, KAFKA}, "kit changed"),
        ("specs/messages/Metadata.json", {REF, KAFKA}, "kernel changed"),
        ("conformance/plugin.py", {REF, KAFKA}, "runner changed"),
        ("reference_impl/broker.py", {REF}, "reference_impl changed"),
    ],
)
def test_a_shared_file_reruns_whole_runs(
    tree: Sources, tmp_path: Path, changed: str, rerun: set[str], why: str
) -> None:
    runs = first_publication(tree, tmp_path)
    touch(tree, changed)
    the_plan, runner = republish(tree, runs)
    assert {t for t, _ in runner.calls} == rerun and {s for _, s in runner.calls} == {None}
    assert any(why in line and "reran whole" in line for line in the_plan.lines())
    assert len(list(runs.iterdir())) == 3


def test_runs_without_a_key_or_beyond_the_count_go(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    keyless = runs / "old-run"
    keyless.mkdir()
    (keyless / "manifest.json").write_text(json.dumps({"run_id": "old-run"}))
    the_plan = publish.plan(runs, [publish.Wanted(REF, 1), publish.Wanted(KAFKA, 1)], tree)
    assert sorted((s.action, s.why) for s in the_plan.steps if s.action == "remove") == [
        ("remove", "more runs than asked for"),
        ("remove", "no content key"),
    ]


def test_outages_or_other_options_rerun_whole(tree: Sources) -> None:
    new = content_key(
        REF,
        seed=None,
        options=run_options(examples=None, strict=False, clients=None, spec_dir=None, select=None),
        src=tree,
    )
    assert differences(None, new)[0] == ["no content key"]
    assert differences({**new, "seed": 7}, new)[0] == ["seed changed"]
    other = {**new, "options": {**new["options"], "clients": ["java:4.4.0", "python"]}}
    assert differences(other, new)[0] == ["option clients changed"]
    assert differences(new, new) == ([], set())


def test_an_external_targets_run_is_kept(tree: Sources, tmp_path: Path) -> None:
    """A run of a broker started by hand (reports/README.md: kfake) cannot be redone by
    publication: it stays whatever changed, where a run of a target not asked for goes."""
    runs = first_publication(tree, tmp_path)
    external = Runner(tree)(REF, (), None, tmp_path / "by-hand")
    m = read_manifest(external)
    m["content_key"]["target"] = "external:127.0.0.1:29501"
    (external / "manifest.json").write_text(json.dumps(m))
    moved = runs / "by-hand-run"
    external.rename(moved)
    touch(tree, "conformance/plugin.py")  # the runner changed: every other run is redone
    the_plan, _ = republish(tree, runs)
    assert [s.action for s in the_plan.steps if s.previous == moved] == ["keep"]
    assert moved.is_dir()
    assert (
        "publish: kept 1 run of external targets as they are (publication cannot start them "
        "again)" in the_plan.lines()
    )
    publish.remove_all_but_external(runs)  # --fresh
    assert [d.name for d in runs.iterdir()] == [moved.name]


def test_a_release_table_entry_reruns_only_the_runs_speaking_it(
    tree: Sources, tmp_path: Path
) -> None:
    """The release table is read by ``reference?release=V`` runs only: a change to 3.9.2's entry
    redoes the run speaking 3.9 (3.9.1 stands for its line's 3.9.2), no other."""
    speaks_39, speaks_40 = "reference?release=3.9.1", "reference?release=4.0.2"
    wanted = [*WANTED, publish.Wanted(speaks_39, 1), publish.Wanted(speaks_40, 1)]
    runs = tmp_path / "runs"
    publish.execute(publish.plan(runs, wanted, tree), runs, Runner(tree), log=lambda line: None)
    table = tree.package / "matrix" / "kafka_releases.json"
    data = json.loads(table.read_text())
    data["releases"][0]["apis"][0]["max"] = 13  # 3.9.2's Metadata
    table.write_text(json.dumps(data))
    the_plan = publish.plan(runs, wanted, tree)
    rerun = {s.target: s.why for s in the_plan.steps if s.action == "rerun"}
    assert rerun == {speaks_39: "release table entry changed"}
    assert {s.target for s in the_plan.steps if s.action == "reuse"} == {REF, KAFKA, speaks_40}


class Failing(Runner):
    """Records nothing for ``target`` the first ``times`` times it is run (a broker that exits at
    start under load), then as Runner."""

    def __init__(self, src: Sources, target: str, times: int) -> None:
        super().__init__(src)
        self.target, self.times = target, times

    def __call__(self, target, clients, select, into: Path) -> Path | None:
        if target == self.target and self.times > 0:
            self.times -= 1
            self.calls.append((target, select))
            return None
        return super().__call__(target, clients, select, into)


def test_a_run_that_records_nothing_is_tried_again_then_skipped(
    tree: Sources, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    once = Failing(tree, REF, 1)
    lines = publish.execute(publish.plan(runs, WANTED, tree), runs, once, log=lambda line: None)
    assert once.calls.count((REF, None)) == 2 and not (runs / publish.SKIPPED_FILE).exists()
    assert f"publish: {REF}: recorded nothing, tried once more" in lines
    touch(tree, "conformance/plugin.py")  # every run redone; the Kafka target never starts
    never = Failing(tree, KAFKA, 99)
    never.n = 100
    lines = publish.execute(publish.plan(runs, WANTED, tree), runs, never, log=lambda line: None)
    assert never.calls.count((KAFKA, None)) == 4  # two runs, each tried twice
    skipped = [line for line in lines if line.startswith(f"publish: {KAFKA}: skipped: ")]
    assert len(skipped) == 2 and "recorded nothing twice" in skipped[0]
    assert "its earlier run run-" in skipped[0]  # left as it was, and said
    listed = publish.read_skipped([runs])
    assert [k["target"] for k in listed] == [KAFKA, KAFKA]
    assert len(list(runs.glob("*/manifest.json"))) == 3  # the reference's new run, Kafka's two old


def test_runs_not_used_are_set_aside_not_deleted(tree: Sources, tmp_path: Path) -> None:
    """A target list missing a target (a mistyped command: it cost an hour of runs twice in
    session 14) moves that target's runs aside, says where, and moving them back restores them
    as they were: nothing is rerun."""
    runs = first_publication(tree, tmp_path)
    kafka_runs = sorted(
        d.name for d in runs.iterdir() if read_manifest(d)["content_key"]["target"] == KAFKA
    )
    the_plan = publish.plan(runs, [publish.Wanted(REF, 1)], tree)
    lines = publish.execute(the_plan, runs, Runner(tree), log=lambda line: None)
    aside = the_plan.aside
    assert aside is not None and aside.parent == tmp_path / "runs-set-aside"
    assert "publish: set aside 2 earlier runs (target not asked for)" in lines
    assert any(line.startswith(f"publish: the runs set aside are in {aside} ") for line in lines)
    assert sorted(d.name for d in aside.iterdir()) == kafka_runs
    assert [read_manifest(d)["content_key"]["target"] for d in runs.iterdir()] == [REF]
    for name in kafka_runs:  # the user moves them back
        (aside / name).rename(runs / name)
    the_plan, runner = republish(tree, runs)
    assert [s.action for s in the_plan.steps] == ["reuse"] * 3 and runner.calls == []


def test_prune_deletes_the_runs_not_used(tree: Sources, tmp_path: Path) -> None:
    runs = first_publication(tree, tmp_path)
    keyless = runs / "old-run"
    keyless.mkdir()
    (keyless / "manifest.json").write_text(json.dumps({"run_id": "old-run"}))
    the_plan = publish.plan(runs, [publish.Wanted(REF, 1), publish.Wanted(KAFKA, 1)], tree, True)
    lines = publish.execute(the_plan, runs, Runner(tree), log=lambda line: None)
    assert the_plan.aside is None and not (tmp_path / "runs-set-aside").exists()
    assert "publish: removed 1 earlier run (no content key)" in lines
    assert (
        f"publish: {KAFKA} (1 run): reused 1 (key unchanged), removed 1 (more runs than asked for)"
        in lines
    )
    assert len(list(runs.iterdir())) == 2


@pytest.mark.parametrize("prune", [False, True])
def test_the_command_says_what_it_would_do_with_runs_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prune: bool
) -> None:
    runs = tmp_path / "runs"
    keyless = runs / "old-run"
    keyless.mkdir(parents=True)
    (keyless / "manifest.json").write_text(json.dumps({"run_id": "old-run"}))
    argv = [str(runs), "--runs", "0", "--dry-run", *(["--prune"] if prune else []), REF]
    assert publish.main(argv) == 0
    out = capsys.readouterr().out
    gone = "removed" if prune else "set aside"
    assert f"publish: {gone} 1 earlier run (no content key)" in out
    assert ("runs-set-aside" in out) is not prune and keyless.is_dir()
