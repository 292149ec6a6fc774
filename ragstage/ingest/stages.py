"""Which spans of a request play which stage: the retrieved list, the ranking steps, the answering model.

The request reader (:mod:`.requests`) sorts a request's spans by kind; these rules decide what
each group stands for when there are several: retriever spans that wrap others (fused or
cutting), CHAIN spans that return passages' texts (a DSPy reranking module), and the LLM spans
whose input is the prompt (not a model call inside a retrieval or ranking step, not a wrapper of
another LLM span).
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING

from .spans import Span
from .tree import SpanTree

if TYPE_CHECKING:
    from .requests import Request

__all__ = ["retrieval", "text_ranking", "answering"]

_start_end = attrgetter("start_ns", "end_ns")  # spans in the order they ran


def _merge(lists: list[list[tuple[str, float | None]]]) -> list[tuple[str, float | None]]:
    seen: dict[str, float | None] = {}
    for ranked in lists:
        for cid, score in ranked:
            seen.setdefault(cid, score)
    return list(seen.items())


def retrieval(req: Request, tree: SpanTree, retrievers: list[Span],
               lists: dict[str, list[tuple[str, float | None]] | None]
               ) -> list[tuple[Span, list[tuple[str, float | None]]]]:
    """Fill ``req.retrieved`` from each span's ``(id, score)`` list (None: it lists no documents);
    returns the wrapping retriever spans that cut (a reranking stage)."""
    if len(retrievers) == 1:  # one retriever span (the usual case): it is the leaf, whatever it lists
        (only,) = retrievers
        req.retrieved = _merge([lists[only.span_id] or []])
        req.notes["retrieval"] = f"one retriever span '{only.name}'"
        return []
    listed = {s.span_id for s in retrievers if lists[s.span_id] is not None}
    wraps_listed = tree.marked_above(listed)
    under_listed = tree.marked_below(listed, retrievers)
    leaves = [s for s in retrievers
              if s.span_id not in wraps_listed and (s.span_id in listed or s.span_id not in under_listed)]
    leaves.sort(key=_start_end)
    leaf_ids = {s.span_id for s in leaves}
    ranked = {s.span_id: lists[s.span_id] or [] for s in retrievers}
    union = _merge([ranked[s.span_id] for s in leaves])
    cuts = []
    wrappers = [s for s in retrievers if s.span_id in listed and s.span_id not in leaf_ids]
    fused_by = None
    for w in sorted(wrappers, key=lambda s: s.end_ns):
        if {c for c, _ in ranked[w.span_id]} == {c for c, _ in union} and fused_by is None:
            fused_by = w
        else:
            cuts.append((w, ranked[w.span_id]))
    names = [s.name for s in leaves]
    if fused_by is not None and len(leaves) > 1:
        req.retrieved = ranked[fused_by.span_id]
        req.notes["retrieval"] = f"{len(leaves)} retriever spans {names}, fused by '{fused_by.name}' (its order)"
    elif len(leaves) > 1:
        req.retrieved = union
        req.notes["retrieval"] = (f"{len(leaves)} retriever spans {names}, merged as their union in the order "
                                  "they ran (first occurrence kept; scores are each retriever's own)")
    else:
        req.retrieved = union
        if leaves:
            req.notes["retrieval"] = f"one retriever span '{leaves[0].name}'"
    return cuts


def text_ranking(req: Request, tree: SpanTree, retrievers: list[Span],
                  text_rankers: list[tuple[Span, list[str]]]) -> list[tuple[Span, list[tuple[str, float | None]]]]:
    """The ranking steps among CHAIN spans that return passages' texts (:func:`.frameworks.ranked_texts`):
    those that wrap no retriever and return only texts of the request's candidates, as ranked ids."""
    if not text_rankers:
        return []
    by_text = {c.content: cid for cid, c in req.candidates.items() if c.content}
    wrapping = tree.marked_above({s.span_id for s in retrievers})
    scores = dict(req.retrieved)
    out = []
    for span, texts in text_rankers:
        ids = [by_text.get(t) for t in texts]
        if span.span_id not in wrapping and by_text and all(i is not None for i in ids):
            out.append((span, [(i, scores.get(i)) for i in ids if i is not None]))
    return out


def answering(req: Request, tree: SpanTree, llms: list[Span], stage_spans: list[Span]) -> list[Span]:
    """The LLM spans of the answering model: not a model call inside a retriever or a ranking step
    (an LLM reranker's prompt lists every candidate in full: read as the prompt, every candidate
    would look delivered), and not a wrapper of another LLM span (LlamaIndex's ``predict`` holds
    the template object; the ``complete`` span inside it holds the text the model received)."""
    if not llms:
        return llms
    if len(llms) == 1:  # the usual request: one model call, which wraps no other; is it inside a step?
        stage_ids = {s.span_id for s in stage_spans}
        if not any(a.span_id in stage_ids for a in tree.ancestors(llms[0])):
            return llms
    inside = tree.marked_below({s.span_id for s in stage_spans}, llms) if stage_spans else set()
    llm_ids = {s.span_id for s in llms}
    wrappers = tree.marked_above(llm_ids) & llm_ids
    answering = [s for s in llms if s.span_id not in inside and s.span_id not in wrappers]
    if inside:
        names = sorted({s.name for s in llms if s.span_id in inside})
        req.notes["stage_models"] = (f"{len(inside)} LLM span(s) inside a retrieval or ranking step {names[:3]}: "
                                     "that step's model calls, not the answering model")
    return answering
