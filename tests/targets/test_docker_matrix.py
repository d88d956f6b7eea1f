"""Several tags of one image become versions of one implementation in the matrix: README's loop
(one run per tag) over tags of the tansu image built here, and the matrix's columns of those runs
(the job's own column function; the Spark job itself is tested in tests/matrix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.matrix.model import ranked_targets
from conformance.results.schema import find_runs, load_run
from tests.support.runs import run_cli
from tests.targets.conftest import TANSU_REPOSITORY

#: in the order a maker would release them, given out of order
TAGS = ("1.1", "1.0", "2.0")


def test_tags_given_out_of_order_rank_in_release_order() -> None:
    """The ranking the loop below relies on, without docker (CI runs this one)."""
    manifests = [
        {"target_name": "tansu", "target_version": tag, "started_at": f"2026-11-28T10:0{i}:00Z"}
        for i, tag in enumerate(TAGS)
    ]
    assert ranked_targets(manifests) == [
        ("tansu", "1.0", 0),
        ("tansu", "1.1", 1),
        ("tansu", "2.0", 2),
    ]


#: three runs of an image started and stopped (about 28 s in CI): run by reports/publish.sh, not
#: CI (issue 36); the docker target kind stays in CI (test_docker, test_built_images' reference)
@pytest.mark.publication
def test_each_tag_is_a_column_of_one_implementation(tansu_image, engine, tmp_path: Path) -> None:
    image, _ = tansu_image
    runs = tmp_path / "runs"
    try:
        for tag in TAGS:
            engine.images.get(image).tag(TANSU_REPOSITORY, tag)
            proc = run_cli(
                "--target", f"docker:{TANSU_REPOSITORY}:{tag}", "--seed", "1", "-k", "KIP-78.R3",
                "--results-dir", str(runs), "--no-report", cwd=tmp_path, timeout=120,
            )  # fmt: skip
            assert proc.returncode in (0, 1), proc.stderr[-2000:]
    finally:
        for tag in TAGS:
            engine.images.remove(f"{TANSU_REPOSITORY}:{tag}")
    manifests = [load_run(d).manifest for d in find_runs([runs])]
    assert sorted(m["target_version"] for m in manifests) == sorted(TAGS)
    assert {(m["target_name"], m["target_kind"]) for m in manifests} == {("tansu", "docker")}
    assert ranked_targets(manifests) == [
        ("tansu", "1.0", 0),
        ("tansu", "1.1", 1),
        ("tansu", "2.0", 2),
    ]
