"""Pass rate per feature across the versions of each implementation, as an SVG picture."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and searchable


def pass_rate_svg(model: dict[str, Any]) -> str | None:
    """One panel per implementation: x the versions in order, y the share of scored
    requirements that pass, one line per feature. None when nothing was scored."""
    impls = sorted({t["implementation"] for t in model["targets"]})
    series: dict[str, dict[str, list[tuple[int, float]]]] = {i: {} for i in impls}
    labels: dict[str, list[str]] = {i: [] for i in impls}
    rank = {(t["implementation"], t["version"]): t["rank"] for t in model["targets"]}
    for entry in model["summary"]:
        impl, version = entry["implementation"], entry["version"]
        labels[impl].append(version)
        for feature, f in entry["features"].items():
            if f["pass_rate"] is not None:
                series[impl].setdefault(feature, []).append(
                    (rank[(impl, version)], 100 * f["pass_rate"])
                )
    if not any(series.values()):
        return None
    fig, axes = plt.subplots(
        1, len(impls), figsize=(4.2 * len(impls) + 1.5, 3.4), squeeze=False, sharey=True
    )
    for ax, impl in zip(axes[0], impls, strict=True):
        order = sorted(labels[impl], key=lambda v: rank[(impl, v)])
        for feature in model["features"]:
            points = sorted(series[impl].get(feature, []))
            if points:
                xs = [
                    order.index(next(v for v in order if rank[(impl, v)] == r)) for r, _ in points
                ]
                ax.plot(xs, [p for _, p in points], marker="o", label=feature)
        ax.set_title(impl)
        ax.set_xticks(range(len(order)), order, rotation=30 if len(order) > 4 else 0)
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
        ax.set_xlabel("version")
    axes[0][0].set_ylabel("requirements passing (%)")
    handles, names = [], []
    for ax in axes[0]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.legend(handles, names, loc="center right", fontsize="small")
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]
