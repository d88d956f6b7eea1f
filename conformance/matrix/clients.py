"""The clients' rows: records whose ``subject`` is a client are judged apart from the broker.

KIP-42's client requirements (R1-R7) are properties of a client (the suite's own, or a Java
kafka-clients release given with ``run --client java:VERSION``), so their records never reach
the broker target's cells: both engines set them aside (``is_client``) and fold them here, per
client implementation, version and requirement, into the worst verdict of their records across
runs (verdict precedence of :mod:`conformance.matrix.model`) with that record's message. A few
records per client and run: plain Python for both engines, so both give the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from conformance.matrix.model import PRECEDENCE
from conformance.matrix.versions import natural_key

#: the fields of a record the clients' rows read
FIELDS = (
    "subject",
    "requirement_id",
    "feature",
    "level",
    "verdict",
    "message",
    "test_id",
    "run_id",
)
_RANK = {v: i for i, v in enumerate(PRECEDENCE)}


def is_client(record: dict[str, Any]) -> bool:
    """Whether a record judges a client (it names a subject) rather than the broker target."""
    return bool(record.get("subject"))


def _subject(value: Any) -> dict[str, Any]:
    """The subject as a dict (Spark's reader keeps the JSON object as text)."""
    return json.loads(value) if isinstance(value, str) else dict(value)


def client_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (client implementation, version, requirement): its worst verdict, how many
    records and runs it folds, and the message and test of the record that gave the verdict."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        subject = _subject(r["subject"])
        key = (subject["implementation"], subject.get("version") or "", r["requirement_id"])
        pick = (_RANK[r["verdict"]], r["run_id"], r["test_id"])
        row = rows.get(key)
        if row is None:
            row = rows[key] = {
                "implementation": key[0],
                "version": key[1],
                "feature": r["feature"],
                "requirement_id": key[2],
                "level": r["level"],
                "records": 0,
                "_runs": set(),
                "_pick": None,
            }
        row["records"] += 1
        row["_runs"].add(r["run_id"])
        if row["_pick"] is None or pick < row["_pick"]:
            row.update(_pick=pick, verdict=r["verdict"], message=r["message"], test_id=r["test_id"])
    out = []
    for row in rows.values():
        row["runs"] = len(row.pop("_runs"))
        del row["_pick"]
        out.append(row)
    out.sort(
        key=lambda c: (
            c["implementation"],
            natural_key(c["version"]),
            natural_key(c["requirement_id"]),
        )
    )
    return out
