"""Per-stage metrics, each defined on what the stage was given, not on the final answer.

Functions return ``None`` where a metric does not apply (no relevant ids, no claims): a
question with nothing to find must not count as perfect recall, and an answer with no
claims must not count as fully supported.

The ranking metrics (:func:`recall_at_k`, :func:`hit_at_k`, :func:`reciprocal_rank`,
:func:`ndcg_at_k`) agree with trec_eval (``R@k``, ``Success@k``, ``RR``/``RR@k``,
``nDCG@k`` in ir-measures; tests/unit/ragstage/test_metrics_reference.py checks this on random runs) with
two differences of convention:

* a question with no relevant id gives ``None`` here and 0 in trec_eval, which would count
  "nothing to find" as a miss and pull a mean down;
* the ranking is the order of the list, as a stage logged it; trec_eval re-sorts a run by
  score and breaks ties by document id, so tied scores can rank differently there.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

__all__ = [
    "recall_at_k",
    "hit_at_k",
    "reciprocal_rank",
    "ndcg_at_k",
    "evidence_retention",
    "claim_support",
    "context_precision",
    "refusal_accuracy",
]


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Share of the relevant ids found in the top ``k``; None when nothing is relevant."""
    _check_k(k)
    rel = set(relevant)
    if not rel:
        return None
    return len(rel.intersection(ranked[:k])) / len(rel)


def hit_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> bool | None:
    """Whether at least one relevant id is in the top ``k``: a yes/no, so a binomial rate."""
    _check_k(k)
    rel = set(relevant)
    if not rel:
        return None
    return bool(rel.intersection(ranked[:k]))


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float | None:
    """1 / rank of the first relevant id in the top ``k`` (0 when none is); average it for MRR.

    ``k=None`` looks at the whole list; ``k=0`` is an error, as in the other metrics (not
    silently "the whole list").
    """
    if k is not None:
        _check_k(k)
    rel = set(relevant)
    if not rel:
        return None
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc in rel:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, float] | Iterable[str], k: int) -> float | None:
    """nDCG@k with gains ``rel`` and discount 1/log2(rank + 1).

    ``relevance`` is a mapping id -> graded relevance, or a set of ids (all gain 1). Used to
    score a reranker on the order it produced, before versus after.
    """
    _check_k(k)
    gains = dict(relevance) if isinstance(relevance, Mapping) else {d: 1.0 for d in relevance}
    gains = {d: float(g) for d, g in gains.items() if g > 0}
    if not gains:
        return None
    dcg = sum(gains.get(doc, 0.0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], start=1))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg


def evidence_retention(prompt_ids: Iterable[str], relevant: Iterable[str]) -> float | None:
    """Share of the relevant ids whose text reached the final prompt."""
    rel = set(relevant)
    if not rel:
        return None
    return len(rel.intersection(prompt_ids)) / len(rel)


def claim_support(claims: Sequence[bool]) -> float | None:
    """Share of an answer's factual claims supported by the prompt; None for no claims."""
    if not claims:
        return None
    return sum(bool(c) for c in claims) / len(claims)


def context_precision(prompt_ids: Sequence[str], relevant: Iterable[str],
                      tokens: Mapping[str, int] | None = None) -> float | None:
    """Share of the prompt that is relevant: by passage, or by tokens when ``tokens`` is given.

    A prompt crowded by near-duplicates or long irrelevant passages has low precision even
    when the gold passage is in it.
    """
    if not prompt_ids:
        return None
    rel = set(relevant)
    if tokens is None:
        return sum(1 for d in prompt_ids if d in rel) / len(prompt_ids)
    missing = [d for d in prompt_ids if d not in tokens]
    if missing:
        raise ValueError(f"no token count for prompt id(s) {missing[:3]}")
    total = sum(tokens[d] for d in prompt_ids)
    if total == 0:
        return None
    return sum(tokens[d] for d in prompt_ids if d in rel) / total


def refusal_accuracy(answerable: Sequence[bool], refused: Sequence[bool]) -> dict[str, float | None]:
    """Refusal behaviour on both kinds of question, reported apart.

    ``correct_refusal_rate`` over the unanswerable questions and ``unnecessary_refusal_rate``
    over the answerable ones: a model that refuses everything scores perfectly on the first
    and is exposed by the second.
    """
    if len(answerable) != len(refused):
        raise ValueError(f"{len(answerable)} answerable flags against {len(refused)} refusal flags")
    un = [r for a, r in zip(answerable, refused) if not a]
    ans = [r for a, r in zip(answerable, refused) if a]
    return {
        "correct_refusal_rate": sum(un) / len(un) if un else None,
        "unnecessary_refusal_rate": sum(ans) / len(ans) if ans else None,
        "accuracy": (sum(un) + sum(not r for r in ans)) / len(answerable) if answerable else None,
    }
