"""``conformance.side_runs``: a concurrent run against a cluster it starts (the bundled reference,
Apache Kafka) runs its disruptive tests in side runs beside the workers, each with a cluster of
its own, the controller joining in on its own cluster once the workers are done (issue 36).

* The sides share the tests out by claims: each test is claimed by one side only, and none is
  left unclaimed; they are claimed the longest expected first on the run's target kind
  (``conformance.durations``), the others in the collected order, the claims named by the
  collected order.
* The controller takes the sides' records in the collected order (the claims'), whichever side
  ran each test, without the side's run id; a test no side recorded is left to the controller.
* The controller claims as a side does, and no more once its target is down for good.
* Only the reference and Apache Kafka (in any of their set-ups) are run so, and only with more
  than one process.

The whole suite's verdicts with side runs against a one-process run's at the same seed are
compared in benchmarks/README.md; the shared reference run (test_against_reference) goes through
them in CI.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

from conformance.durations import EXPECTED_S, longest_first
from conformance.side_runs import (
    EXIT_WITHIN_S,
    RECORDED,
    Side,
    Sides,
    beside,
    claim,
    claimed,
    note,
    noted,
    sides_for,
)


def test_each_test_is_claimed_once_in_order(tmp_path: Path) -> None:
    ids = [f"t{n}" for n in range(200)]
    got: dict[int, list[int]] = {0: [], 1: [], 2: []}

    def side(k: int) -> None:
        now = claim(tmp_path, ids, 0)
        while now is not None:
            got[k].append(now)
            now = claim(tmp_path, ids, now + 1)

    threads = [threading.Thread(target=side, args=(k,)) for k in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(n for ns in got.values() for n in ns) == list(range(200))
    assert all(ns == sorted(ns) for ns in got.values()), got
    assert {p.read_text() for p in tmp_path.iterdir()} == set(ids)


def _items(ids: list[str]) -> list[SimpleNamespace]:
    from conformance.plugin import INFO, TestInfo

    return [SimpleNamespace(stash={INFO: TestInfo(t, (), None, True)}) for t in ids]


def test_the_longest_are_claimed_first_and_named_by_the_collected_order(tmp_path: Path) -> None:
    long = sorted(EXPECTED_S, key=lambda t: -EXPECTED_S[t][0])[:3]  # disruptive ones
    ids = ["a", long[2], "b", long[0], "c", long[1], "d"]
    assert longest_first(ids, "reference") == [3, 5, 1, 0, 2, 4, 6]
    assert longest_first(ids, "reference:zookeeper?controllers=3") == [3, 5, 1, 0, 2, 4, 6]
    from conformance.plugin import INFO

    items = _items(ids)
    got: dict[int, list[str]] = {0: [], 1: []}

    def side(k: int) -> None:
        for item in claimed(tmp_path, items):  # type: ignore[arg-type]
            got[k].append(item.stash[INFO].test_id)

    threads = [threading.Thread(target=side, args=(k,)) for k in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    wanted = [ids[n] for n in longest_first(ids, "reference")]
    assert sorted(got[0] + got[1]) == sorted(ids)
    assert all(ts == [t for t in wanted if t in ts] for ts in got.values()), got
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        f"{n:05d}": t for n, t in enumerate(ids)
    }


def _record(test_id: str, rid: str) -> dict:
    return {"run_id": "side-run", "test_id": test_id, "requirement_id": rid, "verdict": "PASS"}


def test_records_are_merged_in_the_collected_order(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    for n, test_id in enumerate(["a", "b", "c", "d"]):
        (claims / f"{n:05d}").write_text(test_id)
    one = Side(0, tmp_path, records=[_record("b", "R1"), _record("b", "R2"), _record("c", "R1")])
    two = Side(1, tmp_path, records=[_record("a", "R1"), _record("d", "R3")])
    gone = Side(2, tmp_path, records=None)  # did not finish: what it claimed is not recorded
    note(claims, [])  # what the sides collected, beside the claims: not a claim
    merged = Sides([one, two, gone], claims).merged()
    assert [(r["test_id"], r["requirement_id"]) for r in merged] == [
        ("a", "R1"), ("b", "R1"), ("b", "R2"), ("c", "R1"), ("d", "R3"),
    ]  # fmt: skip
    assert not any("run_id" in r for r in merged)


def _recorded_run(folder: Path, said: str | None) -> Path:
    runs = folder / "results" / "reference-x"
    runs.mkdir(parents=True)
    (runs / "manifest.json").write_text(json.dumps({"outages": []}))
    (runs / "results.jsonl").write_text(json.dumps(_record("a", "R1")) + "\n")
    if said is not None:
        (folder / RECORDED).write_text(said)
    return folder


def test_a_side_that_did_not_finish_is_not_read(tmp_path: Path) -> None:
    """Only a side that said it recorded its share (``RECORDED``) gives records."""
    done = SimpleNamespace(wait=lambda timeout: 0, poll=lambda: 0)
    broke = SimpleNamespace(wait=lambda timeout: 2, poll=lambda: 2)
    ok = Side(0, _recorded_run(tmp_path / "ok", "1"), proc=done)  # type: ignore[arg-type]
    bad = Side(1, _recorded_run(tmp_path / "bad", None), proc=broke)  # type: ignore[arg-type]
    broken = Side(2, _recorded_run(tmp_path / "broken", "3"), proc=broke)  # type: ignore[arg-type]
    Sides([ok, bad, broken], tmp_path).finish(timeout=5)
    assert ok.records == [_record("a", "R1")] and bad.records is None and broken.records is None


def test_a_side_is_read_once_recorded_and_waited_for_at_the_end(tmp_path: Path) -> None:
    """A side that said it recorded is read while it still stops its cluster; closing the sides
    waits for its exit before stopping it."""
    waited: list[float] = []
    stopping = SimpleNamespace(poll=lambda: None, wait=lambda timeout: waited.append(timeout))
    side = Side(0, _recorded_run(tmp_path / "s", "0"), proc=stopping)  # type: ignore[arg-type]
    sides = Sides([side], tmp_path / "claims")
    sides.finish(timeout=5)
    assert side.records == [_record("a", "R1")] and side.exit_code is None and not waited
    stopping.poll, stopping.stdin = (lambda: 0), None  # it exits while waited for
    sides.close()
    assert waited == [EXIT_WITHIN_S]


def test_the_controller_claims_as_a_side_until_its_target_is_down(tmp_path: Path) -> None:
    from conformance.plugin import INFO

    items = _items([f"t{n}" for n in range(5)])
    claim(tmp_path, [f"t{n}" for n in range(5)], 1)  # a side took t1
    up = [True]
    got = []
    for item in claimed(tmp_path, items, lambda: up[0]):  # type: ignore[arg-type]
        got.append(item.stash[INFO].test_id)
        up[0] = len(got) < 2  # down for good after its second test
    assert got == ["t0", "t2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000", "00001", "00002"]


def test_only_clusters_the_run_starts_in_a_concurrent_run() -> None:
    for kind in (
        "reference",
        "reference:zookeeper?controllers=3",
        "reference?security=sasl",
        "kafka:4.4.0",
        "kafka:3.9.1?store=zookeeper",
    ):
        assert beside(SimpleNamespace(kind=kind), 4), kind
        assert not beside(SimpleNamespace(kind=kind), 1), kind
    for kind in ("external", "tansu", "docker:reference"):
        assert not beside(SimpleNamespace(kind=kind), 4), kind
    assert [sides_for(j) for j in (2, 3, 4)] == [1, 1, 2]
    assert [sides_for(j, "reference:zookeeper") for j in (2, 4)] == [1, 2]
    assert all(sides_for(j, "kafka:4.4.0?brokers=3") >= 1 for j in (2, 3, 4))


def test_the_sides_note_the_modules_of_their_tests_for_the_controller(tmp_path: Path) -> None:
    """The controller collects only these modules after its workers, and checks that they give
    the same disruptive tests in the same order (``plugin._collect_the_rest``)."""
    from conformance.plugin import INFO, TestInfo

    def item(path: str, test_id: str) -> SimpleNamespace:
        info = TestInfo(test_id, ("R1",), None, disruptive=True)
        return SimpleNamespace(path=Path(path), stash={INFO: info})

    assert noted(tmp_path) is None  # no side got as far as its tests: the whole suite
    note(tmp_path, [item("/s/a.py", "a/1"), item("/s/b.py", "b/1"), item("/s/a.py", "a/2")])
    assert noted(tmp_path) == (["/s/a.py", "/s/b.py"], ["a/1", "b/1", "a/2"])
    assert [p.name for p in tmp_path.iterdir()] == ["collected.json"]
