"""Writes a run: ``results.jsonl`` (one record per test and requirement) and ``manifest.json``.

Records are appended and flushed as tests finish, so an interrupted run still leaves what it
found; the manifest is written at the end (and names the run's hypothesis seed, which is what
``--seed`` takes to reproduce a failure). Both follow ``specs/schema/result.schema.json`` and
``manifest.schema.json``; every record is validated before it is written.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.results.advertised import judged_key
from conformance.results.schema import (
    MANIFEST_FILE,
    RESULTS_FILE,
    manifest_errors,
    record_errors,
    written,
)

FORMAT_VERSION = 1


class RecordError(ValueError):
    """A record or manifest the suite produced does not follow its schema (a suite bug)."""


def suite_version() -> str:
    """The installed kafka-conformance's version, recorded in every manifest."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-conformance")
    except PackageNotFoundError:
        return "0+unknown"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id(target_name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in target_name) or "target"
    return f"{safe}-{stamp}-{secrets.token_hex(3)}"


def fingerprint(advertised: dict[int, tuple[int, int]] | None) -> dict[str, list[int]] | None:
    if advertised is None:
        return None
    return {str(k): [lo, hi] for k, (lo, hi) in sorted(advertised.items())}


class Recorder:
    """One run directory."""

    def __init__(self, run_dir: Path | str, run_id: str) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.started_at = now()
        self.count = 0
        self.verdicts: dict[str, int] = {}
        #: (listener, api key, version) some record judged (``advertised.judged_key``)
        self.judged: set[tuple[str, int, int]] = set()
        #: the features whose tests recorded (a test id's first segment): the content key's
        self.features: set[str] = set()
        self._out = (self.dir / RESULTS_FILE).open("w", encoding="utf-8")

    def add(self, record: dict[str, Any]) -> None:
        record = {"run_id": self.run_id, **record}
        errors = record_errors(record, self.run_id)
        if errors:
            raise RecordError(f"result record for {record.get('test_id')}: {errors[0]}")
        self._out.write(json.dumps(record, sort_keys=True) + "\n")
        self._out.flush()
        self.count += 1
        self.verdicts[record["verdict"]] = self.verdicts.get(record["verdict"], 0) + 1
        self.features.add(record["test_id"].split("/", 1)[0])
        key = judged_key(record)
        if key is not None:
            self.judged.add(key)

    def finish(self, **manifest: Any) -> dict[str, Any]:
        """Close the results and write the manifest (fields of manifest.schema.json)."""
        self._out.close()
        obj = {
            "format_version": FORMAT_VERSION,
            "run_id": self.run_id,
            "started_at": self.started_at,
            "ended_at": now(),
            **manifest,
        }
        errors = manifest_errors(obj)
        if errors:
            raise RecordError(f"manifest: {errors[0]}")
        (self.dir / MANIFEST_FILE).write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
        written(self.dir / RESULTS_FILE)  # every record was checked in ``add``
        return obj
