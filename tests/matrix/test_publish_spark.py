"""Publication's runs as tasks of one Spark job (issue 41, ``conformance.matrix.publish_spark``).

In CI: the batched path (every rerun first, each sent back as a tar and unpacked on the driver)
leaves the same runs folder as runs made one after the other (the stand-in runner of
test_publish, no Spark). For publication: real runs on a standalone cluster of two workers give
the same verdicts as the same runs made locally."""

from __future__ import annotations

import filecmp
import tempfile
from pathlib import Path

import pytest

from conformance.matrix import publish
from conformance.matrix.publish_spark import pack, spark_batch, unpack
from conformance.results.content_key import Sources
from conformance.results.schema import load_run
from tests.matrix.test_publish import KAFKA, WANTED, Failing, Runner, touch, tree  # noqa: F401


def batched(runner: Runner):
    """What spark_batch does, without Spark: each task run in a folder of its own, packed, and
    unpacked under the staging folder."""

    def run_all(tasks, staging: Path):
        out = []
        for i, (target, clients, select) in enumerate(tasks):
            with tempfile.TemporaryDirectory() as tmp:
                made = runner(target, clients, select, Path(tmp))
                out.append(unpack(pack(made) if made else None, staging / f"task-{i}"))
        return out

    return run_all


def publish_twice(src: Sources, runs: Path, batch) -> list[str]:
    """A first publication, then one after a feature's file changed (a partial rerun, merged)."""
    lines = []
    runner = Runner(src)
    for change in (None, "conformance/suite/kip78/test_id.py"):
        if change:
            touch(src, change)
        plan = publish.plan(runs, WANTED, src)
        lines += publish.execute(plan, runs, runner, log=lambda line: None, batch=batch(runner))
    return lines


def test_batched_runs_leave_the_runs_one_by_one_runs_leave(tree: Sources, tmp_path: Path) -> None:  # noqa: F811
    one_by_one, together = tmp_path / "one", tmp_path / "together"
    publish_twice(tree, one_by_one, lambda runner: None)
    for name in ("conformance/suite/kip78/test_id.py",):  # the same tree as the first saw
        p = tree.package.parent / name
        p.write_text(p.read_text().replace("\n# changed\n", ""))
    lines = publish_twice(tree, together, batched)
    assert sorted(p.name for p in one_by_one.iterdir()) == sorted(
        p.name for p in together.iterdir()
    )
    for run in one_by_one.iterdir():
        other = together / run.name
        cmp = filecmp.dircmp(run, other)
        assert not (cmp.diff_files or cmp.left_only or cmp.right_only), (run.name, cmp.diff_files)
    assert "publish: 3 runs together in 0 s" in lines
    assert not (tmp_path / ".together-staging").exists()


def test_a_batched_run_that_records_nothing_is_run_again_in_a_second_batch(
    tree: Sources,  # noqa: F811
    tmp_path: Path,
) -> None:
    runs, runner = tmp_path / "runs", Failing(tree, KAFKA, 1)
    the_plan = publish.plan(runs, WANTED, tree)
    lines = publish.execute(the_plan, runs, runner, log=lambda line: None, batch=batched(runner))
    assert f"publish: {KAFKA}: recorded nothing, tried once more" in lines
    assert "publish: 1 runs again in 0 s" in lines
    assert len(list(runs.glob("*/manifest.json"))) == 3 and publish.read_skipped([runs]) == []


def verdicts(run_dir: Path) -> list[tuple[str, str, str]]:
    run = load_run(run_dir)
    assert run.problems == []
    return sorted((r["test_id"], r["requirement_id"], r["verdict"]) for r in run.records)


#: a master and two workers, and four runs of the reference (two on the cluster): run by
#: reports/publish.sh, not CI (issue 36)
@pytest.mark.publication
def test_runs_on_a_standalone_cluster_equal_local_runs(tmp_path: Path) -> None:
    from tests.matrix.spark_cluster import StandaloneCluster

    # no disruptive test (a restart's timing is the machine's, not the cluster's)
    tasks = [("reference", (), "kip-78"), ("reference", (), "kip-536 and not KIP-536.R4")]
    with StandaloneCluster(tmp_path / "spark") as cluster:
        on_cluster = spark_batch(cluster.master_url)(tasks, tmp_path / "staging")
        # the tasks ran on the cluster's executors, not in a local fallback
        assert list((tmp_path / "spark").glob("work*/app-*")), "no application on any worker"
    local = [
        publish.suite_runner(echo=False)(t, c, s, tmp_path / f"local-{i}")
        for i, (t, c, s) in enumerate(tasks)
    ]
    assert all(on_cluster) and all(local)
    for remote, here in zip(on_cluster, local, strict=True):
        assert verdicts(remote) == verdicts(here)
        assert len(verdicts(remote)) > 0
