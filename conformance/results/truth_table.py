"""Explained verdicts: why Apache Kafka's releases get a verdict other than PASS.

Apache Kafka is the oracle of every reading, so each of its non-PASS verdicts is explained by a
row of ``reports/kafka-truth-table/<feature>.json`` (format: that folder's README): Kafka's
released behaviour differs from the text (recorded in the requirement's readings), or the
target gives no way to exercise the requirement. This module reads the rows and matches result
records to them; the project's tests use it to keep the table and the verdicts in step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

KINDS = ("kafka-differs", "not-applicable", "proposal")
VERDICTS = ("FAIL", "NONSTRICT", "SKIP", "UNSUPPORTED", "NOT_EXPOSED", "PROPOSAL_ABSENT", "ERROR")
FIELDS = ("requirement", "tests", "verdict", "targets", "kind", "explanation", "evidence")


class TruthTableError(ValueError):
    """A row that cannot be read: names the file, the row and what is wrong."""


@dataclass(frozen=True)
class Row:
    feature: str
    requirement: str
    tests: str
    verdict: str
    targets: tuple[str, ...]
    kind: str
    explanation: str
    evidence: str

    def matches(self, record: Mapping[str, object], target: str) -> bool:
        """Whether this row explains ``record`` of ``target`` (``<implementation> <version>``)."""
        return (
            record.get("requirement_id") == self.requirement
            and record.get("verdict") == self.verdict
            and fnmatchcase(str(record.get("test_id", "")), self.tests)
            and any(fnmatchcase(target, pattern) for pattern in self.targets)
        )


def load(folder: Path | str) -> list[Row]:
    """Every row of every ``<feature>.json`` in ``folder``."""
    rows: list[Row] = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise TruthTableError(f"{path}: not JSON: {e}") from None
        for i, raw in enumerate(data.get("rows", [])):
            rows.append(_row(path, i, raw))
    return rows


def _row(path: Path, index: int, raw: Mapping[str, object]) -> Row:
    where = f"{path.name} row {index}"
    missing = [f for f in FIELDS if not raw.get(f)]
    unknown = sorted(set(raw) - set(FIELDS))
    if missing or unknown:
        raise TruthTableError(f"{where}: missing {missing or '-'}, unknown {unknown or '-'}")
    if raw["kind"] not in KINDS:
        raise TruthTableError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(KINDS)}")
    if raw["verdict"] not in VERDICTS:
        raise TruthTableError(f"{where}: verdict {raw['verdict']!r} is not explainable")
    if not str(raw["tests"]).startswith(f"{path.stem}/"):
        # test ids start with their feature (tests/suite/test_layout.py); results recorded
        # before that are read with it put in front (results.schema.current_test_id)
        raise TruthTableError(f"{where}: tests {raw['tests']!r} must start with {path.stem}/")
    targets = raw["targets"]
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise TruthTableError(f"{where}: targets must be a list of patterns")
    return Row(
        feature=path.stem,
        requirement=str(raw["requirement"]),
        tests=str(raw["tests"]),
        verdict=str(raw["verdict"]),
        targets=tuple(targets),
        kind=str(raw["kind"]),
        explanation=str(raw["explanation"]),
        evidence=str(raw["evidence"]),
    )


def unexplained(
    records: Iterable[Mapping[str, object]], target: str, rows: list[Row]
) -> list[Mapping[str, object]]:
    """The records of ``target`` that are not PASS and that no row explains."""
    return [
        r
        for r in records
        if r.get("verdict") != "PASS" and not any(row.matches(r, target) for row in rows)
    ]


def unused(records: list[Mapping[str, object]], target: str, rows: list[Row]) -> list[Row]:
    """The rows naming ``target`` whose tests ran with their requirement in ``records`` and
    explain none of them: stale (the verdict changed), or written too narrowly. A row whose
    tests did not run (a selection) is not judged here."""

    def exercised(row: Row) -> bool:
        return any(
            r.get("requirement_id") == row.requirement
            and fnmatchcase(str(r.get("test_id", "")), row.tests)
            for r in records
        )

    return [
        row
        for row in rows
        if any(fnmatchcase(target, p) for p in row.targets)
        and exercised(row)
        and not any(row.matches(r, target) for r in records)
    ]
