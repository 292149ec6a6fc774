"""The figures carry the numbers they were given: bar widths, labels, interval segments."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from ragstage import funnel_from_counts, normal_interval, table_from_counts, wilson
from ragstage.attribution import BUCKETS
from ragstage.plots import (
    BUCKET_COLOURS,
    STAGE_LABELS,
    coverage_plot,
    funnel_plot,
    interval_plot,
    interval_rows,
    stage_bars,
)
from ragstage.stats import interval_coverage

COUNTS = {
    "BM25": {"retrieval": 30, "reranking": 20, "prompt_assembly": 40, "generation": 111, "none": 99},
    "MiniLM + reranker": {"retrieval": 22, "reranking": 31, "prompt_assembly": 40, "generation": 100, "none": 107},
}


def bars(fig: Figure) -> dict[str, list[float]]:
    ax = fig.axes[0]
    return {c.get_label(): [p.get_width() for p in c.patches] for c in ax.containers}


def test_every_bucket_has_a_colour_and_a_label():
    assert set(BUCKET_COLOURS) == set(BUCKETS) == set(STAGE_LABELS)
    assert len(set(BUCKET_COLOURS.values())) == len(BUCKETS)


def test_stage_bars_stack_shares_in_walk_order():
    fig = stage_bars(table_from_counts(COUNTS))
    assert isinstance(fig, Figure)
    got = bars(fig)
    assert list(got) == ["retrieval", "reranking", "prompt_assembly", "generation", "none"]
    assert got["none"] == pytest.approx([99 / 300, 107 / 300])
    assert got["retrieval"] == pytest.approx([0.1, 22 / 300])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["BM25 (n=300)", "MiniLM + reranker (n=300)"]
    # each segment starts where the previous one ended; each bar sums to one
    lefts = [c.patches[0].get_x() for c in ax.containers]
    assert lefts[1] == pytest.approx(0.1)
    ends = [c.patches[0].get_x() + c.patches[0].get_width() for c in ax.containers]
    assert ends[-1] == pytest.approx(1.0)
    colours = [matplotlib.colors.to_hex(c.patches[0].get_facecolor()) for c in ax.containers]
    assert colours == [BUCKET_COLOURS[s] for s in got]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == STAGE_LABELS["retrieval"]


def test_stage_bars_counts_vertical_and_group_order():
    fig = stage_bars(table_from_counts(COUNTS), value="count", horizontal=False,
                     groups=["MiniLM + reranker", "BM25"], show_n=False, title="t")
    ax = fig.axes[0]
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}
    assert heights["none"] == [107, 99]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["MiniLM + reranker", "BM25"]
    assert ax.get_title() == "t"


def test_stage_bars_rejects_bad_input():
    with pytest.raises(ValueError):
        stage_bars(table_from_counts(COUNTS), value="rate")
    with pytest.raises(ValueError):
        stage_bars(pd.DataFrame({"group": ["a"]}))
    with pytest.raises(ValueError):
        stage_bars(table_from_counts(COUNTS), groups=["nope"])


def test_stage_bars_draws_into_a_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    assert stage_bars(table_from_counts(COUNTS), ax=ax) is fig


def test_funnel_plot_points_and_whiskers():
    f = funnel_from_counts(COUNTS)
    fig = funnel_plot(f)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["retrieval", "reranking", "prompt\nassembly",
                                                            "generation"]
    series = [c for c in ax.containers]
    assert len(series) == 2
    ys = series[1].lines[0].get_ydata()
    want = f[f["group"] == "MiniLM + reranker"]["rate"].to_numpy()
    assert np.allclose(ys, want)
    notes = [t.get_text() for t in ax.texts]
    assert "107/207" in notes
    with pytest.raises(ValueError):
        funnel_plot(pd.DataFrame({"group": []}))


def test_interval_rows_accepts_three_shapes():
    a = interval_rows({"x": (11, 15)})
    b = interval_rows([("x", 11, 15)])
    c = interval_rows(pd.DataFrame({"label": ["x"], "count": [11], "n": [15]}))
    for rows in (a, b, c):
        assert rows.loc[0, ["wilson_low", "wilson_high"]].tolist() == pytest.approx(wilson(11, 15))
        assert rows.loc[0, ["normal_low", "normal_high"]].tolist() == pytest.approx(normal_interval(11, 15))
    t = interval_rows(table_from_counts(COUNTS))
    assert t.loc[0, "label"] == "BM25 · retrieval"
    with pytest.raises(ValueError):
        interval_rows(pd.DataFrame({"x": [1]}))


def test_interval_plot_segments_match_the_intervals():
    fig = interval_plot({"11 of 15": (11, 15), "99 of 300": (99, 300)}, normal=True)
    ax = fig.axes[0]
    colls = {c.get_label(): c for c in ax.collections}
    w = colls["Wilson 95%"].get_segments()
    nrm = colls["normal 95%"].get_segments()
    assert [w[0][0][0], w[0][1][0]] == pytest.approx(wilson(11, 15))
    assert [nrm[0][0][0], nrm[0][1][0]] == pytest.approx(normal_interval(11, 15))
    assert [w[1][0][0], w[1][1][0]] == pytest.approx(wilson(99, 300))
    assert ax.get_xlim()[1] > normal_interval(11, 15)[1]  # the overshoot past 1 is visible
    assert [t.get_text() for t in ax.get_yticklabels()] == ["11 of 15", "99 of 300"]


def test_interval_plot_wilson_only():
    fig = interval_plot([("a", 0, 10)])
    labels = [c.get_label() for c in fig.axes[0].collections]
    assert labels == ["Wilson 95%"]
    assert fig.axes[0].get_xlim() == pytest.approx((-0.02, 1.02))
    with pytest.raises(ValueError):
        interval_plot({})


def test_coverage_plot_lines():
    cov = interval_coverage([10, 30], [0.5, 0.9], reps=500, seed=1)
    fig = coverage_plot(cov)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert "wilson, p=0.50" in labels and "normal, p=0.90" in labels
    line = ax.lines[labels.index("normal, p=0.90")]
    want = cov[(cov.method == "normal") & (cov.p == 0.9)].sort_values("n")["coverage"].to_numpy()
    assert np.allclose(line.get_ydata(), want)
    fig = coverage_plot(cov, x="p")
    assert "wilson, n=10" in [line.get_label() for line in fig.axes[0].lines]
    with pytest.raises(ValueError):
        coverage_plot(cov, x="k")
