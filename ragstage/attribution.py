"""Stage attribution: the first stage at which a question lost its gold evidence.

The walk follows the order the evidence travels (query understanding, retrieval,
reranking, prompt assembly, generation) and stops at the first stage that lost it. A
loss upstream is final: no prompt wording can use a passage the model never received,
so a later stage is never blamed for an earlier stage's loss. A stage whose output was
not logged cannot be blamed either: such a question is ``not_logged``, never a loss and
never right.

The rules themselves are the tables of :mod:`ragstage.rules`; this module runs them on one
trace with their Python interpreter (:mod:`ragstage.python_rules`) and says what the outcome
means: the reason's text, the shares behind it, the flags and the severity.
:func:`diagnose`, the command line, the Parquet reader and Spark all run the same tables, so a
notebook and ``ragstage attribute`` can never disagree.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence, Union

from .python_rules import flags_of, rule_of
from .rules import (
    BUCKETS,
    FLAG_COMBINATIONS,
    FLAGS,
    RIGHT,
    RULES,
    UNDECIDED,
    Outcome,
    check_require,
    survives,
)
from .trace import Trace

if TYPE_CHECKING:
    from .typed_record import Record

#: What the rules read: a checked trace with attribute access.
Checked = Union[Trace, "Record"]

__all__ = [
    "Outcome",
    "BUCKETS",
    "RIGHT",
    "UNDECIDED",
    "REASONS",
    "FLAGS",
    "SEVERITY",
    "GENERATION_KINDS",
    "Diagnosis",
    "outcome",
    "check_require",
    "survives",
    "diagnose",
    "diagnose_record",
    "generation_kind",
    "replay",
]

#: Every reason a diagnosis gives, by code, in the order the walk reaches them; a
#: ``generation`` diagnosis carries one of ``refused`` to ``wrong``, most specific first. The
#: one reason not listed is ``service_failure``, whose text names the failing stage and its message.
REASONS: dict[str, str] = {
    "declined_unanswerable": "unanswerable, and the answer declined",
    "not_declined": "unanswerable, but the answer did not decline",
    "no_gold": "answerable, but no gold evidence is labelled",
    "query_judged_wrong": "the rewritten query or its filters were judged wrong",
    "not_retrieved": "gold evidence not among the retrieved candidates",
    "reranker_cut": "retrieved, then dropped by the reranker's cut",
    "prompt_not_logged": ("survived every logged stage, but the prompt ids were not logged: "
                          "the stage that lost or kept it cannot be named"),
    "truncated": "truncated: only part of the gold passage's text reached the prompt",
    "not_in_prompt": "survived ranking, but its text never reached the prompt",
    "refused": "refused despite evidence in the prompt",
    "cited_outside": "cited an id not in the prompt",
    "unsupported": "unsupported claims",
    "partial": "supported by the prompt but incomplete (partial extraction)",
    "non_gold": "named a non-gold passage",
    "numeric_unmarked": "numeric claim without a citation marker",
    "gold_named_wrong": "named a gold passage but was judged wrong",
    "wrong": "wrong answer despite evidence in the prompt",
    "supported_but_wrong": ("judged wrong although every claim is supported by the prompt: "
                            "check the source's version and the gold label"),
    "claims_supported": "every claim was supported by the prompt; correctness was not judged",
    "not_judged": "evidence reached the prompt, but nothing judges the answer",
    "correct_by_label": "answered correctly (judged by the 'correct' label)",
    "correct_by_ids": "answered correctly (judged by answer_ids against gold)",
}

#: Severity, as *Diagnosing RAG Failure Modes* grades it: what happens to the user when it
#: fires. critical: a confidently wrong answer is served, or a citation is fabricated; high: a
#: common path returns wrong or missing information; medium: quality degrades but the answer
#: is still usable. Buckets that are not failures (right, unjudged, unlabelled, unlogged) have none.
SEVERITY: dict[str, str] = {
    "fabricated_citation": "critical",
    "missing_refusal": "critical",
    "source_or_label": "critical",
    "endpoint_unavailable": "high",
    "query_understanding": "high",
    "retrieval": "high",
    "reranking": "high",
    "prompt_assembly": "high",
    "generation": "high",
    "numeric_unmarked": "medium",
}
_SEVERITY_ORDER = ("medium", "high", "critical")

#: The kinds of generation failure of *Which RAG component broke?* (plus a refusal), as
#: :func:`generation_kind` names them.
GENERATION_KINDS: tuple[str, ...] = ("ignored_context", "wrong_passage", "partial")
_KIND_OF_REASON = {
    "refused": "refused",
    "cited_outside": "ignored_context",
    "unsupported": "ignored_context",
    "partial": "partial",
    "gold_named_wrong": "partial",
    "non_gold": "wrong_passage",
}


class Diagnosis(NamedTuple):
    """Where a question's evidence was lost, why, the numbers behind it, and its flags.

    ``recall`` is the share of gold ids retrieved, ``retention`` the share that reached the
    prompt, ``support`` the share of labelled claims supported. Each is ``None`` when it
    does not apply (no gold ids, no prompt ids logged, no claim labels): a missing number
    is never reported as a perfect 1.0. ``flags`` (names from :data:`FLAGS`) are recorded
    whatever the bucket: a right answer can still fabricate a citation. ``code`` names the
    reason (a key of :data:`REASONS`, or ``service_failure``); ``reason`` is its text.
    """

    stage: Outcome
    reason: str = ""
    recall: float | None = None
    retention: float | None = None
    support: float | None = None
    flags: tuple[str, ...] = ()
    code: str = ""

    @property
    def right(self) -> bool:
        """True for the outcomes a comparison counts as right (none, correct_refusal)."""
        return self.stage.value in RIGHT

    @property
    def severity(self) -> str | None:
        """The highest severity of the bucket and the flags, or None when neither has one."""
        levels = [SEVERITY[name] for name in (self.stage.value, *self.flags) if name in SEVERITY]
        return max(levels, key=_SEVERITY_ORDER.index) if levels else None


def _gold_in(gold_ids: Sequence[str], ids: Sequence[str] | None) -> int:
    """How many distinct gold ids ``ids`` holds."""
    if ids is None:
        return 0
    if len(gold_ids) == 1:
        return gold_ids[0] in ids
    return len(frozenset(gold_ids).intersection(ids))


def outcome(rec: Checked, require: str = "any") -> tuple[Outcome, tuple[str, ...]]:
    """The bucket and the flags of a checked trace: what counting needs of :func:`diagnose_record`."""
    found = flags_of(rec)
    return RULES[rule_of(rec, found, require == "any")].outcome, FLAG_COMBINATIONS[found]


def diagnose_record(rec: Checked, require: str = "any") -> Diagnosis:
    """Diagnose a checked trace: a :class:`~ragstage.trace.Trace` or a :class:`~ragstage.typed_record.Record`
    (see :func:`diagnose`), by the walk down :data:`~ragstage.rules.RULES`."""
    if require != "any" and require != "all":  # the check's call costs more than the comparisons
        check_require(require)
    gold = rec.gold
    n_gold = len(gold) if len(gold) < 2 else len(frozenset(gold))
    if n_gold:
        recall = _gold_in(gold, rec.retrieved) / n_gold
        retention = None if rec.prompt is None else _gold_in(gold, rec.prompt) / n_gold
    else:
        recall = retention = None
    claims = rec.claims
    support = sum(claims) / len(claims) if claims else None
    found = flags_of(rec)
    stage, code, _ = RULES[rule_of(rec, found, require == "any")]
    if code == "service_failure":
        err = rec.error
        reason = f"service failure at {err['stage']}: {err['message']}".rstrip(": ")
    else:
        reason = REASONS[code]
    return Diagnosis(stage, reason, recall, retention, support, FLAG_COMBINATIONS[found], code)


def diagnose(trace: Trace, require: str = "any") -> Diagnosis:
    """The first stage that lost the gold evidence for one trace.

    ``require="any"``: a stage loses the question when no gold id survives it (the SciFact
    convention: one relevant abstract is enough). ``require="all"``: when any gold id is
    missing (the audit convention, where an incomplete multi-document answer is a loss).
    """
    return diagnose_record(trace, require)


def generation_kind(trace: Trace, require: str = "any") -> str | None:
    """Which kind of generation failure a trace shows (the last branch of the failure tree of
    *Which RAG component broke?*), or None.

    * ``"refused"``: declined although the evidence was there;
    * ``"ignored_context"``: the answer is not supported by the prompt (an unsupported claim,
      or a citation outside the prompt): it answered from memory;
    * ``"wrong_passage"``: it named passages from the prompt, none of them gold (often an
      assembly ordering problem wearing a generation costume);
    * ``"partial"``: supported and incomplete, or it named the gold passage and was still
      judged wrong;
    * ``"unclassified"``: a generation failure the trace holds too little to split.

    It reads the reason code :func:`diagnose` gave, so the two cannot disagree on a trace.
    """
    d = diagnose(trace, require)
    if d.stage is not Outcome.GENERATION:
        return None
    return _KIND_OF_REASON.get(d.code, "unclassified")


def replay(traces: Iterable[Trace], require: str = "any") -> Counter[str]:
    """Count traces per bucket: the first thing to run on a batch of stored incidents."""
    return Counter(diagnose(t, require).stage.value for t in traces)
