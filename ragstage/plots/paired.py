"""The paired comparison's two-by-two table, drawn so the two cells that matter stand out.

Two runs on the same questions split them four ways: right in both, wrong in both, fixed
(wrong, then right) and broken (right, then wrong). Only fixed and broken enter McNemar's
test; the figure colours those two (green, red) and greys the two that say nothing about
the difference. Each cell carries the gid ``cell:<name>``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ._figure import new_axes
from ._style import BROKEN_COLOUR, FIXED_COLOUR

__all__ = ["paired_table"]

_CELLS = {  # name: (row: before, column: after, colour, words)
    "both_right": (0, 0, "#e0e0e0", "right in both"),
    "broken": (0, 1, BROKEN_COLOUR, "broken"),
    "fixed": (1, 0, FIXED_COLOUR, "fixed"),
    "both_wrong": (1, 1, "#e0e0e0", "wrong in both"),
}


def paired_table(counts: Mapping[str, int], *, before: str = "before", after: str = "after",
                 title: str | None = None, ax: Any = None) -> Any:
    """The four counts of :func:`ragstage.stats.paired_counts` as a coloured two-by-two table."""
    missing = set(_CELLS) - set(counts)
    if missing:
        raise ValueError(f"the counts lack {sorted(missing)}: pass what paired_counts() returns")
    from matplotlib.patches import Rectangle

    fig, ax = new_axes(ax, (6.2, 4.4))
    for name, (row, col, colour, words) in _CELLS.items():
        cell = Rectangle((col, 1 - row), 1, 1, facecolor=colour, edgecolor="white", linewidth=3,
                         alpha=0.85 if name in ("fixed", "broken") else 1.0)
        cell.set_gid(f"cell:{name}")
        ax.add_patch(cell)
        ax.text(col + 0.5, 1.5 - row, f"{int(counts[name])}\n{words}", ha="center", va="center",
                fontsize="large" if name in ("fixed", "broken") else "medium")
    ax.set_xticks([0.5, 1.5], [f"{after}: right", f"{after}: wrong"])
    ax.set_yticks([1.5, 0.5], [f"{before}: right", f"{before}: wrong"])
    ax.xaxis.tick_top()
    ax.set_xlim(0, 2)
    ax.set_ylim(0, 2)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    n = sum(int(counts[c]) for c in _CELLS)
    ax.set_xlabel(f"{n} paired questions; McNemar's test reads only fixed ({int(counts['fixed'])}) "
                  f"and broken ({int(counts['broken'])})", fontsize="small")
    if title:
        ax.set_title(title, pad=28)
    return fig
