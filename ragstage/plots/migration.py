"""Where questions moved between two runs: the migration matrix as a heatmap, and as a flow.

Both take what :func:`ragstage.report.compare` returns (a ``Comparison``, or its ``migration``
DataFrame: rows the bucket before, columns the bucket after, cells the number of questions).
A question is *fixed* when it goes from a wrong bucket to a right one (``none``,
``correct_refusal``), *broken* the other way; a move that starts or ends in ``unjudged`` or
``not_logged`` is *undecided*, as in the comparison itself.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..attribution import BUCKETS, RIGHT, UNDECIDED
from ._figure import new_axes
from ._style import BROKEN_COLOUR, BUCKET_COLOURS, FIXED_COLOUR, STAGE_LABELS, plain

__all__ = ["migration_matrix", "move_kind", "migration_heatmap", "migration_flow", "bucket_change", "MOVE_COLOURS"]

#: The colour of each kind of move in :func:`migration_flow`.
MOVE_COLOURS = {"fixed": FIXED_COLOUR, "broken": BROKEN_COLOUR, "moved": "#ff7f0e", "stayed": "#d9d9d9",
                "undecided": "#9e9e9e"}
_MOVE_WORDS = {"fixed": "fixed (wrong -> right)", "broken": "broken (right -> wrong)",
               "moved": "moved to another failure", "stayed": "same bucket", "undecided": "undecided"}


def migration_matrix(migration: Any) -> pd.DataFrame:
    """The migration counts as a square DataFrame over the buckets either run used, in walk order."""
    frame = getattr(migration, "migration", migration)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"pass a Comparison or its migration DataFrame, not {type(migration).__name__}")
    unknown = (set(frame.index) | set(frame.columns)) - set(BUCKETS)
    if unknown:
        raise ValueError(f"unknown bucket(s) {sorted(map(str, unknown))} in the migration matrix")
    used = [b for b in BUCKETS if b in set(frame.index) | set(frame.columns)]
    square = frame.reindex(index=used, columns=used, fill_value=0).fillna(0).astype(int)
    square.index.name, square.columns.name = "before", "after"
    return square


def move_kind(before: str, after: str) -> str:
    """``"fixed"``, ``"broken"``, ``"stayed"``, ``"moved"`` (one failure to another) or ``"undecided"``."""
    if before in UNDECIDED or after in UNDECIDED:
        return "undecided"
    if before == after:
        return "stayed"
    if (before in RIGHT) != (after in RIGHT):
        return "fixed" if after in RIGHT else "broken"
    return "moved" if before not in RIGHT else "stayed"


def migration_heatmap(migration: Any, *, title: str | None = None, ax: Any = None) -> Any:
    """The migration matrix as a heatmap with its counts; fixed cells framed green, broken red.

    Zero cells stay blank so the few moves stand out; the diagonal (questions that stayed in
    their bucket) is shaded like any other cell. Row and column labels are the bucket names
    of :data:`STAGE_LABELS`; each written count is a text artist, which the tests read back.
    """
    square = migration_matrix(migration)
    labels = [STAGE_LABELS[b] for b in square.index]
    size = len(labels)
    fig, ax = new_axes(ax, (2.6 + 0.62 * size, 1.9 + 0.5 * size))
    values = square.to_numpy()
    ax.imshow(values, cmap="Blues", vmin=0, vmax=max(1, int(values.max())), aspect="auto")
    top = max(1, int(values.max()))
    from matplotlib.patches import Rectangle

    for i, src in enumerate(square.index):
        for j, dst in enumerate(square.columns):
            k = int(values[i, j])
            if not k:
                continue
            ax.text(j, i, str(k), ha="center", va="center", fontsize="small",
                    color="white" if k > top * 0.6 else "black")
            kind = move_kind(src, dst)
            if kind in ("fixed", "broken"):
                ax.add_patch(Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False, linewidth=2,
                                       edgecolor=MOVE_COLOURS[kind], gid=kind))
    ax.set_xticks(range(size), labels, rotation=35, ha="right", rotation_mode="anchor", fontsize="small")
    ax.set_yticks(range(size), labels, fontsize="small")
    ax.set_xlabel("after")
    ax.set_ylabel("before")
    ax.tick_params(length=0)
    ax.set_title(title or "where each question went (green frame: fixed, red: broken)", fontsize="medium")
    return fig


def _spread(centres: list[float], gap: float) -> list[float]:
    """Label positions at least ``gap`` apart, each as near its centre as the others allow."""
    out = list(centres)
    for i in range(1, len(out)):
        out[i] = max(out[i], out[i - 1] + gap)
    return out


def migration_flow(migration: Any, *, before: str = "before", after: str = "after", title: str | None = None,
                   ax: Any = None) -> Any:
    """A flow from the "before" buckets (left) to the "after" buckets (right), one band per move.

    Each column stacks the buckets in walk order, each as tall as its number of questions; a
    band joins a bucket on the left to one on the right, as wide as the questions that made
    that move, coloured by its kind (:data:`MOVE_COLOURS`): fixed green, broken red, moved to
    another failure orange, stayed grey. The legend counts each kind. Each band is a patch whose
    ``gid`` is ``"<before bucket>-><after bucket>"``; ``before``/``after`` name the columns.
    """
    from matplotlib.patches import PathPatch, Rectangle
    from matplotlib.path import Path

    square = migration_matrix(migration)
    moves = {(s, d): int(square.loc[s, d]) for s in square.index for d in square.columns if square.loc[s, d]}
    if not moves:
        raise ValueError("the migration matrix is empty: nothing moved anywhere")
    n = sum(moves.values())
    gap = n * 0.025
    out_totals = {b: sum(k for (s, _), k in moves.items() if s == b) for b in square.index}
    in_totals = {b: sum(k for (_, d), k in moves.items() if d == b) for b in square.columns}

    def column(totals: dict[str, int]) -> dict[str, float]:
        tops, y = {}, 0.0
        for b, k in totals.items():
            if k:
                tops[b] = y
                y += k + gap
        return tops

    left, right = column(out_totals), column(in_totals)
    fig, ax = new_axes(ax, (8.5, max(3.5, 1.2 + 0.34 * max(len(left), len(right)))))
    x0, x1, w = 0.0, 1.0, 0.06
    for tops, totals, x in ((left, out_totals, x0 - w), (right, in_totals, x1)):
        for b, y in tops.items():
            ax.add_patch(Rectangle((x, y), w, totals[b], color=BUCKET_COLOURS[b], gid=f"node:{b}"))
    left_used = dict(left)
    right_used = dict(right)
    kinds: dict[str, int] = {}
    order = sorted(moves, key=lambda m: (BUCKETS.index(m[0]), BUCKETS.index(m[1])))
    for src, dst in order:
        k = moves[(src, dst)]
        kind = move_kind(src, dst)
        kinds[kind] = kinds.get(kind, 0) + k
        ya, yb = left_used[src], right_used.get(dst)
        left_used[src] += k
        right_used[dst] += k
        mid = (x0 + x1) / 2
        verts = [(x0, ya), (mid, ya), (mid, yb), (x1, yb), (x1, yb + k), (mid, yb + k), (mid, ya + k), (x0, ya + k),
                 (x0, ya)]
        codes = [Path.MOVETO, Path.CURVE4, Path.CURVE4, Path.CURVE4, Path.LINETO, Path.CURVE4, Path.CURVE4,
                 Path.CURVE4, Path.CLOSEPOLY]
        ax.add_patch(PathPatch(Path(verts, codes), facecolor=MOVE_COLOURS[kind], edgecolor="none",
                               alpha=0.85 if kind in ("fixed", "broken") else 0.55, gid=f"{src}->{dst}"))
    label_gap = n * 0.075
    for tops, totals, x, ha in ((left, out_totals, x0 - w - 0.02, "right"), (right, in_totals, x1 + w + 0.02, "left")):
        names = list(tops)
        ys = _spread([tops[b] + totals[b] / 2 for b in names], label_gap)
        for b, y in zip(names, ys):
            ax.text(x, y, f"{STAGE_LABELS[b]} ({totals[b]})", ha=ha, va="center", fontsize="small")
    height = max(max(t + out_totals[b] for b, t in left.items()), max(t + in_totals[b] for b, t in right.items()))
    label_bottom = max(_spread([left[b] + out_totals[b] / 2 for b in left], label_gap)[-1],
                       _spread([right[b] + in_totals[b] / 2 for b in right], label_gap)[-1])
    ax.set_ylim(max(height, label_bottom + label_gap / 2), -n * 0.08)
    ax.set_xlim(-0.75, 1.75)
    ax.text(x0 - w / 2, -n * 0.04, plain(before), ha="center", va="bottom", fontweight="bold")
    ax.text(x1 + w / 2, -n * 0.04, plain(after), ha="center", va="bottom", fontweight="bold")
    ax.set_axis_off()
    from matplotlib.patches import Patch

    shown = [kind for kind in MOVE_COLOURS if kinds.get(kind)]
    ax.legend([Patch(color=MOVE_COLOURS[k]) for k in shown], [f"{_MOVE_WORDS[k]}: {kinds[k]}" for k in shown],
              loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(shown)), frameon=False,
              fontsize="small")
    ax.set_title(title or f"{n} questions, {plain(before)} -> {plain(after)}", fontsize="medium")
    return fig


def bucket_change(table: pd.DataFrame, before: str, after: str, *, title: str | None = None, ax: Any = None) -> Any:
    """Each bucket's count in two runs on the same questions, joined by an arrow from ``before`` to ``after``.

    ``table`` is an attribution table holding both groups (e.g. chapter 7's runs at two chunk
    sizes). Buckets go top to bottom in walk order, with both counts written beside them; an
    arrow is green when a failure bucket shrank or the right bucket grew, red the other way.
    The two point series are labelled with the group names.
    """
    from .stages import stage_shares

    data = stage_shares(table, [before, after])
    wide = data.pivot_table(index="stage", columns="group", values="count", aggfunc="sum", fill_value=0)
    stages = list(dict.fromkeys(data["stage"]))
    wide = wide.reindex(index=stages)
    fig, ax = new_axes(ax, (7.5, 1.2 + 0.42 * len(stages)))
    ys = list(range(len(stages)))
    a, b = wide[before].astype(int).tolist(), wide[after].astype(int).tolist()
    for y, stage, x0, x1 in zip(ys, stages, a, b):
        if x0 != x1:
            better = (x1 > x0) == (stage in RIGHT)
            ax.annotate("", (x1, y), (x0, y), arrowprops=dict(arrowstyle="->", lw=1.6,
                                                              color=FIXED_COLOUR if better else BROKEN_COLOUR))
        ax.annotate(f"{x0} -> {x1}", (max(x0, x1), y), textcoords="offset points", xytext=(8, 0), va="center",
                    fontsize="x-small")
    ax.plot(a, ys, "o", color="#7f7f7f", label=plain(before))
    ax.plot(b, ys, "o", color="black", label=plain(after))
    ax.set_yticks(ys, [STAGE_LABELS[s] for s in stages])
    ax.set_ylim(len(stages) - 0.5, -0.5)
    ax.set_xlim(-0.5, max(a + b + [1]) * 1.25 + 1)
    ax.set_xlabel("questions")
    ax.legend(frameon=False, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, borderaxespad=0.2)
    if title:
        ax.set_title(title, pad=20)
    return fig
