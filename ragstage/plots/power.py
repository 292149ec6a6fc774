"""How the power of the paired test grows with the number of questions.

Chapter 2 draws this to plan an experiment: for each change, the exact McNemar power at each
sample size (solid) beside the normal approximation (dashed), the target power as a line,
and the size of the run at hand marked, so a reader sees how far it is from the size that
would detect the change.
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ._figure import new_axes
from ._style import plain

__all__ = ["power_plot"]

_COLUMNS = {"n", "exact", "normal"}


def power_plot(curves: Mapping[str, pd.DataFrame], *, target: float = 0.8, n_now: int | None = None,
               alpha: float = 0.05, title: str | None = None, ax: Any = None) -> Any:
    """One solid (exact) and one dashed (normal approximation) line per curve, each named by its key.

    ``curves`` maps a label to what :func:`ragstage.power_curve` returns (columns ``n``,
    ``exact``, ``normal``). ``target`` draws the planned power as a horizontal line and
    ``n_now`` the size of the run at hand as a vertical one. The legend sits below the
    axes, so it covers no line however the curves run: one entry per curve, and the two
    line styles named once.
    """
    if not curves:
        raise ValueError("nothing to plot: pass at least one power curve")
    for label, curve in curves.items():
        missing = _COLUMNS - set(curve.columns)
        if missing:
            raise ValueError(f"the curve {label!r} lacks column(s) {sorted(missing)}: pass power_curve's table")
    if not 0 < target < 1:
        raise ValueError(f"target must be a power between 0 and 1, got {target}")
    from matplotlib.lines import Line2D

    fig, ax = new_axes(ax, (7.0, 4.6))
    handles = []
    for i, (label, curve) in enumerate(curves.items()):
        colour = f"C{i}"
        handles += ax.plot(curve["n"], curve["exact"], color=colour, label=f"{plain(label)}: exact")
        ax.plot(curve["n"], curve["normal"], color=colour, linestyle="--",
                label=f"{plain(label)}: normal approximation")
    handles.append(ax.axhline(target, color="grey", linewidth=0.8, label=f"target power {target:.0%}"))
    if n_now is not None:
        handles.append(ax.axvline(n_now, color="grey", linewidth=0.8, linestyle=":",
                                  label=f"this run: {n_now} questions"))
    # one entry per curve (its colour), and the two line styles said once
    names = [h.get_label().removesuffix(": exact") for h in handles]
    handles += [Line2D([], [], color="black"), Line2D([], [], color="black", linestyle="--")]
    names += ["solid: exact test", "dashed: normal approximation"]
    ax.set(xlabel="paired questions", ylabel=f"power (α = {alpha:g})", ylim=(0, 1))
    ax.legend(handles, names, frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(0.0, -0.15),
              ncol=2)
    if title:
        ax.set_title(title)
    return fig
