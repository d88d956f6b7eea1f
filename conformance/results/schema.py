"""Reading and validating recorded runs: a run directory is ``manifest.json`` + ``results.jsonl``.

The formats are the JSON Schemas ``specs/schema/manifest.schema.json`` and
``result.schema.json``. A bad result line never sinks a run: it becomes a :class:`Problem` naming
the file and line, and the other lines still count. A missing or bad manifest makes the whole run
unusable, which is one :class:`RunError`. The Spark job (``conformance.matrix``) checks the same
rules in bulk and comes back here for the line numbers of the few bad records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from conformance import specs

SCHEMA_DIR = specs.SCHEMA
MANIFEST_FILE = "manifest.json"
RESULTS_FILE = "results.jsonl"
#: How a results line that is not JSON at all is named among a run's problems.
MALFORMED = "malformed JSON"


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``specs/schema/<name>.schema.json`` (``result`` or ``manifest``)."""
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


#: Verdicts a result record may carry, in the schema's order (FLAKY only arises in aggregation).
VERDICTS: tuple[str, ...] = tuple(schema("result")["properties"]["verdict"]["enum"])
#: Verdicts that say something about the target: pass, or one of the ways of not passing.
SCORED: tuple[str, ...] = ("PASS", "FAIL", "ERROR", "NONSTRICT")
#: Verdicts that say the requirement did not apply; never counted as failures.
NOT_SCORED: tuple[str, ...] = tuple(v for v in VERDICTS if v not in SCORED)
LEVELS: tuple[str, ...] = tuple(schema("result")["properties"]["level"]["enum"])
FEATURES: tuple[str, ...] = tuple(schema("result")["properties"]["feature"]["enum"])


def current_test_id(test_id: str, feature: str) -> str:
    """A recorded test id as the suite names it now: every id starts with its feature
    (``kip-78/metadata/v2+/cluster-id/format``); runs recorded before that (``metadata/v2+/...``
    under KIP-78, ``robustness/...`` under PROTOCOL) read with the feature put in front, so old
    and new runs of a test meet under one id. The Spark reader does the same (``matrix.ingest``)."""
    return test_id if test_id.startswith(feature + "/") else f"{feature}/{test_id}"


class RunError(Exception):
    """A run directory that cannot be read at all (no manifest, a bad manifest, no results)."""


@dataclass(frozen=True)
class Problem:
    """One bad result record: where it is and what is wrong with it."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class Run:
    dir: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]


def _where(error: ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "record"


def _schema_errors(name: str, obj: Any) -> list[str]:
    errors = list(_validator(name).iter_errors(obj))
    if not errors:
        return []
    first = best_match(errors)
    rest = len(errors) - 1
    more = f" (and {rest} more)" if rest else ""
    return [f"{_where(first)}: {first.message}{more}"]


def record_errors(obj: Any, run_id: str | None = None, *, schema: bool = True) -> list[str]:
    """What is wrong with one result record (empty when it is valid).

    Beyond the schema: ``api_name`` is null exactly when ``api_key`` is, a PASS that says what
    it observed observed at least one check, and the record belongs to the run whose manifest it
    sits beside (``run_id``, when given). ``schema=False``: a record this process checked against
    the schema as it wrote it (``written``).
    """
    errors = _schema_errors("result", obj) if schema else []
    if errors:
        return errors
    if (obj["api_key"] is None) != (obj["api_name"] is None):
        errors.append("api_name: must be null exactly when api_key is null")
    if "observed" in obj and obj["verdict"] == "PASS" and not (obj["observed"] or {}).get("checks"):
        errors.append("observed: a PASS needs at least one check that ran")
    if run_id is not None and obj["run_id"] != run_id:
        errors.append(f"run_id: {obj['run_id']!r} is not the manifest's run_id {run_id!r}")
    return errors


def manifest_errors(obj: Any) -> list[str]:
    """What is wrong with a manifest (empty when it is valid)."""
    errors = _schema_errors("manifest", obj)
    if errors:
        return errors
    started = datetime.fromisoformat(obj["started_at"])
    ended = datetime.fromisoformat(obj["ended_at"])
    if ended < started:
        errors.append(f"ended_at: {obj['ended_at']} is before started_at {obj['started_at']}")
    return errors


def started(manifest: dict[str, Any]) -> datetime:
    """When a run started, as an aware datetime (manifests may write Z or +00:00)."""
    return datetime.fromisoformat(manifest["started_at"])


def read_manifest(run_dir: Path | str) -> dict[str, Any]:
    """The validated manifest of a run directory; :class:`RunError` says why not."""
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise RunError(
            f"{run_dir}: no {MANIFEST_FILE} (a run directory is {MANIFEST_FILE} + {RESULTS_FILE})"
        )
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise RunError(f"{path}:{e.lineno}: malformed JSON: {e.msg}") from None
    errors = manifest_errors(obj)
    if errors:
        raise RunError(f"{path}: {errors[0]}")
    return obj


#: result files this process wrote, each record checked against the schema before it was
#: written (``Recorder``): resolved path -> digest of the bytes when closed. A run's report and
#: its summary read the file at once, at the run's end; the schema (~0.1 ms a record with
#: jsonschema, 0.2 s a whole run each) is not checked again while the file is as written.
_WRITTEN: dict[str, bytes] = {}


def _as_written(path: Path | str) -> tuple[str, bytes] | None:
    import hashlib

    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return str(Path(path).resolve()), hashlib.blake2b(data, digest_size=16).digest()


def written(path: Path | str) -> None:
    """Note a result file this process wrote, every record checked (``_WRITTEN``)."""
    if (seen := _as_written(path)) is not None:
        _WRITTEN[seen[0]] = seen[1]


def iter_results(
    path: Path | str, run_id: str | None = None
) -> Iterator[tuple[int, dict[str, Any] | None, Problem | None]]:
    """``(line number, record, None)`` for each valid line, ``(line, None, problem)`` otherwise.

    Blank lines are ignored. ``run_id``, when given, is the manifest's: records of another run
    are problems.
    """
    name = str(path)
    seen = _as_written(path)
    checked = seen is not None and _WRITTEN.get(seen[0]) == seen[1]
    with open(path, encoding="utf-8", errors="surrogateescape") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                reason = e.msg.removesuffix(" at")
                yield (
                    number,
                    None,
                    Problem(name, number, f"{MALFORMED}: {reason} at column {e.colno}"),
                )
                continue
            errors = record_errors(obj, run_id, schema=not checked)
            if errors:
                yield number, None, Problem(name, number, "; ".join(errors))
            else:
                obj["test_id"] = current_test_id(obj["test_id"], obj["feature"])
                yield number, obj, None


def load_run(run_dir: Path | str) -> Run:
    """A whole run, validated: its manifest, its good records, and a problem per bad line."""
    folder = Path(run_dir)
    manifest = read_manifest(folder)
    results = folder / RESULTS_FILE
    if not results.is_file():
        raise RunError(f"{folder}: no {RESULTS_FILE}")
    run = Run(folder, manifest)
    for _, record, problem in iter_results(results, manifest["run_id"]):
        if problem is not None:
            run.problems.append(problem)
        else:
            run.records.append(record)  # type: ignore[arg-type]
    return run


def find_runs(paths: Iterable[Path | str]) -> list[Path]:
    """The run directories named by ``paths``: each is a run directory or a folder holding some
    (searched recursively). A folder with results but no manifest is a :class:`RunError`."""
    found: list[Path] = []
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise RunError(f"{root}: no such file or directory")
        if not root.is_dir():
            raise RunError(
                f"{root}: not a run directory (expected {MANIFEST_FILE} + {RESULTS_FILE})"
            )
        candidates = {p.parent for p in root.rglob(MANIFEST_FILE)}
        candidates |= {p.parent for p in root.rglob(RESULTS_FILE)}
        if (root / MANIFEST_FILE).exists() or (root / RESULTS_FILE).exists():
            candidates = {root}
        if not candidates:
            raise RunError(f"{root}: holds no run ({MANIFEST_FILE} + {RESULTS_FILE})")
        for run_dir in sorted(candidates):
            if not (run_dir / MANIFEST_FILE).is_file():
                raise RunError(f"{run_dir}: {RESULTS_FILE} without {MANIFEST_FILE}")
            if not (run_dir / RESULTS_FILE).is_file():
                raise RunError(f"{run_dir}: {MANIFEST_FILE} without {RESULTS_FILE}")
            found.append(run_dir.resolve())
    unique = list(dict.fromkeys(found))
    return unique
