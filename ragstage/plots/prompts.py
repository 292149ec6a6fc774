"""Chapter 5: how much of the top-ranked evidence fits the prompt budget, per pipeline.

:func:`prompt_fill_plot` draws what :func:`ragstage.runs.summary.prompt_fill` computes: the
passages offered (the top ``k`` of the ranked list) against the passages that reached the
prompt, on average per question, with the number of prompts the budget cut short. Where the
lost claims went is :func:`ragstage.plots.lost_bars` on the same run's attribution table.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ._figure import new_axes
from ._style import BUCKET_COLOURS, plain

__all__ = ["prompt_fill_plot"]

_FILL_COLUMNS = {"group", "questions", "top", "mean_offered", "mean_in_prompt", "budget_stopped"}


def prompt_fill_plot(fill: pd.DataFrame, *, title: str | None = None, ax: Any = None) -> Any:
    """Passages offered (outlined) against passages in the prompt (filled), per pipeline.

    ``fill`` is :func:`ragstage.runs.summary.prompt_fill`'s table. Each row is labelled with the
    mean in the prompt over the mean offered and ``"cut by the budget: c of q"``. The two bar
    containers are labelled ``"offered"`` and ``"in the prompt"``.
    """
    missing = _FILL_COLUMNS - set(fill.columns)
    if missing:
        raise ValueError(f"fill lacks column(s) {sorted(missing)}: pass runs.summary.prompt_fill(...)")
    if fill.empty:
        raise ValueError("nothing to plot: no trace with a logged prompt")
    groups = fill["group"].astype(str).tolist()
    top = int(fill["top"].max())
    fig, ax = new_axes(ax, (8.0, 1.3 + 0.55 * len(groups)))
    ys = list(range(len(groups)))
    ax.barh(ys, fill["mean_offered"], height=0.6, color="white", edgecolor="#555555", linewidth=1.2,
            label="offered")
    ax.barh(ys, fill["mean_in_prompt"], height=0.6, color=BUCKET_COLOURS["prompt_assembly"], label="in the prompt")
    for y, (_, row) in zip(ys, fill.iterrows()):
        ax.annotate(f"{row['mean_in_prompt']:.1f} of {row['mean_offered']:.1f}; cut by the budget: "
                    f"{int(row['budget_stopped'])} of {int(row['questions'])}",
                    (row["mean_offered"], y), textcoords="offset points", xytext=(5, 0), va="center",
                    fontsize="x-small")
    ax.set_yticks(ys, [plain(g) for g in groups])
    ax.set_ylim(len(groups) - 0.5, -0.5)
    ax.set_xlim(0, top * 1.75)
    ax.set_xticks(range(top + 1))
    ax.set_xlabel(f"passages per question (of the top {top})")
    ax.legend(frameon=False, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, borderaxespad=0.2)
    if title:
        ax.set_title(title, pad=20)
    return fig
