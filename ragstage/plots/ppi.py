"""Where prediction-powered intervals hold: the coverage simulation of :mod:`ragstage.ppi.coverage`, drawn.

The chapter "Gold for a few questions" shows the simulation as a figure rather than as its
forty-row table: on the left, how often the PPI++ interval covers the true share of a bucket
(one line per bucket rate, with the simulation's own 95% interval as error bars) against the
size of the gold sample, beside the gold-only Wilson interval of the same sample, with the
nominal 95% and the 93% floor of the tool's warning; on the right, how wide the PPI++ interval
is as a share of the Wilson one. A reader sees in one picture that the narrow intervals of
rare buckets and small samples are the ones that miss.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ._figure import new_figure
from ._style import plain

__all__ = ["ppi_coverage_plot"]

_COLUMNS = {"judge", "rate", "n", "ppi_coverage", "mc_low", "mc_high", "wilson_coverage", "width_ratio"}


def ppi_coverage_plot(table: pd.DataFrame, *, judge: str | None = None, nominal: float = 0.95, floor: float = 0.93,
                      title: str | None = None) -> Any:
    """Coverage (left) and width against gold-only Wilson (right) of the PPI++ intervals, per bucket rate.

    ``table`` is what :func:`ragstage.ppi.coverage.simulate` or
    :func:`~ragstage.ppi.coverage.coverage_table` returns; with more than one judge in it,
    ``judge=`` names the one to draw. Each line carries a gid the tests read:
    ``ppi:<rate>`` and ``wilson:<rate>`` (coverage), ``ratio:<rate>`` (width ratio), the
    rate as printed in the table (``0.02``).
    """
    missing = _COLUMNS - set(table.columns)
    if missing:
        raise ValueError(f"the coverage table lacks column(s) {sorted(missing)}: pass simulate()'s or "
                         "coverage_table()'s table")
    judges = list(dict.fromkeys(table["judge"]))
    if judge is None:
        if len(judges) != 1:
            raise ValueError(f"the table holds {len(judges)} judges ({', '.join(map(str, judges))}): "
                             "name one with judge=")
        judge = judges[0]
    part = table[table["judge"] == judge]
    if part.empty:
        raise ValueError(f"no rows for judge {judge!r}; the table holds {', '.join(map(str, judges))}")
    if not 0 < floor <= nominal < 1:
        raise ValueError(f"need 0 < floor <= nominal < 1, got floor {floor} and nominal {nominal}")
    fig = new_figure((10.0, 4.2))
    cover, ratio = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    for i, rate in enumerate(sorted(set(part["rate"]))):
        line = part[part["rate"] == rate].sort_values("n")
        colour, name = f"C{i}", f"{rate:g}"
        bars = cover.errorbar(line["n"], line["ppi_coverage"],
                              yerr=[line["ppi_coverage"] - line["mc_low"], line["mc_high"] - line["ppi_coverage"]],
                              color=colour, marker="o", markersize=4, capsize=2, label=f"PPI++, rate {rate:.0%}")
        bars.lines[0].set_gid(f"ppi:{name}")
        cover.plot(line["n"], line["wilson_coverage"], color=colour, linestyle=":", linewidth=1,
                   gid=f"wilson:{name}")
        ratio.plot(line["n"], line["width_ratio"], color=colour, marker="o", markersize=4, gid=f"ratio:{name}",
                   label=f"rate {rate:.0%}")
    cover.axhline(nominal, color="black", linewidth=0.8, label=f"nominal {nominal:.0%}")
    cover.axhline(floor, color="grey", linewidth=0.8, linestyle="--",
                  label=f"{floor:.0%}: the floor of the warning rule")
    cover.plot([], [], color="black", linestyle=":", linewidth=1, label="gold-only Wilson (dotted)")
    ratio.axhline(1.0, color="black", linewidth=0.8)
    sizes = sorted(set(part["n"]))
    for ax in (cover, ratio):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("gold labels in the sample (n)")
    low = min(float(part["mc_low"].min()), float(part["wilson_coverage"].min()), floor)
    cover.set(ylabel="share of intervals covering the true share", ylim=(max(0.0, low - 0.03), 1.0))
    ratio.set(ylabel="PPI++ width / Wilson width", ylim=(0, max(1.05, float(part["width_ratio"].max()) + 0.05)))
    cover.legend(frameon=False, fontsize="small", loc="lower right")
    ratio.legend(frameon=False, fontsize="small", loc="lower right")
    cover.set_title(title or f"Coverage of 95% intervals (judge: {plain(judge)})", fontsize="medium")
    ratio.set_title("Width: below 1, PPI++ is narrower", fontsize="medium")
    return fig
