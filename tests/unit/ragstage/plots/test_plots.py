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
    funnel_counts,
    funnel_plot,
    interval_plot,
    interval_rows,
    lost_bars,
    power_plot,
    stage_bars,
    stage_shares,
)
from ragstage.stats import interval_coverage

COUNTS = {
    "BM25": {"retrieval": 30, "reranking": 20, "prompt_assembly": 40, "generation": 111, "none": 99},
    "MiniLM + reranker": {"retrieval": 22, "reranking": 31, "prompt_assembly": 40, "generation": 100, "none": 107},
}


def test_every_bucket_has_a_colour_and_a_label():
    assert set(BUCKET_COLOURS) == set(BUCKETS) == set(STAGE_LABELS)
    assert len(set(BUCKET_COLOURS.values())) == len(BUCKETS)


def widths(ax) -> list[float]:
    return [p.get_width() for p in ax.containers[0].patches]


def whiskers(ax) -> list[tuple[float, float]]:
    segments = ax.containers[1].lines[2][0].get_segments()
    return [(seg[0][0], seg[1][0]) for seg in segments]


def test_stage_bars_show_each_share_with_its_wilson_interval():
    fig = stage_bars(table_from_counts(COUNTS))
    assert isinstance(fig, Figure)
    bm25, minilm = fig.axes[:2]
    assert [t.get_text() for t in bm25.get_yticklabels()] == [STAGE_LABELS[s] for s in
                                                              ["retrieval", "reranking", "prompt_assembly",
                                                               "generation", "none"]]
    assert widths(bm25) == pytest.approx([30 / 300, 20 / 300, 40 / 300, 111 / 300, 99 / 300])
    assert widths(minilm)[-1] == pytest.approx(107 / 300)
    assert whiskers(bm25)[0] == pytest.approx(wilson(30, 300))
    assert whiskers(minilm)[3] == pytest.approx(wilson(100, 300))
    assert bm25.get_title() == "BM25 (n=300)"
    assert minilm.containers[1].get_label() == "MiniLM + reranker Wilson 95%"
    assert "111/300" in [t.get_text() for t in bm25.texts]
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in bm25.containers[0].patches]
    assert colours[0] == BUCKET_COLOURS["retrieval"] and colours[-1] == BUCKET_COLOURS["none"]


def test_five_cases_read_as_five_wide_intervals():
    counts = {"hand": {s: 1 for s in ["retrieval", "reranking", "prompt_assembly", "generation", "none"]}}
    ax = stage_bars(table_from_counts(counts)).axes[0]
    assert whiskers(ax) == [pytest.approx(wilson(1, 5))] * 5
    assert wilson(1, 5)[1] > 0.6  # one case in five says the share is anywhere up to 62%


def test_stage_bars_counts_group_order_and_missing_buckets():
    counts = {"a": {"retrieval": 3, "none": 7}, "b": {"none": 4}}
    fig = stage_bars(table_from_counts(counts), value="count", groups=["b", "a"], show_n=False, title="t")
    b, a = fig.axes[:2]
    assert b.get_title() == "b" and a.get_title() == "a"
    assert widths(b) == [0, 4] and widths(a) == [3, 7]
    assert whiskers(a)[0] == pytest.approx(tuple(10 * x for x in wilson(3, 10)))
    assert fig.get_suptitle() == "t"
    shares = stage_shares(table_from_counts(counts))
    assert shares[shares.group == "b"][["stage", "count", "n"]].values.tolist() == [["retrieval", 0, 4],
                                                                                    ["none", 4, 4]]


def test_stage_bars_rejects_bad_input():
    with pytest.raises(ValueError):
        stage_bars(table_from_counts(COUNTS), value="rate")
    with pytest.raises(ValueError):
        stage_bars(pd.DataFrame({"group": ["a"]}))
    with pytest.raises(ValueError):
        stage_bars(table_from_counts(COUNTS), groups=["nope"])
    with pytest.raises(ValueError, match="one group"):
        stage_bars(table_from_counts(COUNTS), ax=Figure().add_subplot())


def test_stage_bars_draws_one_group_into_a_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    assert stage_bars(table_from_counts(COUNTS), groups=["BM25"], ax=ax) is fig
    assert widths(ax)[0] == pytest.approx(0.1)


def test_many_panels_wrap_three_to_a_row():
    counts = {f"g{i}": {"none": i + 1} for i in range(5)}
    fig = stage_bars(table_from_counts(counts))
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5 and len(fig.axes) == 6


def test_lost_bars_stack_only_the_lost_questions():
    fig = lost_bars(table_from_counts(COUNTS))
    ax = fig.axes[0]
    got = {c.get_label(): [p.get_width() for p in c.patches] for c in ax.containers}
    assert list(got) == ["retrieval", "reranking", "prompt_assembly", "generation"]
    assert got["generation"] == [111, 100]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["BM25\n201 of 300 lost",
                                                            "MiniLM + reranker\n193 of 300 lost"]
    assert "111" in [t.get_text() for t in ax.texts]


def test_funnel_plot_rates_and_counts():
    f = funnel_from_counts(COUNTS)
    fig = funnel_plot(f)
    rates, counts = fig.axes[:2]
    assert [t.get_text() for t in counts.get_xticklabels()] == ["retrieval", "reranking", "prompt\nassembly",
                                                               "generation"]
    series = [c for c in rates.containers]
    assert len(series) == 2
    want = f[f["group"] == "MiniLM + reranker"]
    assert np.allclose(series[1].lines[0].get_ydata(), want["rate"].to_numpy())
    assert "107/207" in [t.get_text() for t in rates.texts]
    bars = {c.get_label(): [p.get_height() for p in c.patches] for c in counts.containers}
    assert bars["MiniLM + reranker: entered"] == want["entered"].tolist()
    assert bars["MiniLM + reranker: survived"] == want["survived"].tolist()
    assert bars["BM25: entered"][0] == 300
    assert "107 of 207" in [t.get_text() for t in counts.texts]
    assert len(funnel_plot(f, counts=False).axes) == 1
    with pytest.raises(ValueError):
        funnel_plot(pd.DataFrame({"group": []}))


def test_funnel_counts_alone():
    f = funnel_from_counts({"x": {"retrieval": 2, "generation": 1, "none": 7}})
    ax = funnel_counts(f, title="t").axes[0]
    bars = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}
    assert bars == {"x: entered": [10, 8, 8, 8], "x: survived": [8, 8, 8, 7]}
    assert ax.get_title() == "t"


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


def test_power_plot_draws_each_curve_exact_and_normal_with_the_target_and_the_run_size():
    from ragstage import power_curve

    sizes = range(10, 301, 10)
    curves = {"minilm": power_curve(sizes, 0.12, 0.03), "bm25": power_curve(sizes, 0.05, 0.03)}
    fig = power_plot(curves, target=0.8, n_now=100)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert np.allclose(lines["minilm: exact"].get_ydata(), curves["minilm"]["exact"])
    assert np.allclose(lines["bm25: normal approximation"].get_ydata(), curves["bm25"]["normal"])
    assert lines["bm25: normal approximation"].get_linestyle() == "--"
    assert list(lines["target power 80%"].get_ydata()) == [0.8, 0.8]
    assert list(lines["this run: 100 questions"].get_xdata()) == [100, 100]
    assert ax.get_ylim() == (0, 1)
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().y1 < ax.get_window_extent().y0  # below the axes: it covers no line
    assert [t.get_text() for t in legend.get_texts()] == [
        "minilm", "bm25", "target power 80%", "this run: 100 questions",
        "solid: exact test", "dashed: normal approximation"]


@pytest.mark.parametrize("bad, message", [({}, "nothing to plot"),
                                           ({"x": pd.DataFrame({"n": [1], "exact": [0.1]})}, "lacks column"),
                                           ])
def test_power_plot_refuses_what_is_not_a_power_curve(bad, message):
    with pytest.raises(ValueError, match=message):
        power_plot(bad)


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
