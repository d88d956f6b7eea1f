"""The API support matrix: what each implementation version advertises, beside Kafka releases.

A target's advertised ranges come from its runs' manifests (the ApiVersions fingerprint); how its
checks of each API went comes from the records. The Apache Kafka side is the project's facts
file (``kafka_releases.json``). The best guess of the release a target behaves like is taken over
the APIs in the suite's scope (the project's own message specs), where it is meaningful.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from conformance.matrix import kafka_releases
from conformance.protocol import releases as release_table
from conformance.protocol.spec import SPEC_DIR, read_spec_json
from conformance.results.schema import started


@cache
def scope_apis() -> dict[int, str]:
    """api key -> name of every API the project's message specs cover."""
    out: dict[int, str] = {}
    for path in sorted(SPEC_DIR.glob("*Request.json")):
        obj = read_spec_json(path, strict=False)
        if obj.get("type") == "request" and "apiKey" in obj:
            out[obj["apiKey"]] = obj["name"].removesuffix("Request")
    return dict(sorted(out.items()))


def tested(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[int, dict[str, int]]]:
    """(implementation, version) -> api key -> verdict -> record count, from the rows of
    :func:`~conformance.matrix.requirement_matrix.api_counts` (or the same counted in Python)."""
    out: dict[tuple[str, str], dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        out[(r["implementation"], r["version"])][int(r["api_key"])][r["verdict"]] = r["records"]
    return out


def _advertised(manifests: list[dict[str, Any]]) -> tuple[dict[int, tuple[int, int]], list[int]]:
    """The ranges of the latest run, and the keys on which the runs disagreed."""
    latest = max(manifests, key=started)
    ranges = {int(k): (v[0], v[1]) for k, v in latest["api_versions"].items()}
    seen: dict[int, set[tuple[int, int] | None]] = defaultdict(set)
    for m in manifests:
        fp = {int(k): (v[0], v[1]) for k, v in m["api_versions"].items()}
        for key in set(fp) | set(ranges):
            seen[key].add(fp.get(key))
    return ranges, sorted(k for k, values in seen.items() if len(values) > 1)


def api_matrix(
    manifests: list[dict[str, Any]],
    targets: list[tuple[str, str]],
    tested_counts: dict[tuple[str, str], dict[int, dict[str, int]]],
) -> dict[str, Any]:
    """The API support part of the report model (targets in ``targets`` order)."""
    releases = release_table.load()
    scope = scope_apis()
    names: dict[int, str] = dict(scope)
    for apis in releases.values():
        for key, api in apis.items():
            names.setdefault(key, api.name)
    by_target: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for m in manifests:
        by_target[(m["target_name"], m["target_version"])].append(m)
    rows = []
    shown: set[int] = set(scope)
    # the guess compares releases on the APIs in scope that some target advertises: the others
    # (Kafka 3.9's whole list is in scope) would tell the releases apart on what no target speaks
    spoken = {int(k) for m in manifests for k in m["api_versions"]}
    for impl, version in targets:
        advertised, varies = _advertised(by_target[(impl, version)])
        shown |= set(advertised)
        guess = kafka_releases.best_guess(advertised, set(scope) & spoken)
        rows.append(
            {
                "implementation": impl,
                "version": version,
                "advertised": {str(k): list(v) for k, v in sorted(advertised.items())},
                "varies": varies,
                "best_guess": {"release": guess[0], "score": round(guess[1], 3)} if guess else None,
                "table_check": kafka_releases.table_check(impl, version, advertised),
                "tested": {
                    str(k): dict(sorted(v.items()))
                    for k, v in sorted(tested_counts.get((impl, version), {}).items())
                },
            }
        )
    kafka = {
        release: {
            str(k): [a.min, a.advertised_max]
            for k, a in sorted(apis.items())
            if k in shown and a.broker_facing
        }
        for release, apis in releases.items()
    }
    return {
        "apis": [
            {"api_key": k, "name": names.get(k, f"api {k}"), "in_scope": k in scope}
            for k in sorted(shown)
        ],
        "releases": list(releases),
        "kafka": kafka,
        "targets": rows,
        "guess_counts": dict(Counter(r["best_guess"]["release"] for r in rows if r["best_guess"])),
    }
