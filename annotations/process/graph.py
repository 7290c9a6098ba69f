"""The process graph of a post-edit, as Inputlog draws it: characters produced, characters in the text
and the cursor position over time, as an SVG document (pure; numbers only, no text of the log).

Time runs over the page loads one after another (each from its first action to its last). After every
action: produced = the start text's characters plus those produced so far (docs/process.md); in the
text = the start text's characters plus those inserted minus those deleted so far; cursor = where the
action's last change left the caret (UTF-16 units, as the browser counts them).
"""

from dataclasses import dataclass

from annotations.process.trace import Trace

WIDTH, HEIGHT, MARGIN = 720, 300, 48
SERIES = (("produced", "#1f77b4"), ("text", "#2ca02c"), ("cursor", "#d62728"))


@dataclass(frozen=True)
class GraphPoints:
    seconds: list[float]
    produced: list[int]
    text: list[int]
    cursor: list[int]


def graph_points(trace: Trace) -> GraphPoints:
    seconds: list[float] = []
    produced: list[int] = []
    text: list[int] = []
    cursor: list[int] = []
    made = length = len(trace.start_text)
    caret = 0
    offset = page_start = last = 0.0
    for action in trace.actions:
        if action.gap_ms is None:  # a new page load starts where the previous one ended
            offset, page_start = last, action.t_ms
        last = max(last, offset + action.t_ms - page_start)
        for change in action.changes:
            made += change.produced
            length += -change.size if change.deletion else change.size
            caret = change.start if change.deletion else change.start + change.units
        seconds.append(last / 1000.0)
        produced.append(made)
        text.append(length)
        cursor.append(caret)
    return GraphPoints(seconds=seconds, produced=produced, text=text, cursor=cursor)


def _ticks(high: float) -> list[float]:
    """About five round tick values from 0 to high."""
    if high <= 0:
        return [0.0]
    step = 10 ** len(str(int(high / 5))) / 10 if high >= 5 else 1.0
    for factor in (1, 2, 5, 10):
        if high / (step * factor) <= 6:
            step *= factor
            break
    return [step * i for i in range(int(high / step) + 1)]


def process_graph_svg(trace: Trace) -> str:
    """The graph as a standalone SVG document."""
    points = graph_points(trace)
    right = max(points.seconds, default=0.0) or 1.0
    top = max([*points.produced, *points.text, *points.cursor, 1])
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def x(value: float) -> float:
        return MARGIN + value / right * plot_w

    def y(value: float) -> float:
        return HEIGHT - MARGIN - value / top * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="11" role="img" aria-label="process graph">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<path d="M{MARGIN},{MARGIN}V{HEIGHT - MARGIN}H{WIDTH - MARGIN}" stroke="black" fill="none"/>',
    ]
    for tick in _ticks(right):
        parts.append(f'<text x="{x(tick):.1f}" y="{HEIGHT - MARGIN + 14}" text-anchor="middle">{tick:g}</text>')
    for tick in _ticks(top):
        parts.append(f'<text x="{MARGIN - 4}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle">time (s)</text>')
    parts.append(f'<text x="12" y="{HEIGHT / 2}" transform="rotate(-90 12 {HEIGHT / 2})" text-anchor="middle">'
                 "characters</text>")  # fmt: skip
    for index, (name, colour) in enumerate(SERIES):
        values = getattr(points, name)
        if values:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(points.seconds, values, strict=True))
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.2"/>')
        legend_x = MARGIN + 10 + index * 110
        parts.append(f'<rect x="{legend_x}" y="14" width="12" height="3" fill="{colour}"/>')
        parts.append(f'<text x="{legend_x + 16}" y="19">{name}</text>')
    parts.append("</svg>")
    return "".join(parts)
