"""Self-contained HTML pages of a run (``ragstage report``) and of two runs (``ragstage report --compare``).

A page is one file with its styles, script, data and figures inside: it opens with no
network, so it can be mailed or attached to a ticket. Its numbers are the ones
``ragstage attribute --format json`` and ``ragstage compare --format json`` print for the
same files (:mod:`ragstage.html.data` builds them with the same functions), and its
figures come from :mod:`ragstage.plots`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..atomic import atomic_write_bytes
from .data import MAX_QUESTIONS

__all__ = ["report_html", "comparison_html", "write_report", "write_comparison", "MAX_DRAWN_GROUPS", "MAX_QUESTIONS"]


def _report_figures(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    from .. import plots

    # The page holds the figures; a notebook cell that writes a report must not show them too.
    with plots.no_display():
        return _figures(data, plots)


#: The most groups a report's figures draw (one panel, or one series, each): drawing takes time
#: linear in the groups (a thousand took minutes) and more panels than this cannot be read anyway.
MAX_DRAWN_GROUPS = 12


def _drawn_groups(table: Any) -> tuple[list[Any], str]:
    """The groups the figures draw (the largest, by questions, in the table's order) and the
    caption's note on those left out (empty when every group is drawn)."""
    sizes = table.groupby("group", sort=False)["n"].first()
    if len(sizes) <= MAX_DRAWN_GROUPS:
        return list(sizes.index), ""
    largest = set(sizes.sort_values(ascending=False, kind="stable").index[:MAX_DRAWN_GROUPS])
    note = (f" Drawn: the {MAX_DRAWN_GROUPS} largest of {len(sizes):,} groups (by questions); the tables "
            "below hold every group.")
    return [g for g in sizes.index if g in largest], note


def _figures(data: dict[str, Any], plots: Any) -> list[tuple[str, str, str]]:
    import pandas as pd

    from .page import figure_svg

    figures = []
    table = pd.DataFrame(data["attribution"])
    if table.empty:
        return figures
    drawn, note = _drawn_groups(table)
    figures.append(("fig-stages", "Where each group lost its questions: each bucket's share with its 95% "
                    "Wilson interval and k/n." + note, figure_svg(plots.stage_bars(table, groups=drawn), "stages")))
    funnel = pd.DataFrame(data["funnel"])
    if not funnel.empty:
        funnel = funnel[funnel["group"].isin(drawn)]
        figures.append(("fig-funnel", "The conditional funnel: survival of each stage over the questions that "
                        "entered it, with Wilson intervals (top), and the counts entered and survived (bottom)."
                        + note, figure_svg(plots.funnel_plot(funnel), "funnel")))
    return figures


def report_html(paths: Sequence[str | Path], *, by: str | None = "pipeline", require: str = "any",
                title: str | None = None, max_questions: int | None = MAX_QUESTIONS, workers: int | None = None,
                gold_sample: str | Path | None = None, sample: str | Path | None = None) -> tuple[str, int]:
    """``(page, number of traces)``: the report page of the traces in ``paths``, listing the first
    ``max_questions`` questions (all when None), with the rates of a gold sample when given (see
    :func:`ragstage.html.data.report_data`)."""
    from .data import report_data
    from .page import render_page

    data = report_data(paths, by=by, require=require, max_questions=max_questions, workers=workers,
                       gold_sample=gold_sample, sample=sample)
    name = title or "ragstage report: " + ", ".join(Path(p).name for p in paths)
    return render_page(data, name, _report_figures(data)), data["n"]


def comparison_html(before: str | Path, after: str | Path, *, require: str = "any", intersect: bool = False,
                    title: str | None = None, max_questions: int | None = MAX_QUESTIONS) -> tuple[str, int]:
    """``(page, number of paired questions)``: the comparison page of two runs, every pair counted and
    at most ``max_questions`` listed (all when None), the changed ones first (see :mod:`ragstage.html.paired`)."""
    from .page import render_page
    from .paired import comparison_data

    data = comparison_data(before, after, require=require, intersect=intersect, max_questions=max_questions)
    name = title or f"ragstage comparison: {Path(before).name} → {Path(after).name}"
    return render_page(data, name, _comparison_figures(data)), data["comparison"]["n"]


def _comparison_figures(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    from .. import plots
    from .page import figure_svg

    c = data["_comparison"]
    before, after = (Path(p).name for p in data["files"])
    with plots.no_display():  # the page holds them; a notebook cell that writes the page must not show them
        return [("fig-heatmap", "Bucket migration: rows before, columns after; fixed cells framed green, broken red.",
                 figure_svg(plots.migration_heatmap(c), "heatmap")),
                ("fig-flow", "Where the questions went: green fixed, red broken, orange moved to another failure, "
                 "grey stayed.", figure_svg(plots.migration_flow(c, before=before, after=after), "flow"))]


def write_report(paths: Sequence[str | Path], out: str | Path, *, by: str | None = "pipeline",
                 require: str = "any", max_questions: int | None = MAX_QUESTIONS, workers: int | None = None,
                 gold_sample: str | Path | None = None, sample: str | Path | None = None) -> int:
    """Write the report page to ``out`` (atomically); returns the number of traces counted on it."""
    page, n = report_html(paths, by=by, require=require, max_questions=max_questions, workers=workers,
                          gold_sample=gold_sample, sample=sample)
    inputs = [*paths, *(p for p in (gold_sample, sample) if p is not None)]
    atomic_write_bytes(out, page, inputs=inputs)
    return n


def write_comparison(before: str | Path, after: str | Path, out: str | Path, *, require: str = "any",
                     intersect: bool = False, max_questions: int | None = MAX_QUESTIONS) -> int:
    """Write the comparison page to ``out`` (atomically); returns the number of paired questions."""
    page, n = comparison_html(before, after, require=require, intersect=intersect, max_questions=max_questions)
    atomic_write_bytes(out, page, inputs=(before, after))
    return n
