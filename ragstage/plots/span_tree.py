"""One request's spans as a tree, each span coloured by the stage whose output it holds.

Chapter 7 reads an OpenInference export. One request is a tree of spans: chains around a
retriever, a prompt template and a model call. This figure draws the tree (a row per span,
indented by its depth, a line from each span to its parent) and colours the spans the
attribution reads by their stage: a RETRIEVER span holds the retrieved list, a RERANKER span
the reranked one, the PROMPT and LLM spans what was sent to the model and what it answered.
Every other span is grey. Each box carries the gid ``span:<span id>:<stage or other>``.
"""

from __future__ import annotations

from typing import Any, Iterable

from ._figure import new_axes
from ._style import BUCKET_COLOURS

__all__ = ["SPAN_STAGES", "span_tree"]

#: The stage whose output each OpenInference span kind holds.
SPAN_STAGES = {"RETRIEVER": "retrieval", "RERANKER": "reranking", "PROMPT": "prompt_assembly",
               "LLM": "generation"}
_OTHER = "#e0e0e0"


def _rows(spans: list[Any]) -> list[tuple[Any, int]]:
    """The spans depth first, children by start time, each with its depth."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Any]] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)
    out: list[tuple[Any, int]] = []
    todo = [(s, 0) for s in sorted(children.get(None, []), key=lambda s: s.start_ns, reverse=True)]
    while todo:
        span, depth = todo.pop()
        out.append((span, depth))
        todo += [(c, depth + 1) for c in sorted(children.get(span.span_id, []), key=lambda s: s.start_ns,
                                                 reverse=True)]
    return out


def span_tree(spans: Iterable[Any], *, title: str | None = None, ax: Any = None) -> Any:
    """The spans of one trace (objects with ``span_id``, ``parent_id``, ``kind``, ``name``, ``start_ns``)."""
    spans = list(spans)
    if not spans:
        raise ValueError("nothing to draw: pass the spans of one request")
    if len({s.trace_id for s in spans}) > 1:
        raise ValueError("the spans belong to more than one trace: pass one request's spans")
    from matplotlib.patches import Patch

    rows = _rows(spans)
    fig, ax = new_axes(ax, (8.4, 0.42 * len(rows) + 1.4))
    where: dict[str, tuple[float, int]] = {}
    for y, (span, depth) in enumerate(rows):
        stage = SPAN_STAGES.get(span.kind)
        colour = BUCKET_COLOURS[stage] if stage else _OTHER
        text = ax.text(depth * 0.6, y, f"{span.kind or '-'}  {span.name}", va="center", fontsize="small",
                       bbox={"boxstyle": "round,pad=0.3", "facecolor": colour, "edgecolor": "#616161",
                             "alpha": 0.9 if stage else 1.0})
        text.set_gid(f"span:{span.span_id}:{stage or 'other'}")
        where[span.span_id] = (depth * 0.6, y)
        if span.parent_id in where:
            px, py = where[span.parent_id]
            ax.plot([px + 0.15, px + 0.15, depth * 0.6 - 0.05], [py + 0.3, y, y], color="#9e9e9e", linewidth=0.8)
    depth_max = max(d for _, d in rows)
    ax.set_xlim(-0.2, depth_max * 0.6 + 4.5)
    ax.set_ylim(len(rows) - 0.4, -0.8)
    ax.axis("off")
    used = [k for k in SPAN_STAGES if any(s.kind == k for s, _ in rows)]
    handles = [Patch(facecolor=BUCKET_COLOURS[SPAN_STAGES[k]], label=f"{k}: {SPAN_STAGES[k].replace('_', ' ')}")
               for k in used] + [Patch(facecolor=_OTHER, label="other spans: no stage's output")]
    ax.legend(handles=handles, frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or "One request's spans, coloured by the stage whose output each holds", loc="left")
    return fig
