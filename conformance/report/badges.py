"""A badge per implementation: its latest version and how many MUST requirements it meets."""

from __future__ import annotations

from typing import Any

import anybadge


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
        passed, scored = entry["must_passed"], entry["must_scored"]
        if not scored:
            colour = "lightgrey"
        elif passed == scored:
            colour = "green"
        elif passed >= 0.8 * scored:
            colour = "yellow"
        else:
            colour = "red"
        value = f"{entry['version']}: {passed}/{scored} MUST"
        badge = anybadge.Badge(f"kafka conformance: {impl}", value, default_color=colour)
        out[impl] = badge.badge_svg_text
    return out
