"""benchmarks/record.py's judgement of a record (no timing here: records are made up): a round
below a target, and a run whose best round is below the worst of the last record."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def record():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("record", BENCHMARKS / "record.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def _made(host: str, *encode_kio: float, commit: str = "abc1234") -> dict:
    rounds = [
        {"encode/kio": r, "encode/kafka-python": 3.5, "decode/kafka-python": 2.3, "decode/kio": 0.3}
        for r in encode_kio
    ]
    return {"bench": "codec MetadataResponse v12", "host": host, "commit": commit,
            "date": "2026-11-28T16:30:00+00:00", "rounds": rounds}  # fmt: skip


def test_a_round_below_a_target_is_said(record) -> None:
    assert record.findings(_made("m", 7.5, 7.7), []) == []
    assert record.findings(_made("m", 7.5, 4.9), []) == [
        "encode/kio: 4.90x in a round, target >= 5.0x"
    ]


def test_a_fall_beyond_the_noise_of_the_last_record_is_said(record) -> None:
    earlier = [_made("m", 7.4, 7.8, commit="old1"), _made("other", 9.0, 9.1)]
    assert record.findings(_made("m", 7.0, 7.45), earlier) == []  # the ranges meet: noise
    (found,) = record.findings(_made("m", 6.6, 7.1), earlier)
    assert found.startswith("encode/kio: at most 7.10x in 2 rounds, below the 7.40x of every")
    assert "old1" in found and "other" not in found  # this machine's record, not another's
    (found,) = record.findings(_made("new", 6.6, 7.1), earlier)  # no record of this machine
    assert "below the 9.00x" in found and "on other" in found


def test_the_summary_gives_the_median_and_range(record) -> None:
    line = record.summary(_made("m", 7.0, 7.5, 8.0))
    assert line.startswith(
        "codec at abc1234, 3 rounds, median (range): encode/kio 7.50x (7.00-8.00)"
    )
