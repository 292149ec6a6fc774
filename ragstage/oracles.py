"""The two oracle measures of *Which RAG component broke?*, on any set of traces.

* :func:`correctness` of a run is the end-to-end score; of a *gold-context oracle* run
  (the gold passage forced into the prompt, same generator) it is the ceiling of the
  generation stage on its own.
* :func:`sufficiency` asks whether the context a pipeline actually assembled holds the
  gold evidence: the ceiling of the upstream half (query understanding, retrieval,
  reranking, assembly), whatever the model then did with it. For id-answer tasks this
  exact rule is the whole answer; a model judge must be checked against it.

Read together: a high oracle and a low sufficiency mean generation is capable but starved;
a sufficiency well above correctness means the model is handed answers it fails to use.
"""

from __future__ import annotations

from typing import Iterable

from .attribution import Outcome, diagnose, survives
from .trace import Trace

__all__ = ["correctness", "sufficiency"]


def correctness(traces: Iterable[Trace], require: str = "any") -> tuple[int, int]:
    """``(k, n)``: how many traces were answered correctly (bucket ``none``), out of all."""
    stages = [diagnose(t, require).stage for t in traces]
    return sum(s is Outcome.NONE for s in stages), len(stages)


def sufficiency(traces: Iterable[Trace], require: str = "any") -> tuple[int, int]:
    """``(k, n)``: how many assembled prompts contain the gold evidence.

    The retrieved-context sufficiency experiment with an exact judge. Questions without
    gold ids are left out of ``n``; so are those whose prompt ids were not logged, since
    nothing says what their context held.
    """
    k = n = 0
    for t in traces:
        if not t.gold or t.prompt is None:
            continue
        n += 1
        k += survives(t.gold, t.prompt, require)
    return k, n
