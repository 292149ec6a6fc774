"""Where on a server's trace a :class:`~.plan.Note` goes: matched from the spans the server
returns for the trace id, never from anything the trace file would have to keep.

The root span carries the request's annotation; the span of the stage that lost the evidence
carries another (every retriever span for a retrieval loss, the last reranker or model span to
finish for a reranking or model-side loss, the innermost failing span for a service failure); and
each retriever's and reranker's list says at which positions the gold sat. A retriever that
wraps another retriever is read as a ranking step, as ingest reads it. Spans are ragstage's
own :class:`~ragstage.ingest.Span` (OpenInference kinds and flat attributes), whichever server
they came from, and document ids are derived exactly as ingest derived them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ingest.openinference import documents
from ..ingest.requests import content_id
from ..ingest.spans import Span
from .plan import Note

__all__ = ["Targets", "match"]


@dataclass(frozen=True)
class Targets:
    """The span ids a note is written on, and the gold's positions in each ranked list."""

    root: str
    losing: tuple[str, ...] = ()  # spans of the losing stage; () when the trace has none of that kind
    # (span id, span kind, 0-based position, document id) of every gold document in a retriever's
    # or reranker's list
    gold_positions: tuple[tuple[str, str, int, str], ...] = ()
    listed: tuple[str, ...] = field(default=())  # ids of the spans whose lists were searched


def _ids(span: Span) -> list[str] | None:
    prefix = "reranker.output_documents" if span.kind == "RERANKER" else "retrieval.documents"
    docs = documents(span, prefix)
    if docs is None:
        return None
    return [d.id if d.id is not None else content_id(d.content) for d in docs]


def _order(span: Span) -> tuple[int, int]:
    return span.start_ns, span.end_ns


def _ancestors_of(spans: list[Span], by_id: dict[str, Span]) -> set[str]:
    """Ids of every span above one of ``spans``."""
    out: set[str] = set()
    for s in spans:
        parent = by_id.get(s.parent_id) if s.parent_id is not None else None
        while parent is not None and parent.span_id not in out:
            out.add(parent.span_id)
            parent = by_id.get(parent.parent_id) if parent.parent_id is not None else None
    return out


def _wrapping_retrievers(spans: list[Span], by_id: dict[str, Span]) -> set[str]:
    """Ids of the retriever spans with a retriever span below them: a retriever that wraps
    another and cuts its list (LangChain's contextual-compression retrievers) is a ranking
    step, as ingest reads it; the innermost retrievers are the retrieval stage."""
    retrievers = [s for s in spans if s.kind == "RETRIEVER"]
    return {sid for sid in _ancestors_of(retrievers, by_id) if by_id[sid].kind == "RETRIEVER"}


def match(note: Note, spans: list[Span]) -> Targets | None:
    """The note's targets among the trace's ``spans``; None when there are no spans."""
    if not spans:
        return None
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in by_id]
    root = min(roots or spans, key=_order)
    ranked = sorted((s for s in spans if s.kind in ("RETRIEVER", "RERANKER")), key=_order)
    gold = set(note.gold)
    positions, listed = [], []
    for s in ranked:
        ids = _ids(s)
        if ids is None:
            continue
        listed.append(s.span_id)
        positions += [(s.span_id, s.kind, i, cid) for i, cid in enumerate(ids) if cid in gold]
    kind = note.losing_kind
    wrapping = _wrapping_retrievers(spans, by_id)
    losing: list[Span] = []
    if kind == "ERROR":
        failing = [s for s in spans if s.error is not None]
        above = _ancestors_of(failing, by_id)  # an error propagates up: the innermost span raised it
        losing = sorted((s for s in failing if s.span_id not in above), key=_order)[:1]
    elif kind == "RETRIEVER":
        losing = [s for s in ranked if s.kind == "RETRIEVER" and s.span_id not in wrapping]
    elif kind is not None:
        of_kind = [s for s in spans if s.kind == kind or (kind == "RERANKER" and s.span_id in wrapping)]
        losing = [max(of_kind, key=lambda s: s.end_ns)] if of_kind else []
    return Targets(root=root.span_id, losing=tuple(s.span_id for s in losing), gold_positions=tuple(positions),
                   listed=tuple(listed))
