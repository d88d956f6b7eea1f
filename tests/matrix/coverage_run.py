"""A run of a small broker that judges few of a feature's requirements: what the report's pass
rates must give their coverage for (issue 23). Written into a test's temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

from tests.matrix.spark_support import FIXTURE_RUNS

RUN_ID = "20260101T090000Z-small-1.0.0-1"
#: broker-registration: 11 requirements, 2 judged (PASS), 9 SKIP (no controller listener);
#: protocol: 6 of 6 judged, 5 pass
JUDGED, REQUIREMENTS = 2, 11


def _record(rid: str, feature: str, verdict: str, n: int) -> dict[str, object]:
    return {
        "run_id": RUN_ID,
        "test_id": f"{feature}/check-{n}",
        "requirement_id": rid,
        "level": "MUST",
        "feature": feature,
        "api_key": None,
        "api_name": None,
        "api_version": None,
        "verdict": verdict,
        "message": "" if verdict == "PASS" else "no controller listener",
        "duration_ms": 1.0,
        "seed": None,
        "listener": "client",
    }


def write_small_broker_run(folder: Path) -> Path:
    """The run's directory under ``folder``: its manifest (a fixture run's, renamed) and
    records."""
    run = folder / RUN_ID
    run.mkdir(parents=True)
    manifest = json.loads(
        (FIXTURE_RUNS / "20250303T090000Z-reference-0.1.0-1" / "manifest.json").read_text()
    )
    manifest.update(
        run_id=RUN_ID,
        target_name="small",
        target_version="1.0.0",
        target_kind="small",
        started_at="2026-01-01T09:00:00Z",
        ended_at="2026-01-01T09:00:05Z",
    )
    (run / "manifest.json").write_text(json.dumps(manifest))
    records = [
        _record(
            f"BROKER-REGISTRATION.R{n}", "broker-registration", "PASS" if n <= JUDGED else "SKIP", n
        )
        for n in range(1, REQUIREMENTS + 1)
    ]
    records += [
        _record(f"PROTOCOL.R{n}", "protocol", "PASS" if n <= 5 else "FAIL", n) for n in range(1, 7)
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run
