"""Stage attribution: the first stage at which a question lost its gold evidence.

The walk follows the order the evidence travels (query understanding, retrieval,
reranking, prompt assembly, generation) and stops at the first stage that lost it. A
loss upstream is final: no prompt wording can use a passage the model never received,
so a later stage is never blamed for an earlier stage's loss.

The rules live in one function, :func:`diagnose_record`, which works on the plain
normalised dict of :func:`ragstage.trace.check_record`. :func:`diagnose` (on a
:class:`~ragstage.trace.Trace`) and the streaming CLI both call it, so a notebook and
``ragstage attribute`` can never disagree.
"""

from __future__ import annotations

import re
from collections import Counter
from enum import Enum
from typing import Any, Iterable, Mapping, NamedTuple

from .trace import Trace

__all__ = ["Stage", "BUCKETS", "RIGHT", "Diagnosis", "diagnose", "diagnose_record", "replay", "REASONS"]


class Stage(str, Enum):
    """The outcome buckets, in the order the walk checks them (also the report order)."""

    ENDPOINT_UNAVAILABLE = "endpoint_unavailable"
    LABEL_MISSING = "label_missing"
    CORRECT_REFUSAL = "correct_refusal"
    MISSING_REFUSAL = "missing_refusal"
    QUERY_UNDERSTANDING = "query_understanding"
    RETRIEVAL = "retrieval"
    RERANKING = "reranking"
    PROMPT_ASSEMBLY = "prompt_assembly"
    GENERATION = "generation"
    SOURCE_OR_LABEL = "source_or_label"
    NONE = "none"
    UNJUDGED = "unjudged"

    def __str__(self) -> str:  # print as the plain bucket name
        return self.value


BUCKETS: tuple[str, ...] = tuple(s.value for s in Stage)
#: The buckets that count as a right outcome in a paired comparison.
RIGHT: frozenset[str] = frozenset({Stage.NONE.value, Stage.CORRECT_REFUSAL.value})

#: The reasons a `generation` diagnosis can carry (plus the generic last one).
REASONS = {
    "refused": "refused despite evidence in the prompt",
    "cited_outside": "cited an id not in the prompt",
    "numeric_unmarked": "numeric claim without a citation marker",
    "unsupported": "unsupported claims",
    "non_gold": "named a non-gold passage",
    "wrong": "wrong answer despite evidence in the prompt",
}

_MARKER = re.compile(r"\[(\d+)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_DIGIT = re.compile(r"\d")


class Diagnosis(NamedTuple):
    """Where a question's evidence was lost, why, and the numbers behind it.

    ``recall`` is the share of gold ids retrieved, ``retention`` the share that reached the
    prompt, ``support`` the share of labelled claims supported. Each is ``None`` when it
    does not apply (no gold ids, no prompt ids logged, no claim labels): a missing number
    is never reported as a perfect 1.0.
    """

    stage: Stage
    reason: str = ""
    recall: float | None = None
    retention: float | None = None
    support: float | None = None

    @property
    def right(self) -> bool:
        """True for the outcomes a comparison counts as right (none, correct_refusal)."""
        return self.stage.value in RIGHT


def _share(gold: frozenset[str], ids: Iterable[str] | None) -> float | None:
    if not gold or ids is None:
        return None
    return len(gold.intersection(ids)) / len(gold)


def _lost(gold: frozenset[str], ids: Iterable[str], require: str) -> bool:
    kept = gold.intersection(ids)
    return not kept if require == "any" else len(kept) < len(gold)


def _marker_problems(answer: str, n_prompt: int) -> str | None:
    """Citation checks for answers that cite with ``[n]`` markers (n = prompt position)."""
    markers = [int(m) for m in _MARKER.findall(answer)]
    if not markers:
        return None
    if any(m < 1 or m > n_prompt for m in markers):
        return REASONS["cited_outside"]
    for sentence in _SENTENCE_END.split(answer):
        if _DIGIT.search(_MARKER.sub("", sentence)) and not _MARKER.search(sentence):
            return REASONS["numeric_unmarked"]
    return None


def _judge(rec: Mapping[str, Any], gold: frozenset[str]) -> tuple[bool | None, str]:
    """Judge the answer in the documented order: correct, then answer_ids, then claims."""
    claims = rec["claims"]
    if rec["correct"] is not None:
        return rec["correct"], "judged by the 'correct' label"
    if rec["answer_ids"] is not None:
        return bool(gold.intersection(rec["answer_ids"])), "judged by answer_ids against gold"
    if claims:
        return all(claims), "judged by claim support labels"
    return None, "evidence reached the prompt, but nothing judges the answer"


def _generation_reason(rec: Mapping[str, Any], gold: frozenset[str], prompt: tuple[str, ...]) -> Stage | str:
    """Why a wrong answer with the evidence in its prompt went wrong (or that the source did)."""
    answer_ids = rec["answer_ids"] or ()
    if any(a not in prompt for a in answer_ids):
        return REASONS["cited_outside"]
    marker = _marker_problems(rec["answer"], len(prompt))
    if marker:
        return marker
    claims = rec["claims"]
    if claims and not all(claims):
        return REASONS["unsupported"]
    if answer_ids and not gold.intersection(answer_ids):
        return REASONS["non_gold"]
    if claims:  # wrong, yet every claim is supported by the prompt
        return Stage.SOURCE_OR_LABEL
    return REASONS["wrong"]


def diagnose_record(rec: Mapping[str, Any], require: str = "any") -> Diagnosis:
    """Diagnose a normalised trace record (see :func:`diagnose`)."""
    if require not in ("any", "all"):
        raise ValueError(f"require must be 'any' or 'all', got {require!r}")
    gold = frozenset(rec["gold"])
    retrieved = rec["retrieved"]
    prompt = rec["prompt"]
    claims = rec["claims"]
    recall = _share(gold, retrieved)
    retention = _share(gold, prompt)
    support = sum(claims) / len(claims) if claims else None

    def out(stage: Stage, reason: str) -> Diagnosis:
        return Diagnosis(stage, reason, recall, retention, support)

    if rec["error"] is not None:
        err = rec["error"]
        return out(Stage.ENDPOINT_UNAVAILABLE, f"service failure at {err['stage']}: {err['message']}".rstrip(": "))
    if not rec["answerable"]:
        if rec["refused"]:
            return out(Stage.CORRECT_REFUSAL, "unanswerable, and the answer declined")
        return out(Stage.MISSING_REFUSAL, "unanswerable, but the answer did not decline")
    if not gold:
        return out(Stage.LABEL_MISSING, "answerable, but no gold evidence is labelled")
    if rec["query_ok"] is False:
        return out(Stage.QUERY_UNDERSTANDING, "the rewritten query or its filters were judged wrong")
    if _lost(gold, retrieved, require):
        return out(Stage.RETRIEVAL, "gold evidence not among the retrieved candidates")
    if rec["reranked"] is not None and _lost(gold, rec["reranked"], require):
        return out(Stage.RERANKING, "retrieved, then dropped by the reranker's cut")
    if prompt is None:
        return out(Stage.PROMPT_ASSEMBLY, "prompt ids not logged: the evidence cannot be shown to reach the prompt")
    if _lost(gold, prompt, require):
        return out(Stage.PROMPT_ASSEMBLY, "survived ranking, but its text never reached the prompt")
    if rec["refused"]:
        return out(Stage.GENERATION, REASONS["refused"])
    right, how = _judge(rec, gold)
    if right is None:
        return out(Stage.UNJUDGED, how)
    if right:
        return out(Stage.NONE, f"answered correctly ({how})")
    reason = _generation_reason(rec, gold, tuple(prompt))
    if reason is Stage.SOURCE_OR_LABEL:
        return out(Stage.SOURCE_OR_LABEL, "judged wrong although every claim is supported by the prompt: "
                                          "check the source's version and the gold label")
    return out(Stage.GENERATION, str(reason))


def diagnose(trace: Trace, require: str = "any") -> Diagnosis:
    """The first stage that lost the gold evidence for one trace.

    ``require="any"``: a stage loses the question when no gold id survives it (the SciFact
    convention: one relevant abstract is enough). ``require="all"``: when any gold id is
    missing (the audit convention, where an incomplete multi-document answer is a loss).
    """
    return diagnose_record(vars(trace), require)




def replay(traces: Iterable[Trace], require: str = "any") -> Counter[str]:
    """Count traces per bucket: the first thing to run on a batch of stored incidents."""
    return Counter(diagnose(t, require).stage.value for t in traces)
