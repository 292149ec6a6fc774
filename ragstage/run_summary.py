"""What a run's traces say beyond the buckets: how much of the ranked evidence the prompt could hold.

Seed 000's run reports that "on average about 2.4 of the 5 abstracts fit" in a 1,024-token
prompt: the budget, not the ranking, decided what the model saw. :func:`prompt_fill` computes that
number from any run's own traces, per pipeline, so a chapter shows the run's figure instead of
quoting someone else's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

import pandas as pd

from .trace import Trace

__all__ = ["prompt_fill"]

_FILL_COLUMNS = ["group", "questions", "top", "mean_offered", "mean_in_prompt", "share", "budget_stopped"]


def prompt_fill(traces: Iterable[Trace], top: int = 5) -> pd.DataFrame:
    """Per pipeline: how many of the top ``top`` ranked passages reached the prompt, on average.

    ``mean_offered`` is the mean of ``min(top, ranked)`` (a retriever may return fewer than
    ``top`` candidates), ``mean_in_prompt`` the mean number of passages in the prompt, ``share``
    their ratio (passages in prompts over passages offered), and ``budget_stopped`` the number of
    questions whose prompt holds fewer passages than were offered. The ranked list is ``reranked``
    when logged, else ``retrieved``. Traces with a service error or no logged prompt are left out:
    they say nothing about the budget.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    offered: dict[str, list[int]] = defaultdict(list)
    kept: dict[str, list[int]] = defaultdict(list)
    for t in traces:
        if t.error is not None or t.prompt is None:
            continue
        ranked = t.reranked if t.reranked is not None else t.retrieved
        offered[t.pipeline].append(min(top, len(ranked)))
        kept[t.pipeline].append(len(t.prompt))
    rows = []
    for group, counts in offered.items():
        total = sum(counts)
        rows.append((group, len(counts), top, total / len(counts), sum(kept[group]) / len(counts),
                     sum(kept[group]) / total if total else float("nan"),
                     sum(k < o for k, o in zip(kept[group], counts))))
    return pd.DataFrame(rows, columns=_FILL_COLUMNS)
