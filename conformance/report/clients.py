"""The clients section (HTML and Markdown): KIP-42's client requirements per client release.

The model's ``clients`` rows (``conformance.matrix.clients``) as a grid, requirements by client
implementation and version, and the message of every verdict that is not PASS (a FAIL says what
the client did, an UNSUPPORTED what the release lacks).
"""

from __future__ import annotations

from typing import Any

#: said where no run judged a client
NONE_JUDGED = (
    "No client was judged in these runs: KIP-42's client requirements are judged on a client "
    "(kafka-conformance run --client python | --client java:VERSION), never on the broker."
)


def client_label(row: dict[str, Any]) -> str:
    version = f" {row['version']}" if row.get("version") else ""
    return f"{row['implementation']}{version}"


def client_grid(
    model: dict[str, Any],
) -> tuple[list[str], list[tuple[str, str, list[dict[str, Any] | None]]]]:
    """Column labels (one per client and version) and rows (requirement, level, one row of the
    model per column or None)."""
    rows = model.get("clients") or []
    labels: list[str] = []
    for r in rows:
        if client_label(r) not in labels:
            labels.append(client_label(r))
    by_req: dict[str, tuple[str, dict[str, dict[str, Any]]]] = {}
    for r in rows:
        _, cells = by_req.setdefault(r["requirement_id"], (r["level"], {}))
        cells[client_label(r)] = r
    grid = [
        (rid, level, [cells.get(label) for label in labels])
        for rid, (level, cells) in by_req.items()
    ]
    return labels, grid


def client_notes(model: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(client, requirement, verdict, message) of every row that is not PASS."""
    return [
        (client_label(r), r["requirement_id"], r["verdict"], r["message"] or "(no message)")
        for r in model.get("clients") or []
        if r["verdict"] != "PASS"
    ]
