"""Stage attribution: the first stage at which a question lost its gold evidence.

The walk follows the order the evidence travels (query understanding, retrieval,
reranking, prompt assembly, generation) and stops at the first stage that lost it. A
loss upstream is final: no prompt wording can use a passage the model never received,
so a later stage is never blamed for an earlier stage's loss. A stage whose output was
not logged cannot be blamed either: such a question is ``not_logged``, never a loss and
never right.

The rules live in one function, :func:`diagnose_record`, which reads a checked trace's
fields as attributes: a :class:`~ragstage.trace.Trace`, or the streaming path's
:class:`~ragstage.record.Record`. :func:`diagnose` (on a Trace), the streaming CLI, the
Parquet reader and Spark all call it, so a notebook and ``ragstage attribute`` can never
disagree.
"""

from __future__ import annotations

import re
from collections import Counter
from enum import Enum
from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence, Union

from .trace import Trace

if TYPE_CHECKING:
    from .record import Record

#: What the rules read: a checked trace with attribute access.
Checked = Union[Trace, "Record"]

__all__ = [
    "Stage",
    "BUCKETS",
    "RIGHT",
    "UNDECIDED",
    "REASONS",
    "FLAGS",
    "SEVERITY",
    "GENERATION_KINDS",
    "Diagnosis",
    "check_require",
    "survives",
    "diagnose",
    "diagnose_record",
    "generation_kind",
    "replay",
]


class Stage(str, Enum):
    """The outcome buckets, in the report's order: the outcomes decided before the evidence
    is followed (a service failure, no gold label, an unanswerable question), the stages in
    the order the evidence travels, then the outcomes at its end (right, unjudged, not logged)."""

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
    NOT_LOGGED = "not_logged"

    def __str__(self) -> str:  # print as the plain bucket name
        return self.value


BUCKETS: tuple[str, ...] = tuple(s.value for s in Stage)
#: The buckets that count as a right outcome in a paired comparison.
RIGHT: frozenset[str] = frozenset({Stage.NONE.value, Stage.CORRECT_REFUSAL.value})
#: The outcomes nobody can call right or wrong (prompt ids not logged, an answer nobody
#: judged): a paired comparison leaves a question in one of them undecided.
UNDECIDED: frozenset[str] = frozenset({Stage.UNJUDGED.value, Stage.NOT_LOGGED.value})

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

#: The flags recorded on every answer, right or wrong.
FLAGS: tuple[str, ...] = ("fabricated_citation", "numeric_unmarked")

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

_MARKER = re.compile(r"\[(\d+)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_DIGIT = re.compile(r"\d")


class Diagnosis(NamedTuple):
    """Where a question's evidence was lost, why, the numbers behind it, and its flags.

    ``recall`` is the share of gold ids retrieved, ``retention`` the share that reached the
    prompt, ``support`` the share of labelled claims supported. Each is ``None`` when it
    does not apply (no gold ids, no prompt ids logged, no claim labels): a missing number
    is never reported as a perfect 1.0. ``flags`` (names from :data:`FLAGS`) are recorded
    whatever the bucket: a right answer can still fabricate a citation. ``code`` names the
    reason (a key of :data:`REASONS`, or ``service_failure``); ``reason`` is its text.
    """

    stage: Stage
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


def check_require(require: str) -> None:
    """Reject a ``require`` other than ``"any"`` (some gold id must survive) or ``"all"`` (every one)."""
    if require not in ("any", "all"):
        raise ValueError(f"require must be 'any' or 'all', got {require!r}")


def survives(gold: Iterable[str], ids: Iterable[str], require: str = "any") -> bool:
    """Did the gold evidence survive a stage whose output is ``ids``?

    ``require="any"``: some gold id is there (one relevant abstract is enough);
    ``require="all"``: every gold id is. The survival test of the funnel and the oracle
    measures; :func:`diagnose_record` applies the same test inline (a million calls), and
    ``tests/test_attribution.py`` checks that the walk stops exactly where this says.
    """
    gold = gold if isinstance(gold, frozenset) else frozenset(gold)
    kept = gold.intersection(ids)
    return bool(kept) if require == "any" else len(kept) == len(gold)


def _numeric_unmarked(answer: str) -> bool:
    """A sentence states a number and carries no ``[n]`` marker (a citation check of
    *Diagnosing RAG Failure Modes*)."""
    if not _DIGIT.search(answer):
        return False
    for sentence in _SENTENCE_END.split(answer):
        if _DIGIT.search(_MARKER.sub("", sentence)) and not _MARKER.search(sentence):
            return True
    return False


_FABRICATED, _UNMARKED = ("fabricated_citation",), ("numeric_unmarked",)
_BOTH_FLAGS = _FABRICATED + _UNMARKED


def _flags(answer: str, answer_ids: Sequence[str] | None, prompt: Sequence[str] | None) -> tuple[str, ...]:
    """The answer's flags. Free text (no ``answer_ids``) is checked for unmarked numbers;
    ``ID: 12345`` answers carry parsed ids and are not free text."""
    fabricated = False
    if prompt is not None:
        if answer_ids is not None:
            for a in answer_ids:  # a plain loop: no generator to build for the usual one or two ids
                if a not in prompt:
                    fabricated = True
                    break
        if not fabricated and "[" in answer:
            fabricated = any(not 1 <= int(m) <= len(prompt) for m in _MARKER.findall(answer))
    unmarked = answer_ids is None and _numeric_unmarked(answer)
    if fabricated:
        return _BOTH_FLAGS if unmarked else _FABRICATED
    return _UNMARKED if unmarked else ()


def _gold_in(gold: frozenset[str], single: str | None, ids: Sequence[str]) -> int:
    """How many distinct gold ids ``ids`` holds. ``single``: the one gold id, when there is
    exactly one (the usual case), tested by membership instead of a set intersection."""
    if single is not None:
        return single in ids
    return len(gold.intersection(ids))


def _verdict(rec: Checked, gold: frozenset[str], single: str | None, flags: tuple[str, ...]) -> tuple[Stage, str]:
    """The bucket and reason code of an answer whose evidence reached its prompt.

    Judged by ``correct``, then ``answer_ids``, then claim support and ``complete``. Claim
    support is narrower than correctness (*Why Good Retrieval Still Produces Bad Answers*):
    all claims supported leaves the answer unjudged, while an unsupported claim or an
    incomplete answer makes it wrong. A wrong answer gets the most specific reason the trace
    holds; wrong with every claim supported, the source or the label is to blame.
    """
    claims, answer_ids = rec.claims, rec.answer_ids
    unsupported = bool(claims) and not all(claims)
    named_gold = _gold_in(gold, single, answer_ids) if answer_ids else 0
    if rec.correct is not None:
        if rec.correct:
            return Stage.NONE, "correct_by_label"
    elif answer_ids is not None:
        if named_gold:
            return Stage.NONE, "correct_by_ids"
    elif not unsupported and rec.complete is not False:
        return Stage.UNJUDGED, "claims_supported" if claims else "not_judged"
    if "fabricated_citation" in flags:
        return Stage.GENERATION, "cited_outside"
    if unsupported:
        return Stage.GENERATION, "unsupported"
    if rec.complete is False:
        return Stage.GENERATION, "partial"
    if answer_ids and not named_gold:
        return Stage.GENERATION, "non_gold"
    if claims:  # wrong, complete as far as anyone said, and reviewers found every claim supported
        return Stage.SOURCE_OR_LABEL, "supported_but_wrong"
    if "numeric_unmarked" in flags:  # no claim labels: an unmarked number is the best lead
        return Stage.GENERATION, "numeric_unmarked"
    if answer_ids:
        return Stage.GENERATION, "gold_named_wrong"
    return Stage.GENERATION, "wrong"


_NO_GOLD: frozenset[str] = frozenset()  # the set form of gold when its one id is tested by membership
_new = tuple.__new__  # builds a Diagnosis without NamedTuple's Python-level __new__ (a million calls)


def diagnose_record(rec: Checked, require: str = "any") -> Diagnosis:
    """Diagnose a checked trace: a :class:`~ragstage.trace.Trace` or a :class:`~ragstage.record.Record`
    (see :func:`diagnose`).

    Written for the streaming CLI's million calls: each gold count is computed once and
    serves both the share (recall, retention) and the survival test (the same test as
    :func:`survives`, which ``tests/test_attribution.py`` checks it against).
    """
    if require != "any" and require != "all":
        check_require(require)
    gold_ids = rec.gold
    if len(gold_ids) == 1:
        single, gold, n_gold = gold_ids[0], _NO_GOLD, 1
    else:
        single, gold = None, frozenset(gold_ids)
        n_gold = len(gold)
    need = 1 if require == "any" else n_gold  # gold ids a stage must keep for the question to survive it
    retrieved, prompt, claims, answer, answer_ids = rec.retrieved, rec.prompt, rec.claims, rec.answer, rec.answer_ids
    flags = _flags(answer, answer_ids, prompt) if answer or answer_ids else ()
    if n_gold:
        kept_retrieved = _gold_in(gold, single, retrieved)
        recall = kept_retrieved / n_gold
        if prompt is not None:
            kept_prompt = _gold_in(gold, single, prompt)
            retention = kept_prompt / n_gold
        else:
            kept_prompt, retention = 0, None
    else:
        kept_retrieved = kept_prompt = 0
        recall = retention = None
    support = sum(claims) / len(claims) if claims else None

    if rec.error is not None:
        err = rec.error
        stage, code = Stage.ENDPOINT_UNAVAILABLE, "service_failure"
    elif not rec.answerable:
        stage, code = (Stage.CORRECT_REFUSAL, "declined_unanswerable") if rec.refused else (
            Stage.MISSING_REFUSAL, "not_declined")
    elif not n_gold:
        stage, code = Stage.LABEL_MISSING, "no_gold"
    elif rec.query_ok is False:
        stage, code = Stage.QUERY_UNDERSTANDING, "query_judged_wrong"
    elif kept_retrieved < need:
        stage, code = Stage.RETRIEVAL, "not_retrieved"
    elif rec.reranked is not None and _gold_in(gold, single, rec.reranked) < need:
        stage, code = Stage.RERANKING, "reranker_cut"
    elif prompt is None:
        stage, code = Stage.NOT_LOGGED, "prompt_not_logged"
    elif kept_prompt < need:
        truncated = rec.truncated and _gold_in(gold, single, rec.truncated)
        stage, code = Stage.PROMPT_ASSEMBLY, "truncated" if truncated else "not_in_prompt"
    elif rec.refused:
        stage, code = Stage.GENERATION, "refused"
    else:
        stage, code = _verdict(rec, gold, single, flags)
    reason = (f"service failure at {err['stage']}: {err['message']}".rstrip(": ") if code == "service_failure"
              else REASONS[code])
    return _new(Diagnosis, (stage, reason, recall, retention, support, flags, code))


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
    if d.stage is not Stage.GENERATION:
        return None
    return _KIND_OF_REASON.get(d.code, "unclassified")


def replay(traces: Iterable[Trace], require: str = "any") -> Counter[str]:
    """Count traces per bucket: the first thing to run on a batch of stored incidents."""
    return Counter(diagnose(t, require).stage.value for t in traces)
