"""The process graph (annotations/process/graph.py) as a PNG image, drawn with matplotlib (Agg): the same
three series over the same time axis as the SVG, for those whose tools take no SVG (pure; no Django).

The figure is a matplotlib.figure.Figure (no pyplot state shared between requests), mathtext off; it
holds numbers and the series' names only, never a text of the log.
"""

import io
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from annotations.process.graph import HEIGHT, SERIES, WIDTH, graph_points
from annotations.process.trace import Trace

matplotlib.use("Agg")

DPI = 100  # WIDTH x HEIGHT pixels, as the SVG's viewBox
STYLE: dict[RcKeyType, Any] = {"text.parse_math": False, "text.usetex": False, "font.size": 9}


def process_graph_figure(trace: Trace) -> Figure:
    """The graph as a matplotlib figure: one line per series (produced, text, cursor), in SERIES order."""
    points = graph_points(trace)
    figure = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    for name, colour in SERIES:
        axes.plot(points.seconds, getattr(points, name), color=colour, linewidth=1.2, label=name)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("characters")
    axes.set_xlim(left=0, right=max(points.seconds, default=0.0) or 1.0)
    axes.set_ylim(bottom=0)
    axes.legend(loc="upper left", ncols=len(SERIES), frameon=False)
    return figure


def process_graph_png(trace: Trace) -> bytes:
    """The graph as PNG bytes, WIDTH x HEIGHT pixels."""
    with matplotlib.rc_context(STYLE):
        figure = process_graph_figure(trace)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
