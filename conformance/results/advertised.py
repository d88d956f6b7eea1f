"""Advertised, not judged: the API versions a target offers that no verdict of the run covers.

A target may advertise a version the suite has no spec for (a newer Kafka, or a version bumped
by mistake), or one that no selected test exercised. Neither shows as a FAIL or a PASS, so
without this list a run says nothing about them; the manifest keeps it (``not_judged``), and
the run summary and the report list it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: why an advertised version was not judged
NO_SPEC = "no spec"
NOT_JUDGED = "no selected test judged it"
#: the verdicts that say a check of the API version ran against the target
JUDGING = frozenset({"PASS", "FAIL", "NONSTRICT"})


def judged_key(record: Mapping) -> tuple[str, int, int] | None:
    """(listener, api key, version) a record judged, or None when it judged none."""
    if record.get("verdict") not in JUDGING or record.get("api_key") is None:
        return None
    if record.get("api_version") is None:
        return None
    return (record.get("listener") or "client", record["api_key"], record["api_version"])


def not_judged(
    advertised: Mapping[str, Mapping[int, tuple[int, int]] | None],
    specs: Mapping[int, tuple[str, Iterable[int]]],
    judged: set[tuple[str, int, int]],
) -> list[dict]:
    """Per listener and API, the advertised versions no spec defines (``NO_SPEC``) and, of the
    others, those no record judged (``NOT_JUDGED``).

    ``advertised``: listener -> ApiVersions (api key -> (min, max)); ``specs``: api key ->
    (API name, versions the specs in use define); ``judged``: :func:`judged_key` of the records.
    """
    out = []
    for listener, apis in advertised.items():
        for key, (lo, hi) in sorted((apis or {}).items()):
            name, known = specs.get(key, (None, ()))
            known = set(known)
            missing = {NO_SPEC: [], NOT_JUDGED: []}
            for v in range(lo, min(hi, lo + 1000) + 1):  # bounded: a bogus range is not walked
                if v not in known:
                    missing[NO_SPEC].append(v)
                elif (listener, key, v) not in judged:
                    missing[NOT_JUDGED].append(v)
            for reason, versions in missing.items():
                if versions:
                    out.append(
                        {
                            "listener": listener,
                            "api_key": key,
                            "api_name": name,
                            "versions": versions,
                            "reason": reason,
                        }
                    )
    return out


def ranges(versions: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``v0-2, v5``."""
    parts: list[str] = []
    start = prev = None
    for v in [*sorted(versions), None]:
        if start is not None and v is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            parts.append(f"v{start}" if start == prev else f"v{start}-{prev}")
        start = prev = v
    return ", ".join(parts)


def lines(entries: list[dict]) -> list[str]:
    """What the run summary and the report say: each version with no spec on its own line
    (``Metadata (api key 3) v13 on the client listener: no spec``), then those no selected test
    judged in one line per listener (a narrow selection leaves most APIs unjudged)."""
    out = [
        f"{e['api_name'] or 'an API'} (api key {e['api_key']}) {ranges(e['versions'])} on the "
        f"{e['listener']} listener: {NO_SPEC}"
        for e in entries
        if e["reason"] == NO_SPEC
    ]
    listeners = sorted({e["listener"] for e in entries if e["reason"] == NOT_JUDGED})
    for listener in listeners:
        apis = [
            f"{e['api_name'] or e['api_key']} {ranges(e['versions'])}"
            for e in entries
            if e["reason"] == NOT_JUDGED and e["listener"] == listener
        ]
        out.append(f"on the {listener} listener, {NOT_JUDGED}: {'; '.join(apis)}")
    return out
