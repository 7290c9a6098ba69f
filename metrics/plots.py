"""Report plots drawn by the server with matplotlib (Agg), as SVG or PNG bytes. No ORM.

Figures are built with matplotlib.figure.Figure (no pyplot global state, so threads and
requests never share a figure). Text is never interpreted: mathtext is off (a `$` in an
annotator or project name stays a `$`), and SVG text is written as escaped <text>, so
hostile names stay inert in the page and in the downloaded file.
"""

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from metrics.analysis import LineFit

matplotlib.use("Agg")

FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
MAX_POINTS = 2500  # beyond this the condition plot shows a fixed random sample of its jittered points
STYLE: dict[RcKeyType, Any] = {
    "text.parse_math": False,
    "text.usetex": False,
    "svg.fonttype": "none",  # real, escaped <text> (searchable) instead of glyph paths
    "svg.hashsalt": "editlab",  # stable element ids: the same data gives the same file
    "font.size": 9,
    "axes.titlesize": 10,
}


ALPHA_FROM = 300  # above this many points a scatter's points fade with their number, so overlaps show as darker
HEXBIN_FROM = 2000  # above this many a scatter is a hexbin of every point: colour counts the post-edits per cell
POINT_ALPHA = 0.8  # a scatter's points at ALPHA_FROM or fewer
MIN_ALPHA = 0.12
HEXBIN_GRID = 40  # hexagons across the x axis


@dataclass(frozen=True)
class ScatterStyle:
    """How a scatter of n points shows density: `points` with this alpha and size, or `hexbin`."""

    kind: str  # "points" or "hexbin"
    alpha: float
    size: float


def scatter_style(n: int) -> ScatterStyle:
    """Opaque-ish points for a few, fading points (alpha ~ 1/sqrt(n)) for hundreds, a hexbin for thousands."""
    if n > HEXBIN_FROM:
        return ScatterStyle("hexbin", 1.0, 0.0)
    if n <= ALPHA_FROM:
        return ScatterStyle("points", POINT_ALPHA, 14.0)
    return ScatterStyle("points", max(MIN_ALPHA, POINT_ALPHA * (ALPHA_FROM / n) ** 0.5), 8.0)


def _density(figure: Figure, axes, x: np.ndarray, y: np.ndarray) -> str:
    """Draw x against y as scatter_style says; returns a note for the axis label ("" for plain points)."""
    style = scatter_style(int(x.size))
    if style.kind == "hexbin":
        cells = axes.hexbin(x, y, gridsize=HEXBIN_GRID, mincnt=1, cmap="Blues", bins="log", linewidths=0.2)
        bar = figure.colorbar(cells, ax=axes, shrink=0.85, label="post-edits per hexagon")
        bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))  # 1, 10, 100: no mathtext
        bar.ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        return f"{x.size:,} points, binned"
    axes.scatter(x, y, s=style.size, alpha=style.alpha, linewidths=0, color="#2458a6")
    return ""


def sample_indices(n: int, limit: int = MAX_POINTS, seed: int = 0) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def _render(build, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}: choose one of {', '.join(FORMATS)}")
    with matplotlib.rc_context(STYLE):
        figure = build()
        buffer = io.BytesIO()
        figure.savefig(
            buffer,
            format=fmt,
            dpi=150 if fmt == "png" else 72,
            bbox_inches="tight",
            metadata={"Date": None} if fmt == "svg" else None,
        )
    return buffer.getvalue()


def scatter_figure(
    x: np.ndarray, y: np.ndarray, *, fit: LineFit | None, title: str, xlabel: str, ylabel: str
) -> Figure:
    """Every point (faded or binned by their number: scatter_style), the least-squares line and its 95% band."""
    figure = Figure(figsize=(4.6 if x.size > HEXBIN_FROM else 4.2, 3.2))
    axes = figure.add_subplot()
    note = _density(figure, axes, x, y)
    if fit is not None:
        grid = np.linspace(float(x.min()), float(x.max()), 100)
        low, high = fit.band(grid)
        axes.fill_between(grid, low, high, color="#d9822b", alpha=0.3, linewidth=0, label="95% CI")
        axes.plot(grid, fit.predict(grid), color="#d9822b", linewidth=1.5, label="least squares")
        axes.legend(loc="upper left", frameon=False)
    axes.set_title(title)
    axes.set_xlabel(f"{xlabel}\n{note}" if note else xlabel)
    axes.set_ylabel(ylabel)
    return figure


def scatter(
    x: np.ndarray, y: np.ndarray, *, fit: LineFit | None, title: str, xlabel: str, ylabel: str, fmt: str = "svg"
) -> bytes:
    """scatter_figure as SVG or PNG bytes."""
    return _render(lambda: scatter_figure(x, y, fit=fit, title=title, xlabel=xlabel, ylabel=ylabel), fmt)


def heatmap(names: Sequence[str], values: Sequence[Sequence[float | None]], *, title: str, fmt: str = "svg") -> bytes:
    """The metric x metric Pearson matrix, annotated; blank where undefined."""

    def build() -> Figure:
        n = len(names)
        size = max(3.0, 0.45 * n + 1.6)
        figure = Figure(figsize=(size + 0.8, size))
        axes = figure.add_subplot()
        matrix = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float).reshape(n, n)
        image = axes.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
        axes.set_xticks(range(n), labels=list(names), rotation=60, ha="right")
        axes.set_yticks(range(n), labels=list(names))
        for i in range(n):
            for j in range(n):
                if np.isfinite(matrix[i, j]):
                    colour = "white" if abs(matrix[i, j]) > 0.6 else "black"
                    axes.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour)
        figure.colorbar(image, ax=axes, shrink=0.8, label="Pearson r")
        axes.set_title(title)
        return figure

    return _render(build, fmt)


def predicted_vs_measured(
    measured: np.ndarray, predicted: np.ndarray, *, title: str, label: str, fmt: str = "svg"
) -> bytes:
    """The effort model's out-of-fold predictions against the measured effort, with y = x."""

    def build() -> Figure:
        figure = Figure(figsize=(4.2, 3.6))
        axes = figure.add_subplot()
        _density(figure, axes, measured, predicted)
        if measured.size:
            low = float(min(measured.min(), predicted.min()))
            high = float(max(measured.max(), predicted.max()))
            axes.plot([low, high], [low, high], color="#555", linewidth=1, linestyle="--", label="predicted = measured")
            axes.legend(loc="upper left", frameon=False)
        axes.set_title(title)
        axes.set_xlabel(f"measured {label}")
        axes.set_ylabel(f"predicted {label} (out of fold)")
        return figure

    return _render(build, fmt)


def idle_sensitivity(
    thresholds_s: Sequence[float], series: Mapping[str, Sequence[float | None]], *, title: str, fmt: str = "svg"
) -> bytes:
    """Pearson r of each metric with active time, against the idle threshold (log scale)."""

    def build() -> Figure:
        figure = Figure(figsize=(5.2, 3.4))
        axes = figure.add_subplot()
        for name, values in series.items():
            ys = np.array([np.nan if v is None else v for v in values], dtype=float)
            axes.plot(thresholds_s, ys, marker="o", markersize=3, linewidth=1.2, label=name)
        axes.set_xscale("log")
        axes.set_xticks(list(thresholds_s), labels=[f"{s:g}" for s in thresholds_s])
        axes.minorticks_off()
        axes.set_xlabel("idle threshold (s)")
        axes.set_ylabel("Pearson r with active time")
        axes.set_title(title)
        if series:
            axes.legend(loc="best", frameon=False, fontsize=7)
        return figure

    return _render(build, fmt)


def condition_distributions(
    groups: dict[str, np.ndarray],
    *,
    title: str,
    ylabel: str,
    means: dict[str, tuple[float, float] | None] | None = None,
    fmt: str = "svg",
) -> bytes:
    """One box per condition (quartiles, whiskers at 1.5 IQR) over its jittered points, the mean as a
    diamond with its 95% interval when given (condition -> (low, high))."""

    def build() -> Figure:
        names = list(groups)
        figure = Figure(figsize=(max(3.6, 1.1 * len(names) + 1.8), 3.4))
        axes = figure.add_subplot()
        values = [np.asarray(groups[name], dtype=float) for name in names]
        rng = np.random.default_rng(0)
        for position, ys in enumerate(values, start=1):
            shown = ys[sample_indices(ys.size, limit=MAX_POINTS // max(len(names), 1))]
            xs = position + rng.uniform(-0.18, 0.18, shown.size)
            axes.scatter(xs, shown, s=5, alpha=0.3, linewidths=0, color="#2458a6")
        if any(v.size for v in values):
            axes.boxplot(
                [v if v.size else np.array([np.nan]) for v in values],
                positions=range(1, len(names) + 1),
                widths=0.5,
                showfliers=False,
                medianprops={"color": "#d9822b", "linewidth": 1.5},
            )
        for position, (name, ys) in enumerate(zip(names, values, strict=True), start=1):
            if not ys.size:
                continue
            interval = (means or {}).get(name)
            axes.plot([position], [float(ys.mean())], marker="D", markersize=5, color="#a33", zorder=3)
            if interval is not None:
                axes.plot([position, position], list(interval), color="#a33", linewidth=2, zorder=3)
        axes.set_xticks(
            range(1, len(names) + 1),
            labels=[f"{name}\n(n = {v.size:,})" for name, v in zip(names, values, strict=True)],
        )
        axes.set_ylabel(ylabel)
        axes.set_title(title)
        return figure

    return _render(build, fmt)
