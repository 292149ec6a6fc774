"""One request's spans as a checked tree: unique span ids, no parent loops, linear walks.

Exact copies of a span (an export pulled twice) are kept once and counted; two different spans
with one id, or a parent chain that loops, are errors naming the spans: either would silently
drop or double stages. The walks (:meth:`SpanTree.marked_above`, :meth:`SpanTree.marked_below`)
visit each span once, so a request of thousands of spans is read in linear time.
"""

from __future__ import annotations

from typing import Iterator

from .spans import Span, SpanError

__all__ = ["SpanTree"]


class SpanTree:
    """One request's spans as a tree, checked: unique span ids, no parent loops.

    Exact copies of a span (an export pulled twice) are kept once and counted; two different
    spans with one id, or a parent chain that loops, are errors naming the spans: either
    would silently drop or double stages.
    """

    def __init__(self, trace_id: str, spans: list[Span]) -> None:
        self.by_id: dict[str, Span] = {}
        self.copies = 0
        for s in spans:
            seen = self.by_id.get(s.span_id)
            if seen is None:
                self.by_id[s.span_id] = s
            elif seen == s:
                self.copies += 1
            else:
                raise SpanError(f"trace {trace_id}: two different spans share span id {s.span_id} "
                                f"({seen.name!r} and {s.name!r})", field="span_id")
        self.spans = list(self.by_id.values())
        self.missing_parents = sorted({s.parent_id for s in self.spans
                                       if s.parent_id is not None and s.parent_id not in self.by_id})
        self.roots = [s for s in self.spans if s.parent_id is None]
        self._check_loops(trace_id)

    def _check_loops(self, trace_id: str) -> None:
        """Every span must reach a root or a missing parent by following parents: one pass."""
        state: dict[str, int] = {}  # 1: on the current path, 2: known to end
        by_id = self.by_id
        for start in self.spans:
            path = []
            span: Span | None = start
            while span is not None:
                sid = span.span_id
                seen = state.get(sid)
                if seen == 2:
                    break
                if seen == 1:
                    loop = path[path.index(sid):]
                    raise SpanError(f"trace {trace_id}: the parent chain loops through span(s) "
                                    f"{', '.join(loop[:4])}", field="parent_id")
                state[sid] = 1
                path.append(sid)
                span = by_id.get(span.parent_id) if span.parent_id is not None else None
            for sid in path:
                state[sid] = 2

    def ancestors(self, span: Span) -> Iterator[Span]:
        while span.parent_id is not None and span.parent_id in self.by_id:
            span = self.by_id[span.parent_id]
            yield span

    def marked_above(self, marked: set[str]) -> set[str]:
        """Ids of the spans with a marked span below them (linear: each span is visited once)."""
        out: set[str] = set()
        for sid in marked:
            for a in self.ancestors(self.by_id[sid]):
                if a.span_id in out:
                    break
                out.add(a.span_id)
        return out

    def marked_below(self, marked: set[str], among: list[Span]) -> set[str]:
        """Ids of the spans of ``among`` with a marked span above them."""
        memo: dict[str, bool] = {}

        def above(span: Span) -> bool:
            chain = []
            result = False
            for a in self.ancestors(span):
                if a.span_id in memo:
                    result = memo[a.span_id]
                    break
                chain.append(a.span_id)
                if a.span_id in marked:
                    result = True
                    break
            for sid in chain:
                memo.setdefault(sid, result or sid in marked)
            return result

        return {s.span_id for s in among if above(s)}
