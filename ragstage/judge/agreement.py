"""How far a judge agrees with gold where gold exists: per (question, passage) pair and per bucket.

A judge's labels are worth using only next to its agreement with people: per pair (did it call
the gold passages relevant and the others not?) and, what the rates rest on, per bucket (does the
silver trace land in the stage the gold trace lands in?). Both come as a
:class:`ragstage.ppi.agreement.Confusion` (rows gold, columns judge) with Cohen's kappa.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..attribution import BUCKETS, diagnose
from ..ppi.agreement import Confusion, confusion
from ..trace import Trace
from .relevance import PairVerdict

__all__ = ["RELEVANT", "NOT_RELEVANT", "pair_agreement", "bucket_agreement"]

RELEVANT, NOT_RELEVANT = "relevant", "not relevant"


def pair_agreement(verdicts: Iterable[PairVerdict], gold: Mapping[str, Iterable[str]]) -> Confusion:
    """The judge's verdicts against gold ids (``query_id -> gold doc ids``); an unreadable reply
    counts as "not relevant", as in the labels. A verdict on a question gold does not know is an error."""
    gold_sets = {q: set(ids) for q, ids in gold.items()}
    pairs = []
    for v in verdicts:
        if v.query_id not in gold_sets:
            raise ValueError(f"query_id {v.query_id!r} has no gold")
        pairs.append((RELEVANT if v.doc_id in gold_sets[v.query_id] else NOT_RELEVANT,
                      RELEVANT if v.relevant else NOT_RELEVANT))
    return confusion([g for g, _ in pairs], [j for _, j in pairs], (RELEVANT, NOT_RELEVANT))


def bucket_agreement(silver: Iterable[Trace], gold: Iterable[Trace], require: str = "any") -> Confusion:
    """The silver traces' buckets against the gold traces' (paired by ``query_id`` and ``pipeline``;
    a request on one side only is an error naming it)."""
    judged = {(t.query_id, t.pipeline): diagnose(t, require).stage.value for t in silver}
    truth = {(t.query_id, t.pipeline): diagnose(t, require).stage.value for t in gold}
    if judged.keys() != truth.keys():
        odd = sorted(judged.keys() ^ truth.keys())
        raise ValueError(f"{len(odd)} request(s) on one side only (first: {odd[0]})")
    keys = sorted(truth)
    return confusion([truth[k] for k in keys], [judged[k] for k in keys], BUCKETS)
