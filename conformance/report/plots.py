"""Pass rate per feature across the versions of each implementation, as an SVG picture."""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from conformance.report.verdict_style import coverage_counts

plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and searchable
#: under the plot when a point is drawn hollow
LOW_COVERAGE_NOTE = "hollow: under half of the requirements judged"


def pass_rate_svg(model: dict[str, Any]) -> str | None:
    """One panel per implementation: x the versions in order, y the share of scored
    requirements that pass, one line per feature; a point where fewer than half of the
    feature's requirements were judged is hollow, with a note saying so. None when nothing was
    scored."""
    impls = sorted({t["implementation"] for t in model["targets"]})
    # (rank, rate, judged under half): a low-coverage point is drawn hollow
    series: dict[str, dict[str, list[tuple[int, float, bool]]]] = {i: {} for i in impls}
    labels: dict[str, list[str]] = {i: [] for i in impls}
    rank = {(t["implementation"], t["version"]): t["rank"] for t in model["targets"]}
    for entry in model["summary"]:
        impl, version = entry["implementation"], entry["version"]
        labels[impl].append(version)
        for feature, f in entry["features"].items():
            if f["pass_rate"] is not None:
                low = coverage_counts(f["passed"], f["scored"], f["requirements"])[1] is None
                series[impl].setdefault(feature, []).append(
                    (rank[(impl, version)], 100 * f["pass_rate"], low)
                )
    if not any(series.values()):
        return None
    # a panel's width grows with its versions (Apache Kafka's release axis has 20 and more)
    widths = [max(4.2, 0.45 * len(set(labels[i]))) for i in impls]
    fig, axes = plt.subplots(
        1,
        len(impls),
        figsize=(sum(widths) + 1.5, 3.4),
        squeeze=False,
        sharey=True,
        gridspec_kw={"width_ratios": widths},
    )
    any_hollow = False
    for ax, impl in zip(axes[0], impls, strict=True):
        order = sorted(labels[impl], key=lambda v: rank[(impl, v)])
        for feature in model["features"]:
            points = sorted(series[impl].get(feature, []))
            if points:
                xs = [
                    order.index(next(v for v in order if rank[(impl, v)] == r))
                    for r, _, _ in points
                ]
                (line,) = ax.plot(xs, [p for _, p, _ in points], marker="o", label=feature)
                hollow = [(x, p) for x, (_, p, low) in zip(xs, points, strict=True) if low]
                if hollow:
                    any_hollow = True
                    ax.plot(
                        [x for x, _ in hollow],
                        [p for _, p in hollow],
                        linestyle="none",
                        marker="o",
                        markerfacecolor="white",
                        markeredgecolor=line.get_color(),
                        gid="low-coverage",
                    )
        ax.set_title(impl)
        ax.set_xticks(range(len(order)), order, rotation=30 if len(order) > 4 else 0)
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
        ax.set_xlabel("version")
    axes[0][0].set_ylabel("judged requirements passing (%)")
    handles, names = [], []
    for ax in axes[0]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.legend(handles, names, loc="center right", fontsize="small")
    bottom = 0.0
    if any_hollow:
        fig.text(0.01, 0.01, LOW_COVERAGE_NOTE, fontsize="small", color="#616161")
        bottom = 0.07
    fig.tight_layout(rect=(0, bottom, 0.84, 1))
    buf = io.StringIO()
    # tight: the legend and the rotated labels are inside the picture, not cut at its edge
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return scalable(text[text.index("<svg") :])


def scalable(svg: str) -> str:
    """The picture scaled to its container's width (its viewBox kept), not a fixed size in
    points that a narrower browser window cuts off at the right edge (issue 41)."""
    head, rest = svg.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return f'{head} width="100%" style="max-width:100%;height:auto">{rest}'
