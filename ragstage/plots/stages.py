"""Where the questions went, per group: bucket shares with intervals, lost questions, the funnel.

* :func:`stage_bars`: each bucket's share of a group's questions with its 95% Wilson interval
  (one panel per group), so five cases read as five wide intervals, not five exact fifths.
* :func:`lost_bars`: the questions each group lost, stacked by the stage that lost them.
* :func:`funnel_plot` / :func:`funnel_counts`: each stage's survival rate over its own
  denominator, and how many questions entered and survived each stage.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from ..attribution import BUCKETS, RIGHT
from ..stats import wilson
from ._figure import new_axes, new_figure
from ._style import BUCKET_COLOURS, STAGE_LABELS, plain

__all__ = ["stage_shares", "stage_bars", "lost_bars", "funnel_plot", "funnel_counts", "FUNNEL_STAGES"]

#: The funnel's stages in the order the evidence passes them.
FUNNEL_STAGES = ("query_understanding", "retrieval", "reranking", "prompt_assembly", "generation")
_PANELS_PER_ROW = 3


def _group_order(table: pd.DataFrame, groups: Sequence[str] | None) -> list[str]:
    order = list(groups) if groups is not None else list(dict.fromkeys(table["group"]))
    unknown = set(order) - set(table["group"])
    if unknown:
        raise ValueError(f"no rows for group(s) {sorted(unknown)}")
    return order


def stage_shares(table: pd.DataFrame, groups: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (group, bucket) in walk order: ``count``, ``n``, ``share`` and its Wilson ``low``/``high``.

    ``table`` is an attribution table (:func:`ragstage.report.attribution_table` or
    :func:`~ragstage.report.table_from_counts`; columns ``group``, ``stage``, ``count``).
    ``n`` is the group's number of questions; buckets no group uses are left out, and a bucket
    one group uses gets a zero row in the others, so every panel lists the same buckets.
    """
    missing = {"group", "stage", "count"} - set(table.columns)
    if missing:
        raise ValueError(f"table lacks column(s) {sorted(missing)}: pass an attribution table")
    order = _group_order(table, groups)
    wide = table.pivot_table(index="group", columns="stage", values="count", aggfunc="sum", fill_value=0)
    wide = wide.reindex(index=order, fill_value=0)
    stages = [s for s in BUCKETS if s in wide.columns and wide[s].sum() > 0]
    rows = []
    for group in order:
        n = int(wide.loc[group].sum())
        for stage in stages:
            k = int(wide.loc[group, stage])
            low, high = wilson(k, n) if n else (float("nan"), float("nan"))
            rows.append((group, stage, k, n, k / n if n else float("nan"), low, high))
    return pd.DataFrame(rows, columns=["group", "stage", "count", "n", "share", "low", "high"])


def stage_bars(table: pd.DataFrame, *, value: str = "share", groups: Sequence[str] | None = None,
               show_n: bool = True, title: str | None = None, ax: Any = None) -> Any:
    """Each bucket's share of a group's questions, with its 95% Wilson interval: one panel per group.

    ``table`` is an attribution table (see :func:`stage_shares`). Bars are the buckets in walk
    order, coloured as everywhere in the workbook; each carries its whisker (the Wilson
    interval) and its ``count/n``. ``value="count"`` draws counts, the whisker scaled to
    counts (``n`` times the interval). ``groups`` fixes the panels' order (default: the
    table's); panels wrap three to a row. With ``show_n`` a panel's title says its ``n``.
    ``ax`` draws a single group into axes of your own. Each panel's bar container is labelled
    with its group and its error bar container with ``"<group> Wilson 95%"``.
    """
    if value not in ("share", "count"):
        raise ValueError(f"value must be 'share' or 'count', got {value!r}")
    data = stage_shares(table, groups)
    order = list(dict.fromkeys(data["group"])) if not data.empty else _group_order(table, groups)
    stages = list(dict.fromkeys(data["stage"]))
    if ax is not None and len(order) != 1:
        raise ValueError(f"ax= takes one group; this table has {len(order)}: pass groups=[...] or no ax")
    if ax is not None:
        fig, axes = ax.figure, [ax]
    else:
        cols = min(len(order), _PANELS_PER_ROW)
        rows = -(-len(order) // cols)
        panel_h = 0.55 + 0.32 * len(stages)
        fig = new_figure((2.2 + 3.0 * cols, 0.5 * bool(title) + rows * panel_h + 0.5))
        grid = fig.subplots(rows, cols, squeeze=False, sharey=True)
        axes = [a for row in grid for a in row]
        for spare in axes[len(order):]:
            spare.set_visible(False)
    scale_max = 0.0
    for panel, group in zip(axes, order):
        part = data[data["group"] == group].set_index("stage").reindex(stages)
        n = int(part["n"].iloc[0]) if len(part) else 0
        scale = 1.0 if value == "share" else float(n)
        mids = (part["share"] * scale).tolist()
        lows, highs = (part["low"] * scale).tolist(), (part["high"] * scale).tolist()
        ys = list(range(len(stages)))
        panel.barh(ys, mids, height=0.65, color=[BUCKET_COLOURS[s] for s in stages], label=str(group))
        panel.errorbar(mids, ys, xerr=[[m - lo for m, lo in zip(mids, lows)], [hi - m for m, hi in zip(mids, highs)]],
                       fmt="none", ecolor="black", elinewidth=1, capsize=3, label=f"{group} Wilson 95%")
        for y, hi, k in zip(ys, highs, part["count"]):
            panel.annotate(f"{int(k)}/{n}", (hi, y), textcoords="offset points", xytext=(4, 0), va="center",
                           fontsize="x-small")
        panel.set_title(f"{plain(group)} (n={n})" if show_n else plain(group), fontsize="medium")
        panel.set_yticks(ys, [STAGE_LABELS[s] for s in stages])
        panel.set_ylim(len(stages) - 0.5, -0.5)
        scale_max = max(scale_max, max(highs, default=0.0))
        panel.set_xlabel("share of questions" if value == "share" else "questions")
    for panel in axes[:len(order)]:
        if value == "share":
            panel.set_xlim(0, 1.22)
            panel.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        else:
            panel.set_xlim(0, max(1.0, scale_max) * 1.25)
    if title:
        (fig.suptitle if ax is None else axes[0].set_title)(title)
    return fig


def lost_bars(table: pd.DataFrame, *, groups: Sequence[str] | None = None, title: str | None = None,
              ax: Any = None) -> Any:
    """Where each group's lost questions went: one stacked bar of counts per group, one segment per stage.

    Only the questions a group did not get right are drawn (everything but ``none`` and
    ``correct_refusal``), each segment in its bucket's colour with its count written in it when
    it is wide enough; the bar's label says how many of the group's questions were lost. Each
    segment container is labelled with its bucket, so ``ax.containers`` reads back the counts.
    """
    data = stage_shares(table, groups)
    order = list(dict.fromkeys(data["group"]))
    lost = data[~data["stage"].isin(RIGHT)]
    stages = list(dict.fromkeys(lost["stage"]))
    wide = lost.pivot_table(index="group", columns="stage", values="count", aggfunc="sum", fill_value=0)
    wide = wide.reindex(index=order, columns=stages, fill_value=0)
    totals = wide.sum(axis=1)
    sizes = data.groupby("group")["n"].first()
    fig, ax = new_axes(ax, (8.5, max(2.2, 1.1 + 0.5 * len(order))))
    ys = list(range(len(order)))
    base = [0.0] * len(order)
    widest = max(1.0, float(totals.max()) if len(totals) else 1.0)
    for stage in stages:
        vals = [float(v) for v in wide[stage]]
        bars = ax.barh(ys, vals, left=base, height=0.6, color=BUCKET_COLOURS[stage], label=stage,
                       edgecolor="white", linewidth=0.6)
        for bar, v in zip(bars, vals):
            if v and v / widest >= 0.04:
                ax.text(bar.get_x() + v / 2, bar.get_y() + bar.get_height() / 2, f"{int(v)}", ha="center",
                        va="center", fontsize="x-small", color="white" if stage in ("retrieval", "generation",
                                                                                   "query_understanding") else "black")
        base = [b + v for b, v in zip(base, vals)]
    ax.set_yticks(ys, [f"{plain(g)}\n{int(totals[g])} of {int(sizes[g])} lost" for g in order])
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xlim(0, widest * 1.02)
    ax.set_xlabel("questions lost")
    if stages:
        ax.legend([STAGE_LABELS[s] for s in stages], loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
                  fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def _funnel_parts(funnel: pd.DataFrame) -> tuple[list[str], list[str]]:
    missing = {"group", "stage", "entered", "survived", "rate", "low", "high"} - set(funnel.columns)
    if missing:
        raise ValueError(f"funnel lacks column(s) {sorted(missing)}: pass a funnel table")
    present = set(funnel["stage"])
    return [s for s in FUNNEL_STAGES if s in present], list(dict.fromkeys(funnel["group"]))


def _stage_ticks(ax: Any, order: list[str]) -> None:
    ax.set_xticks(range(len(order)), [s.replace("_", "\n") for s in order])


def _funnel_rates(ax: Any, funnel: pd.DataFrame, order: list[str], groups: list[str]) -> None:
    width = 0.6 / max(1, len(groups))
    for gi, group in enumerate(groups):
        rows = funnel[funnel["group"] == group].set_index("stage").reindex(order).dropna(subset=["rate"])
        xs = [order.index(s) - 0.3 + width * (gi + 0.5) for s in rows.index]
        rates = rows["rate"].astype(float).tolist()
        err = [[r - lo for r, lo in zip(rates, rows["low"])], [hi - r for r, hi in zip(rates, rows["high"])]]
        ax.errorbar(xs, rates, yerr=err, fmt="o", capsize=4, label=plain(group), color=f"C{gi}")
        if len(groups) > 2:
            continue  # the counts panel carries the numbers; side by side they would overlap
        for x, r, s, e in zip(xs, rates, rows["survived"], rows["entered"]):
            ax.annotate(f"{int(s)}/{int(e)}", (x, r), textcoords="offset points", xytext=(6, -3), fontsize="x-small")
    _stage_ticks(ax, order)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("survived, given it\nentered the stage")


def _funnel_bars(ax: Any, funnel: pd.DataFrame, order: list[str], groups: list[str]) -> None:
    width = 0.7 / max(1, len(groups))
    top = max(1, int(funnel["entered"].max()) if len(funnel) else 1)
    for gi, group in enumerate(groups):
        rows = funnel[funnel["group"] == group].set_index("stage").reindex(order).dropna(subset=["entered"])
        xs = [order.index(s) - 0.35 + width * (gi + 0.5) for s in rows.index]
        entered, survived = rows["entered"].astype(int).tolist(), rows["survived"].astype(int).tolist()
        ax.bar(xs, entered, width=width * 0.9, color="white", edgecolor=f"C{gi}", linewidth=1.2,
               label=f"{plain(group)}: entered")
        ax.bar(xs, survived, width=width * 0.9, color=f"C{gi}", alpha=0.75, label=f"{plain(group)}: survived")
        for x, e, s in zip(xs, entered, survived):
            ax.annotate(f"{s} of {e}", (x, e), textcoords="offset points", xytext=(0, 2), ha="center",
                        va="bottom", fontsize="x-small", rotation=90 if len(groups) > 2 else 0)
    _stage_ticks(ax, order)
    ax.set_ylim(0, top * (1.4 if len(groups) > 2 else 1.15))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("questions")
    from matplotlib.patches import Patch

    ax.legend([Patch(facecolor="white", edgecolor="#555555"), Patch(facecolor="#555555", alpha=0.75)],
              ["entered the stage", "survived it"], frameon=False, fontsize="small", loc="center left",
              bbox_to_anchor=(1.01, 0.5))


def funnel_counts(funnel: pd.DataFrame, *, title: str | None = None, ax: Any = None) -> Any:
    """How many questions entered each stage (outlined bar) and survived it (filled bar), per group.

    ``funnel`` is what :func:`ragstage.report.funnel` or :func:`~ragstage.report.funnel_from_counts`
    returns. Each pair is labelled ``"survived of entered"``. Bar containers are labelled
    ``"<group>: entered"`` and ``"<group>: survived"``; the group's colour is that of its points
    in :func:`funnel_plot`.
    """
    order, groups = _funnel_parts(funnel)
    fig, ax = new_axes(ax, (7.5, 3.6))
    _funnel_bars(ax, funnel, order, groups)
    if title:
        ax.set_title(title)
    return fig


def funnel_plot(funnel: pd.DataFrame, *, counts: bool = True, title: str | None = None, ax: Any = None) -> Any:
    """Conditional survival of each stage with Wilson whiskers, and (``counts``) the counts beneath.

    ``funnel`` is what :func:`ragstage.report.funnel` or :func:`~ragstage.report.funnel_from_counts`
    returns. The top panel puts one point per group and stage, labelled ``survived/entered``
    so the shrinking denominators stay visible; with ``counts`` (and no ``ax``) a second panel
    shows how many questions entered and survived each stage (:func:`funnel_counts`).
    """
    order, groups = _funnel_parts(funnel)
    if ax is not None or not counts:
        fig, ax = new_axes(ax, (7.5, 4.0))
        rates_ax = ax
    else:
        fig = new_figure((8.5, 6.4))
        rates_ax, counts_ax = fig.subplots(2, 1, sharex=True)
        _funnel_bars(counts_ax, funnel, order, groups)
    _funnel_rates(rates_ax, funnel, order, groups)
    if len(groups) > 1:
        rates_ax.legend(frameon=False, fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    if title:
        rates_ax.set_title(title)
    return fig
