"""The Kafka release facts kept in the project, the best guess built on them, and version order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.matrix import kafka_releases
from conformance.matrix.versions import order_versions, version_key
from conformance.protocol import releases as release_table


def test_data_file_is_what_the_release_specs_say(kafka_specs: Path, tmp_path: Path) -> None:
    """The shared spec folders (to 3.9) and the cached 4.x kafka-clients jars give the file."""
    jars = kafka_releases.cached_jars()
    if isinstance(jars, str):
        pytest.skip(f"kafka-clients jars of {kafka_releases.JAR_RELEASES} {jars}")
    folders = [kafka_releases.jar_specs(jar, tmp_path) for jar in jars]
    assert [f.name for f in folders] == list(kafka_releases.JAR_RELEASES)
    derived = kafka_releases.derive(kafka_specs, folders)
    assert kafka_releases.dumps(derived) == release_table.DATA_FILE.read_text(encoding="utf-8")


def test_known_facts():
    releases = release_table.load()
    names = list(releases)
    assert (names[0], names[-1]) == ("2.3.1", "trunk-2024-10")
    assert (releases["3.9.0"][3].min, releases["3.9.0"][3].max) == (0, 12)
    assert releases["2.3.1"][3].max == 8
    assert 60 not in releases["2.6.3"] and 60 in releases["2.8.2"]  # DescribeCluster: 2.8
    assert not releases["3.9.0"][62].broker_facing  # BrokerRegistration: controller only
    assert 4 in releases["3.9.0"] and 4 not in releases["4.0.2"]  # LeaderAndIsr: gone in 4.0
    assert (releases["4.0.2"][0].min, releases["4.4.0"][0].max) == (3, 13)  # Produce
    assert 88 not in releases["4.0.2"] and 88 in releases["4.4.0"]  # StreamsGroupHeartbeat
    data = json.loads(release_table.DATA_FILE.read_text())
    assert set(data["releases"][0]["apis"][0]) == {
        "api_key", "name", "min", "max", "listeners", "latest_unstable",
    }  # fmt: skip


def advertised_by(release: str) -> dict[int, tuple[int, int]]:
    return {
        k: (a.min, a.advertised_max)
        for k, a in release_table.load()[release].items()
        if a.advertised
    }


def test_best_guess_recognises_each_release():
    # a line's patches keep its API versions (3.9.0 advertises what 3.9.2 does): the latest wins
    for release in ("2.3.1", "2.8.2", "3.5.2", "3.9.2", "4.0.2", "4.4.0"):
        guess = kafka_releases.best_guess(advertised_by(release))
        assert guess == (release, 1.0)


def test_best_guess_of_a_partial_implementation():
    mine = {k: v for k, v in advertised_by("3.3.2").items() if k in (0, 1, 3, 18, 19)}
    name, score = kafka_releases.best_guess(mine, keys={0, 1, 3, 18, 19})
    assert score == 1.0
    assert name in {"3.3.2", "3.4.1"}  # equal on these APIs; the later wins ties
    assert kafka_releases.best_guess({}) is None


def test_version_order():
    versions = ["0.10.0", "0.9.1", "1.0.0", "1.0.0rc1", "1.0.0-rc2", "v1.1", "nightly-2"]
    assert sorted(versions, key=version_key) == [
        "0.9.1", "0.10.0", "1.0.0rc1", "1.0.0-rc2", "1.0.0", "v1.1", "nightly-2",
    ]  # fmt: skip
    assert version_key("1.0.0") > version_key("1.0.0rc1")
    ranks = order_versions(
        [("a", "abc123"), ("a", "def456"), ("a", "0.2"), ("b", "2.0")],
        {("a", "abc123"): "2025-02-01T00:00:00Z", ("a", "def456"): "2025-01-01T00:00:00Z"},
    )
    # shas do not compare as versions: the one whose first run came first is earlier, and
    # both come after the versions that do compare
    assert ranks == {("a", "0.2"): 0, ("a", "def456"): 1, ("a", "abc123"): 2, ("b", "2.0"): 0}


def test_a_patch_release_stands_for_its_line() -> None:
    releases = release_table.load()
    assert release_table.release_of("3.9.0", releases) == "3.9.0"
    assert (
        release_table.release_of("3.9.1", releases) == "3.9.2"
    )  # the line's newest patch in the table
    assert release_table.release_of("1.0.0", releases) is None


def test_table_check_names_each_api_whose_range_differs() -> None:
    """What a KRaft broker of 3.9 advertises by default, as the table has it, agrees; an API
    advertised beyond the table, or missing, is a difference naming both sides."""
    releases = release_table.load()
    table = {
        k: (a.min, a.advertised_max)
        for k, a in releases["3.9.0"].items()
        if (a.listeners is None or "broker" in a.listeners)
        and not (a.latest_unstable and a.max == a.min)
    }
    same = kafka_releases.table_check("apache-kafka", "3.9.1", dict(table))
    assert same == {"release": "3.9.2", "listener": "broker", "differences": []}
    lo, hi = table[3]
    changed = {**table, 3: (lo, hi + 1)}
    del changed[0]
    diffs = kafka_releases.table_check("apache-kafka", "3.9.1", changed)["differences"]
    assert diffs == [
        {"api_key": 0, "name": "Produce", "advertised": None, "table": list(table[0])},
        {"api_key": 3, "name": "Metadata", "advertised": [lo, hi + 1], "table": [lo, hi]},
    ]
    assert kafka_releases.table_check("tansu", "0.6.0", table) is None
    zk = kafka_releases.table_check("apache-kafka-zookeeper", "3.9.1", table)
    assert zk["listener"] == "zkBroker" and zk["differences"]  # LeaderAndIsr and co. are zkBroker's


def test_the_suite_negotiates_every_version_its_specs_know() -> None:
    """Issue 37: no cap. Harness.pick_version is the newest version both the target advertises
    and the specs know: given Kafka 4.4.0's table (a stand-in harness carrying what the method
    reads), every API at 4.4.0's newest, OffsetCommit/OffsetFetch 10 and TxnOffsetCommit 6
    (topics by id) among them."""
    from types import SimpleNamespace

    from conformance.protocol import Codec
    from conformance.suite.kit.harness import Harness

    codec = Codec.from_specs()
    table = release_table.load()["4.4.0"]
    stub = SimpleNamespace(
        codec=codec,
        require=lambda *a: None,
        note=lambda *a: None,
        advertised_on=lambda listener: {k: (r.min, r.max) for k, r in table.items()},
    )
    picked = {k: Harness.pick_version(stub, k) for k in table}  # type: ignore[arg-type]
    ours = {k: codec.message(k, "request").valid_versions.hi for k in table}
    assert picked == {k: min(r.max, ours[k]) for k, r in table.items()}
    assert (picked[8], picked[9], picked[28]) == (10, 10, 6)


def test_every_release_line_from_2_8_to_4_4_has_a_row():
    """Issue 41: each line's protocol is in the table (a patch stands for its line)."""
    releases = release_table.load()
    lines = ["2.8"] + [f"3.{m}" for m in range(10)] + [f"4.{m}" for m in range(5)]
    assert {line: release_table.release_of(f"{line}.99", releases) is not None for line in lines} \
        == dict.fromkeys(lines, True)  # fmt: skip
    assert 0 in releases["4.3.1"] and releases["4.1.2"][0].max <= releases["4.3.1"][0].max
