"""Scatter plots show density: points fade with their number, thousands are binned into hexagons."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.collections import PathCollection, PolyCollection

from metrics import plots
from metrics.analysis.correlation import fit_line


def _points(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.gamma(2.0, 5.0, n)
    return x, 3.0 * x + rng.normal(0, 4.0, n)


def _figure(n: int):
    x, y = _points(n)
    return plots.scatter_figure(x, y, fit=None, title="t", xlabel="compression", ylabel="keystrokes")


def _marks(figure) -> list:
    return [c for c in figure.axes[0].collections if isinstance(c, PathCollection | PolyCollection)]


def test_a_few_points_are_drawn_nearly_opaque():
    (points,) = _marks(_figure(plots.ALPHA_FROM))
    assert isinstance(points, PathCollection)
    assert points.get_alpha() == plots.POINT_ALPHA
    assert len(points.get_offsets()) == plots.ALPHA_FROM


def test_hundreds_of_points_fade_with_their_number_and_every_point_is_drawn():
    alphas = []
    for n in (plots.ALPHA_FROM + 1, (plots.ALPHA_FROM + plots.HEXBIN_FROM) // 2, plots.HEXBIN_FROM):
        (points,) = _marks(_figure(n))
        assert isinstance(points, PathCollection) and len(points.get_offsets()) == n
        alphas.append(points.get_alpha())
    assert all(alpha < plots.POINT_ALPHA for alpha in alphas)
    assert alphas == sorted(alphas, reverse=True) and len(set(alphas)) == len(alphas)


def test_thousands_of_points_become_a_hexbin_that_counts_every_one():
    n = 3 * plots.HEXBIN_FROM
    figure = _figure(n)
    (cells,) = _marks(figure)
    assert isinstance(cells, PolyCollection) and not isinstance(cells, PathCollection)
    counts = np.asarray(cells.get_array())  # the count per hexagon (bins="log" is a LogNorm on the colours)
    assert round(float(counts.sum())) == n
    assert any(ax.get_ylabel() == "post-edits per hexagon" for ax in figure.axes[1:])  # the colour bar says so
    assert f"{n:,} points, binned" in figure.axes[0].get_xlabel()


@given(n=st.integers(0, 20 * plots.HEXBIN_FROM))
def test_the_style_is_hexbin_exactly_above_the_threshold_and_alpha_stays_in_range(n):
    style = plots.scatter_style(n)
    assert (style.kind == "hexbin") == (n > plots.HEXBIN_FROM)
    assert plots.MIN_ALPHA <= style.alpha <= 1
    assert (style.alpha < 1) == (style.kind == "points")


@pytest.mark.parametrize("n", [plots.ALPHA_FROM, plots.HEXBIN_FROM + 1])
def test_the_svg_keeps_the_fit_line_and_its_band_over_the_density(n):
    x, y = _points(n)
    fit = fit_line(x, y)
    assert fit is not None
    svg = plots.scatter(x, y, fit=fit, title="compression", xlabel="compression", ylabel="keystrokes").decode()
    assert "least squares" in svg and "95% CI" in svg and "keystrokes" in svg
    assert ("post-edits per hexagon" in svg) == (n > plots.HEXBIN_FROM)
    assert "mathdefault" not in svg  # the colour bar's ticks are plain numbers (mathtext is off)
