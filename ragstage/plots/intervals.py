"""Rates with their intervals: Wilson against normal, and how often each interval covers.

Chapter 2 draws these: :func:`interval_plot` puts several rates side by side, each with its
95% Wilson interval (and the normal one below it, to show where it leaves [0, 1]);
:func:`coverage_plot` shows how often each method's interval contains the true rate.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from ..stats import Z95, normal_interval, wilson
from ._figure import new_axes
from ._style import NORMAL_COLOUR, WILSON_COLOUR, plain

__all__ = ["interval_rows", "interval_plot", "coverage_plot"]


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
    fig, ax = new_axes(ax, (7.0, 0.9 + 0.55 * len(rows) * (1.6 if normal else 1.0)))
    ys = list(range(len(rows)))
    offset = 0.18 if normal else 0.0
    wy = [y - offset for y in ys]
    ax.hlines(wy, rows["wilson_low"], rows["wilson_high"], colors=WILSON_COLOUR, linewidth=3,
              label="Wilson 95%")
    ax.plot(rows["rate"], wy, "o", color=WILSON_COLOUR)
    lo_lim, hi_lim = 0.0, 1.0
    if normal:
        ny = [y + offset for y in ys]
        ax.hlines(ny, rows["normal_low"], rows["normal_high"], colors=NORMAL_COLOUR, linewidth=3,
                  linestyles="dashed", label="normal 95%")
        ax.plot(rows["rate"], ny, "o", color=NORMAL_COLOUR)
        lo_lim = min(0.0, float(rows["normal_low"].min()))
        hi_lim = max(1.0, float(rows["normal_high"].max()))
        for edge in (0.0, 1.0):
            ax.axvline(edge, color="black", linewidth=0.8, linestyle=":")
        # above the axes, so it never covers an interval line
        ax.legend(frameon=False, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2,
                  borderaxespad=0.2)
    for y, (_, row) in zip(ys, rows.iterrows()):
        ax.annotate(f"{row['k']}/{row['n']}", (row["rate"], y - offset), textcoords="offset points",
                    xytext=(0, 7), ha="center", fontsize="x-small")
    ax.set_yticks(ys, [plain(name) for name in rows["label"]])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(lo_lim - 0.02, hi_lim + 0.02)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, pad=22 if normal else 6)
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
    fig, ax = new_axes(ax, (8.5, 4.0))
    colours = {"wilson": WILSON_COLOUR, "normal": NORMAL_COLOUR}
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
    ax.legend(frameon=False, fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    if title:
        ax.set_title(title)
    return fig

