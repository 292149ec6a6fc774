"""What a run says beyond its bucket table: how full its prompts were, and where the points are.

* :func:`prompt_fill`: the SciFact run of *Find the Failing RAG Stage Before You Change the
  Prompt* reports that "on average about 2.4 of the 5 abstracts fit" in a 1,024-token prompt;
  this computes that figure from any run's own traces.
* :func:`prompt_ceiling`: a generation change (a new prompt, a new model) can only act on the
  questions whose evidence reached the prompt; everything lost upstream stays lost. Per
  pipeline, the number of those questions is the ceiling of any such change.
* :class:`Points`: the reading of the two oracles beside the full system in *Which RAG
  component broke?*: is generation capable but starved (the points are upstream), or failing
  with the evidence in front of it?

Each works on counts, so the same function reads a run's traces and a paper's published counts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping

import pandas as pd

from ..attribution import Outcome
from ..stats import wilson
from ..trace import Trace

__all__ = ["prompt_fill", "prompt_ceiling", "Points"]

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


_UPSTREAM = (Outcome.QUERY_UNDERSTANDING, Outcome.RETRIEVAL, Outcome.RERANKING, Outcome.PROMPT_ASSEMBLY)
_REACHED = (Outcome.GENERATION, Outcome.SOURCE_OR_LABEL, Outcome.NONE, Outcome.UNJUDGED)
_CEILING_COLUMNS = ["group", "questions", "lost_upstream", "reached_prompt", "right", "unknown"]


def prompt_ceiling(counts: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """Per group, from bucket counts (``report.count_buckets(traces)``, or published counts):

    ``questions`` in the funnel (service failures, unlabelled and unanswerable questions are
    not), ``lost_upstream`` (query understanding, retrieval, reranking, assembly),
    ``reached_prompt`` (the evidence was in the prompt: the ceiling of any generation change),
    ``right`` (answered correctly), and ``unknown`` (prompt ids not logged, answers not judged;
    ``reached_prompt`` counts the unjudged ones, since their evidence did reach the prompt).
    """
    rows = []
    for group, buckets in counts.items():
        count = {stage: int(buckets.get(stage.value, 0)) for stage in Outcome}
        upstream, reached = sum(count[s] for s in _UPSTREAM), sum(count[s] for s in _REACHED)
        rows.append((group, upstream + reached + count[Outcome.NOT_LOGGED], upstream, reached, count[Outcome.NONE],
                     count[Outcome.NOT_LOGGED] + count[Outcome.UNJUDGED]))
    return pd.DataFrame(rows, columns=_CEILING_COLUMNS)


@dataclass(frozen=True)
class Points:
    """The full system, the gold-context oracle and retrieved-context sufficiency, as ``(k, n)``.

    ``upstream_gap`` (oracle minus system) is what perfect evidence would add with this
    generator; ``generation_gap`` (sufficiency minus system) is the share of questions whose
    evidence reached the prompt and still went wrong. As *Which RAG component broke?* reads
    them: a large first gap with a small second means generation is capable but starved, and
    the points are upstream; the reverse means generation fails with the evidence in front of
    it, and the prompt or model comes first.
    """

    system: tuple[int, int]
    oracle: tuple[int, int]
    sufficiency: tuple[int, int]

    def table(self) -> pd.DataFrame:
        rows = [(name, k, n, k / n, *wilson(k, n)) for name, (k, n) in
                (("full system (correct)", self.system), ("gold-context oracle (correct)", self.oracle),
                 ("retrieved-context sufficiency", self.sufficiency))]
        return pd.DataFrame(rows, columns=["measure", "k", "n", "rate", "low", "high"])

    @staticmethod
    def _rate(count: tuple[int, int]) -> float:
        return count[0] / count[1]

    @property
    def upstream_gap(self) -> float:
        return self._rate(self.oracle) - self._rate(self.system)

    @property
    def generation_gap(self) -> float:
        return self._rate(self.sufficiency) - self._rate(self.system)

    def reading(self) -> str:
        """Which of the two readings of the oracles these counts point to, with the gaps that decide it."""
        gaps = (f"perfect evidence would add {self.upstream_gap:+.0%} (oracle minus system); "
                f"{self.generation_gap:+.0%} of the questions had the evidence and still went wrong "
                f"(sufficiency minus system)")
        if self.upstream_gap > self.generation_gap:
            return f"generation is capable but starved: the points are upstream ({gaps})"
        if self.upstream_gap < self.generation_gap:
            return f"generation fails with the evidence in front of it: fix the prompt or the model first ({gaps})"
        return f"the two halves lose about as much ({gaps})"
