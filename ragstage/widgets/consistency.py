"""What a trace cannot have logged: ids that appear at a stage without passing the stage before.

A reranker reorders and cuts what retrieval gave it, and the prompt holds text from the
passages that survived; so an id in ``reranked`` that was never retrieved, or an id in
``prompt`` that no earlier stage kept, means the trace was edited (or logged) wrongly. An id
that is not in the corpus at all is named as such. These are warnings, not errors: the
diagnosis still runs on the trace as typed, and the warning says why it may mean nothing.
"""

from __future__ import annotations

from typing import Collection, Sequence

from ..trace import Trace

__all__ = ["inconsistencies"]


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(ids)


def inconsistencies(trace: Trace, corpus: Collection[str] | None = None) -> list[str]:
    """One sentence per inconsistency in ``trace`` (empty when it is consistent).

    ``corpus`` holds the ids of every document; without it only the stage order is checked.
    """
    problems = []
    retrieved = list(trace.retrieved)
    if trace.reranked is not None:
        extra = [i for i in trace.reranked if i not in retrieved]
        if extra:
            problems.append(f"reranked holds {_listed(extra)}, never retrieved: a reranker only reorders and cuts "
                            "what retrieval returned")
    upstream = retrieved if trace.reranked is None else list(trace.reranked)
    if trace.prompt is not None:
        extra = [i for i in trace.prompt if i not in upstream]
        if extra:
            where = "retrieved" if trace.reranked is None else "reranked"
            problems.append(f"prompt holds {_listed(extra)}, not in {where}: the prompt is built from the passages "
                            "the earlier stages kept")
    if corpus is not None:
        known = set(corpus)
        for name, ids in (("gold", trace.gold), ("retrieved", retrieved), ("reranked", trace.reranked),
                          ("prompt", trace.prompt)):
            unknown = [i for i in (ids or ()) if i not in known]
            if unknown:
                problems.append(f"{name}: {_listed(unknown)} not in the corpus")
    return problems
