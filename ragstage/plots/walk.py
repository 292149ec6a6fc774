"""The stage walk drawn: each case's evidence followed through the five stages to where it stops.

Chapter 1 teaches the walk on five hand-made cases. This figure puts the five stages in
columns, one case per row: a line runs through every stage that kept a gold id and ends at
the first stage that lost them all, marked in that bucket's colour (a right answer runs to
the end, in green). Cases the walk sets aside before following the evidence (a service
failure, no label, a list not logged) are marked left of the stages, with their bucket's name.
Each stop marker carries the gid ``stop:<query id>:<bucket>``, which is what the tests read.
"""

from __future__ import annotations

from typing import Any, Iterable

from ._figure import new_axes
from ._style import BUCKET_COLOURS, STAGE_LABELS

__all__ = ["WALK_STAGES", "stage_walk"]

#: The five stages, in the order the evidence travels through them.
WALK_STAGES = ("query_understanding", "retrieval", "reranking", "prompt_assembly", "generation")
_RIGHT = len(WALK_STAGES)  # the column after generation: the answer is right
_ASIDE = -1.0              # left of the stages: set aside before the walk


def stage_walk(traces: Iterable[Any], *, require: str = "any", title: str | None = None, ax: Any = None) -> Any:
    """One row per trace: the stages its gold evidence passed, and where the walk stopped.

    ``traces`` are :class:`ragstage.Trace` objects (each row is labelled ``case <query_id>``);
    each is diagnosed with :func:`ragstage.diagnose` under ``require``.
    """
    from ..attribution import diagnose

    rows = [(t.query_id, diagnose(t, require).stage.value) for t in traces]
    if not rows:
        raise ValueError("nothing to draw: pass at least one trace")
    fig, ax = new_axes(ax, (8.6, 0.55 * len(rows) + 1.6))
    for y, (query_id, bucket) in enumerate(rows):
        if bucket in WALK_STAGES:
            stop = WALK_STAGES.index(bucket)
        elif bucket == "none":
            stop = _RIGHT
        else:
            stop = _ASIDE
        if stop >= 0:
            ax.plot(range(0, stop + 1), [y] * (stop + 1), color="#9e9e9e", linewidth=2, zorder=1)
            ax.scatter(range(0, stop), [y] * stop, color="#9e9e9e", s=30, zorder=2)
        marker = "o" if bucket == "none" else ("X" if stop >= 0 else "s")
        dot = ax.scatter([stop], [y], color=BUCKET_COLOURS.get(bucket, "#7f7f7f"), marker=marker, s=140,
                         edgecolor="black", linewidth=0.6, zorder=3)
        dot.set_gid(f"stop:{query_id}:{bucket}")
        ax.annotate(STAGE_LABELS.get(bucket, bucket), (stop, y), xytext=(10, 0), textcoords="offset points",
                    va="center", fontsize="small")
    ax.set_yticks(range(len(rows)), [f"case {q}" for q, _ in rows])
    ax.set_ylim(len(rows) - 0.5, -0.8)
    names = ["set aside"] + [s.replace("_", "\n") for s in WALK_STAGES] + ["answer\nright"]
    ax.set_xticks([_ASIDE, *range(_RIGHT + 1)], names, fontsize="small")
    ax.set_xlim(_ASIDE - 0.5, _RIGHT + 1.6)
    for x in range(len(WALK_STAGES)):
        ax.axvline(x, color="#eeeeee", linewidth=8, zorder=0)
    ax.tick_params(axis="x", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(title or "The stage walk: where each case's gold evidence was lost", loc="left")
    return fig
