"""The conditional funnel drawn as what it is: each stage's denominator is the last one's survivors.

Beside :func:`funnel_plot` (rates with intervals), this diagram shows how the denominators
shrink: one bar per stage, as long as the questions that entered it, split into those it kept
(grey) and those it lost (the stage's bucket colour). A dashed line carries each stage's
survivors down to the next stage's bar, where they are the whole denominator; the rate is
written beside each bar as ``survived/entered``. Bars carry the gids ``kept:<stage>`` and
``lost:<stage>``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ._figure import new_axes
from ._style import BUCKET_COLOURS

__all__ = ["funnel_diagram", "KEPT_COLOUR"]

KEPT_COLOUR = "#bdbdbd"
_COLUMNS = {"stage", "entered", "survived"}


def funnel_diagram(funnel: pd.DataFrame, *, group: str | None = None, title: str | None = None,
                   ax: Any = None) -> Any:
    """The stages of one group of a funnel table (:func:`ragstage.funnel`, ``funnel_from_counts``)."""
    missing = _COLUMNS - set(funnel.columns)
    if missing:
        raise ValueError(f"the table lacks column(s) {sorted(missing)}: pass what funnel() returns")
    rows = funnel
    if "group" in funnel.columns:
        groups = list(dict.fromkeys(funnel["group"]))
        if group is None and len(groups) > 1:
            raise ValueError(f"the table holds groups {groups}: name one with group=")
        rows = funnel[funnel["group"] == (group if group is not None else groups[0])]
    if rows.empty:
        raise ValueError(f"no rows for group {group!r}")
    fig, ax = new_axes(ax, (8.0, 0.8 * len(rows) + 1.2))
    widest = int(rows["entered"].max())
    for y, row in enumerate(rows.itertuples()):
        entered, survived = int(row.entered), int(row.survived)
        kept = ax.barh(y, survived, color=KEPT_COLOUR, edgecolor="white", height=0.6)
        lost = ax.barh(y, entered - survived, left=survived, color=BUCKET_COLOURS.get(row.stage, "#7f7f7f"),
                       edgecolor="white", height=0.6)
        kept.patches[0].set_gid(f"kept:{row.stage}")
        lost.patches[0].set_gid(f"lost:{row.stage}")
        rate = survived / entered if entered else float("nan")
        ax.text(entered + widest * 0.02, y, f"{survived}/{entered} = {rate:.3f}", va="center", fontsize="small")
        if y + 1 < len(rows):
            ax.plot([survived, survived], [y + 0.3, y + 0.7], color="black", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [s.replace("_", " ") for s in rows["stage"]])
    ax.set_ylim(len(rows) - 0.5, -0.6)
    ax.set_xlim(0, widest * 1.3)
    ax.set_xlabel("questions: kept (grey) and lost (the stage's colour); each bar starts from the last one's kept")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(title or "Each stage divides by what the stage before it kept", loc="left")
    return fig
