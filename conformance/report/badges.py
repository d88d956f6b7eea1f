"""A badge per implementation: its latest version, how many MUST requirements it meets and how
many were judged."""

from __future__ import annotations

from typing import Any

import anybadge

from conformance.report.verdict_style import coverage_counts


def badge_svgs(model: dict[str, Any]) -> dict[str, str]:
    """implementation -> badge SVG text, for the implementation's latest version."""
    latest: dict[str, dict[str, Any]] = {}
    rank = {(t["implementation"], t["version"]): t["rank"] for t in model["targets"]}
    for entry in model["summary"]:
        impl = entry["implementation"]
        if (
            impl not in latest
            or rank[(impl, entry["version"])] > rank[(impl, latest[impl]["version"])]
        ):
            latest[impl] = entry
    out = {}
    for impl, entry in sorted(latest.items()):
        value, colour = badge_value(entry)
        badge = anybadge.Badge(f"kafka conformance: {impl}", value, default_color=colour)
        out[impl] = badge.badge_svg_text
    return out


def badge_value(entry: dict[str, Any]) -> tuple[str, str]:
    """(text, colour) of a target's badge: MUST requirements met out of those judged, and how
    many were judged (``0.2.0: 18/20 MUST met, 20 of 20 judged``). Under half judged, no
    fraction and no green: ``0.2.0: only 2 of 11 MUST judged``, grey."""
    passed, scored = entry["must_passed"], entry["must_scored"]
    total = entry.get("must_requirements", scored)
    version = entry["version"]
    if coverage_counts(passed, scored, total)[1] is None:
        return f"{version}: only {scored} of {total} MUST judged", "lightgrey"
    if passed == scored:
        colour = "green"
    elif passed >= 0.8 * scored:
        colour = "yellow"
    else:
        colour = "red"
    return f"{version}: {passed}/{scored} MUST met, {scored} of {total} judged", colour
