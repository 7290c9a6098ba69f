"""The synthetic-edit plots (the seed study's Figure 3): each scenario's distance against the reference
scenario's, with its least-squares line and the x = y line. No ORM; drawn as metrics.plots draws."""

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from metrics.analysis.scenarios import Paired
from metrics.plots import _render, sample_indices

COLOURS = ("#2458a6", "#d9822b", "#3a8f4b", "#a33", "#7a4fa3", "#555")


def against_reference(comparisons: Sequence[Paired], *, title: str, label: str, fmt: str = "svg") -> bytes:
    """One colour per scenario: its items as points (x = the reference's distance), its line, and x = y."""

    def build() -> Figure:
        figure = Figure(figsize=(4.6, 3.8))
        axes = figure.add_subplot()
        reference = comparisons[0].reference if comparisons else ""
        high = 0.0
        for colour, paired in zip(COLOURS * (len(comparisons) // len(COLOURS) + 1), comparisons, strict=False):
            points = np.asarray(paired.points, dtype=float).reshape(-1, 2)
            if not len(points):
                continue
            shown = points[sample_indices(len(points))]
            high = max(high, float(points.max()))
            axes.scatter(shown[:, 0], shown[:, 1], s=8, alpha=0.45, linewidths=0, color=colour)
            name = paired.scenario
            if paired.slope is not None and paired.intercept is not None:
                grid = np.linspace(float(points[:, 0].min()), float(points[:, 0].max()), 50)
                axes.plot(grid, paired.intercept + paired.slope * grid, color=colour, linewidth=1.5)
                name = f"{name}: slope {paired.slope:.2f}"
            axes.plot([], [], color=colour, marker="o", linewidth=1.5, label=f"{name} (n = {paired.n:,})")
        axes.plot([0, high or 1.0], [0, high or 1.0], color="#888", linestyle="--", linewidth=1, label="x = y")
        axes.legend(loc="upper left", frameon=False)
        axes.set_xlabel(f"{label}, {reference}")
        axes.set_ylabel(f"{label}, other scenario")
        axes.set_title(title)
        return figure

    return _render(build, fmt)
