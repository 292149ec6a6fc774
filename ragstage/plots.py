"""Figures for the workbook: stage bars, funnels, interval plots and interval coverage.

Every function draws with matplotlib's object-oriented API and returns the
:class:`~matplotlib.figure.Figure` (pass ``ax=`` to draw into an axes of your own). A figure
made here is not registered with ``pyplot``, so a notebook cell that ends with the call shows
it exactly once. The data behind each drawing stays readable from the figure (bar heights,
tick labels, interval segments), which is what the tests check.

Each outcome bucket has one colour everywhere (:data:`BUCKET_COLOURS`): retrieval is always
red, generation always blue, a correct answer always green, so a reader can compare a
chapter 1 fixture with the published SciFact counts at a glance.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from .attribution import BUCKETS
from .stats import Z95, normal_interval, wilson

__all__ = [
    "BUCKET_COLOURS",
    "STAGE_LABELS",
    "stage_bars",
    "funnel_plot",
    "interval_plot",
    "interval_rows",
    "coverage_plot",
]

#: One colour per bucket, used by every figure in the workbook.
BUCKET_COLOURS: dict[str, str] = {
    "endpoint_unavailable": "#7f7f7f",
    "label_missing": "#c7c7c7",
    "correct_refusal": "#98df8a",
    "missing_refusal": "#ff9896",
    "query_understanding": "#9467bd",
    "retrieval": "#d62728",
    "reranking": "#ff7f0e",
    "prompt_assembly": "#bcbd22",
    "generation": "#1f77b4",
    "source_or_label": "#8c564b",
    "none": "#2ca02c",
    "unjudged": "#e377c2",
    "not_logged": "#dbdb8d",
}

#: Legend text for each bucket (the bucket name stays the key everywhere else).
STAGE_LABELS: dict[str, str] = {
    "endpoint_unavailable": "service failure",
    "label_missing": "no gold label",
    "correct_refusal": "refused correctly",
    "missing_refusal": "should have refused",
    "query_understanding": "lost in query understanding",
    "retrieval": "lost in retrieval",
    "reranking": "lost in reranking",
    "prompt_assembly": "lost in prompt assembly",
    "generation": "lost in generation",
    "source_or_label": "source or label",
    "none": "answered correctly",
    "unjudged": "unjudged",
    "not_logged": "stage not logged",
}

_WILSON_COLOUR = "#1f77b4"
_NORMAL_COLOUR = "#d62728"


def _new_axes(ax: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    """``(figure, axes)``: the caller's axes, or a fresh figure outside pyplot."""
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def stage_bars(table: pd.DataFrame, *, value: str = "share", groups: Sequence[str] | None = None,
               horizontal: bool = True, legend: bool = True, show_n: bool = True, title: str | None = None,
               ax: Any = None) -> Any:
    """Stacked bars, one per group (pipeline), one segment per bucket, in walk order.

    ``table`` is what :func:`ragstage.report.table_from_counts` or
    :func:`~ragstage.report.attribution_table` returns (columns ``group``, ``stage``,
    ``count``, ``share``). ``value`` is ``"share"`` (each bar sums to one) or ``"count"``.
    ``groups`` fixes the order of the bars (default: the table's order); with ``show_n`` each
    bar's label carries its number of questions, e.g. ``"BM25 (n=300)"``. Each segment
    container carries its bucket name as its label, so ``ax.containers`` can be read back.
    """
    if value not in ("share", "count"):
        raise ValueError(f"value must be 'share' or 'count', got {value!r}")
    missing = {"group", "stage", value} - set(table.columns)
    if missing:
        raise ValueError(f"table lacks column(s) {sorted(missing)}: pass an attribution table")
    order = list(groups) if groups is not None else list(dict.fromkeys(table["group"]))
    unknown = set(order) - set(table["group"])
    if unknown:
        raise ValueError(f"no rows for group(s) {sorted(unknown)}")
    wide = table.pivot_table(index="group", columns="stage", values=value, aggfunc="sum", fill_value=0)
    wide = wide.reindex(index=order, fill_value=0)
    stages = [s for s in BUCKETS if s in wide.columns and wide[s].sum() > 0]
    names = list(order)
    if show_n:
        sizes = table.groupby("group")["count"].sum() if "count" in table.columns else None
        if sizes is not None:
            names = [f"{g} (n={int(sizes.get(g, 0))})" for g in order]

    height = 0.9 + 0.45 * len(order)
    fig, ax = _new_axes(ax, (8.0, max(2.2, height)) if horizontal else (max(4.0, 1.4 * len(order) + 2), 4.5))
    positions = list(range(len(order)))
    base = [0.0] * len(order)
    for stage in stages:
        vals = [float(v) for v in wide[stage]]
        kwargs = dict(color=BUCKET_COLOURS[stage], label=stage, edgecolor="white", linewidth=0.6)
        if horizontal:
            ax.barh(positions, vals, left=base, height=0.6, **kwargs)
        else:
            ax.bar(positions, vals, bottom=base, width=0.6, **kwargs)
        base = [b + v for b, v in zip(base, vals)]
    what = "share of questions" if value == "share" else "questions"
    if horizontal:
        ax.set_yticks(positions, names)
        ax.invert_yaxis()
        ax.set_xlabel(what)
        if value == "share":
            ax.set_xlim(0, 1)
    else:
        ax.set_xticks(positions, names)
        ax.set_ylabel(what)
        if value == "share":
            ax.set_ylim(0, 1)
    if legend and stages:
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles, [STAGE_LABELS[s] for s in stages], loc="center left",
                  bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def funnel_plot(funnel: pd.DataFrame, *, title: str | None = None, ax: Any = None) -> Any:
    """Conditional survival of each stage with Wilson whiskers, one series per group.

    ``funnel`` is what :func:`ragstage.report.funnel` or
    :func:`~ragstage.report.funnel_from_counts` returns. Each point is labelled with
    ``survived/entered``, so the shrinking denominators stay visible.
    """
    missing = {"group", "stage", "entered", "survived", "rate", "low", "high"} - set(funnel.columns)
    if missing:
        raise ValueError(f"funnel lacks column(s) {sorted(missing)}: pass a funnel table")
    order = [s for s in ("query_understanding", "retrieval", "reranking", "prompt_assembly", "generation")
             if s in set(funnel["stage"])]
    groups = list(dict.fromkeys(funnel["group"]))
    fig, ax = _new_axes(ax, (7.5, 4.0))
    width = 0.6 / max(1, len(groups))
    for gi, group in enumerate(groups):
        rows = funnel[funnel["group"] == group].set_index("stage").reindex(order).dropna(subset=["rate"])
        xs = [order.index(s) - 0.3 + width * (gi + 0.5) for s in rows.index]
        rates = rows["rate"].astype(float).tolist()
        err = [[r - lo for r, lo in zip(rates, rows["low"])], [hi - r for r, hi in zip(rates, rows["high"])]]
        ax.errorbar(xs, rates, yerr=err, fmt="o", capsize=4, label=str(group))
        for x, r, s, e in zip(xs, rates, rows["survived"], rows["entered"]):
            ax.annotate(f"{int(s)}/{int(e)}", (x, r), textcoords="offset points", xytext=(6, -3),
                        fontsize="x-small")
    ax.set_xticks(range(len(order)), [s.replace("_", "\n") for s in order])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("survived, given it entered the stage")
    if len(groups) > 1:
        ax.legend(frameon=False, fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def interval_rows(data: Any, *, label: str | Sequence[str] | None = None, z: float = Z95) -> pd.DataFrame:
    """Normalise the inputs of :func:`interval_plot` into one row per rate.

    ``data`` is a mapping ``label -> (k, n)``, an iterable of ``(label, k, n)`` triples, or a
    DataFrame with ``count`` (or ``k``) and ``n`` columns; its label is the ``label``
    column(s), by default ``label``, else ``group`` and ``stage`` joined. Returns columns
    ``label, k, n, rate, wilson_low, wilson_high, normal_low, normal_high``.
    """
    triples: list[tuple[str, int, int]] = []
    if isinstance(data, pd.DataFrame):
        kcol = "count" if "count" in data.columns else "k"
        if kcol not in data.columns or "n" not in data.columns:
            raise ValueError("a DataFrame needs 'count' (or 'k') and 'n' columns")
        if label is None:
            label = "label" if "label" in data.columns else [c for c in ("group", "stage") if c in data.columns]
        cols = [label] if isinstance(label, str) else list(label)
        if not cols:
            raise ValueError("name the label column(s) with label=")
        for _, row in data.iterrows():
            name = " · ".join(str(row[c]) for c in cols)
            triples.append((name, int(row[kcol]), int(row["n"])))
    elif isinstance(data, Mapping):
        triples = [(str(name), int(k), int(n)) for name, (k, n) in data.items()]
    else:
        triples = [(str(name), int(k), int(n)) for name, k, n in data]
    rows = []
    for name, k, n in triples:
        wl, wh = wilson(k, n, z)
        nl, nh = normal_interval(k, n, z)
        rows.append((name, k, n, k / n, wl, wh, nl, nh))
    return pd.DataFrame(rows, columns=["label", "k", "n", "rate", "wilson_low", "wilson_high",
                                       "normal_low", "normal_high"])


def interval_plot(data: Any, *, normal: bool = False, label: str | Sequence[str] | None = None,
                  z: float = Z95, xlabel: str = "rate", title: str | None = None, ax: Any = None) -> Any:
    """Several rates, each with its 95% Wilson interval (and the normal one beside it).

    ``data`` takes any form :func:`interval_rows` accepts. Rates are drawn top to bottom in
    the given order. The Wilson intervals are one line collection labelled ``"Wilson 95%"``;
    with ``normal=True`` the normal intervals are a second, labelled ``"normal 95%"``, drawn
    just below, and the axis widens to show where they leave [0, 1].
    """
    rows = interval_rows(data, label=label, z=z)
    if rows.empty:
        raise ValueError("nothing to plot")
    fig, ax = _new_axes(ax, (7.0, 0.9 + 0.55 * len(rows) * (1.6 if normal else 1.0)))
    ys = list(range(len(rows)))
    offset = 0.18 if normal else 0.0
    wy = [y - offset for y in ys]
    ax.hlines(wy, rows["wilson_low"], rows["wilson_high"], colors=_WILSON_COLOUR, linewidth=3,
              label="Wilson 95%")
    ax.plot(rows["rate"], wy, "o", color=_WILSON_COLOUR)
    lo_lim, hi_lim = 0.0, 1.0
    if normal:
        ny = [y + offset for y in ys]
        ax.hlines(ny, rows["normal_low"], rows["normal_high"], colors=_NORMAL_COLOUR, linewidth=3,
                  linestyles="dashed", label="normal 95%")
        ax.plot(rows["rate"], ny, "o", color=_NORMAL_COLOUR)
        lo_lim = min(0.0, float(rows["normal_low"].min()))
        hi_lim = max(1.0, float(rows["normal_high"].max()))
        for edge in (0.0, 1.0):
            ax.axvline(edge, color="black", linewidth=0.8, linestyle=":")
        ax.legend(frameon=False, fontsize="small", loc="best")
    for y, (_, row) in zip(ys, rows.iterrows()):
        ax.annotate(f"{row['k']}/{row['n']}", (row["rate"], y - offset), textcoords="offset points",
                    xytext=(0, 7), ha="center", fontsize="x-small")
    ax.set_yticks(ys, rows["label"].tolist())
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(lo_lim - 0.02, hi_lim + 0.02)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    return fig


def coverage_plot(coverage: pd.DataFrame, *, x: str = "n", nominal: float = 0.95,
                  title: str | None = None, ax: Any = None) -> Any:
    """Actual coverage of each interval method against ``n`` (or ``p``), with the nominal line.

    ``coverage`` is what :func:`ragstage.stats.interval_coverage` returns (columns
    ``method``, ``n``, ``p``, ``coverage``). One line per method and value of the other
    variable, labelled e.g. ``"wilson, p=0.70"``.
    """
    missing = {"method", "n", "p", "coverage"} - set(coverage.columns)
    if missing:
        raise ValueError(f"coverage table lacks column(s) {sorted(missing)}")
    if x not in ("n", "p"):
        raise ValueError(f"x must be 'n' or 'p', got {x!r}")
    other = "p" if x == "n" else "n"
    fig, ax = _new_axes(ax, (7.0, 4.0))
    colours = {"wilson": _WILSON_COLOUR, "normal": _NORMAL_COLOUR}
    styles = ["-", "--", ":", "-."]
    for mi, method in enumerate(dict.fromkeys(coverage["method"])):
        part = coverage[coverage["method"] == method]
        for oi, value in enumerate(sorted(set(part[other]))):
            line = part[part[other] == value].sort_values(x)
            tag = f"{other}={value:.2f}" if other == "p" else f"{other}={int(value)}"
            ax.plot(line[x], line["coverage"], styles[oi % len(styles)], marker="o", markersize=3,
                    color=colours.get(method, f"C{mi}"), label=f"{method}, {tag}")
    ax.axhline(nominal, color="black", linewidth=0.8, linestyle=":", label=f"nominal {nominal:.0%}")
    if x == "n":
        ax.set_xscale("log")
    ax.set_xlabel("questions (n)" if x == "n" else "true rate (p)")
    ax.set_ylabel("share of intervals that contain the true rate")
    ax.legend(frameon=False, fontsize="small")
    if title:
        ax.set_title(title)
    return fig

