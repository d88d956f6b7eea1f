"""Requirement texts for the report, from ``specs/requirements/*.json`` (one file per feature).

The report links each cell to its requirement's statement. A requirement id the files do not
know (an older suite, a file not written yet) is shown by its id alone, never an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance import specs

KIPS_DIR = specs.REQUIREMENTS
KEPT = ("level", "statement", "basis", "listener", "apis", "proposal", "reading", "note")


def load_requirements(kips_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """requirement id -> {level, statement, basis, ..., feature, feature_title, status, source}.

    Files that are not JSON objects with a ``requirements`` list are passed over.
    """
    folder = KIPS_DIR if kips_dir is None else Path(kips_dir)
    out: dict[str, dict[str, Any]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("requirements"), list):
            continue
        for req in doc["requirements"]:
            if not isinstance(req, dict) or not isinstance(req.get("id"), str):
                continue
            entry = {k: req[k] for k in KEPT if k in req}
            entry.update(
                feature=path.stem,
                feature_title=doc.get("title"),
                status=doc.get("status"),
                source=doc.get("source"),
            )
            out[req["id"]] = entry
    return out
