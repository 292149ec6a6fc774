"""What the attribution rules say: the outcomes, the kinds of test, and the rule tables.

A rule is a row of tests over a checked trace's fields; the first row of :data:`RULES` whose
tests all hold gives the trace its outcome and its reason code, and each row of
:data:`FLAG_RULES` whose tests hold sets a flag. Each kind of test has one meaning
(:data:`TESTS`), stated here once. Two interpreters run the tables: the Python one
(:mod:`ragstage.python_rules`, written out from these tables by :mod:`ragstage.python_rules_source`) over one trace
at a time, and the Arrow one (:mod:`ragstage.arrow_rules`) over a batch's columns; Spark runs
the Python one. ``tests/conformance/test_rule_conformance.py`` gives every interpreter the same traces and
checks that each gives every trace the outcome and the flags the meanings below say.

The two tests whose subject is free text are functions here (:data:`TEXT_TESTS`), and every
interpreter calls these same functions.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, Callable, Iterable, NamedTuple, Sequence

__all__ = [
    "Outcome",
    "BUCKETS",
    "RIGHT",
    "UNDECIDED",
    "FLAGS",
    "FLAG_BITS",
    "FLAG_COMBINATIONS",
    "Test",
    "TESTS",
    "TEXT_TESTS",
    "Rule",
    "RULES",
    "FLAG_RULES",
    "check_require",
    "survives",
    "leaves_out",
]


class Outcome(str, Enum):
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


BUCKETS: tuple[str, ...] = tuple(s.value for s in Outcome)
#: The buckets that count as a right outcome in a paired comparison.
RIGHT: frozenset[str] = frozenset({Outcome.NONE.value, Outcome.CORRECT_REFUSAL.value})
#: The outcomes nobody can call right or wrong (prompt ids not logged, an answer nobody
#: judged): a paired comparison leaves a question in one of them undecided.
UNDECIDED: frozenset[str] = frozenset({Outcome.UNJUDGED.value, Outcome.NOT_LOGGED.value})

#: The flags recorded on every answer, right or wrong.
FLAGS: tuple[str, ...] = ("fabricated_citation", "numeric_unmarked")
#: The flags an interpreter found, as a bit mask: each flag's bit, and each mask's tuple of flag names.
FLAG_BITS: dict[str, int] = {name: 1 << i for i, name in enumerate(FLAGS)}
FLAG_COMBINATIONS: tuple[tuple[str, ...], ...] = tuple(tuple(f for f in FLAGS if mask & FLAG_BITS[f])
                                                       for mask in range(1 << len(FLAGS)))


def check_require(require: str) -> None:
    """Reject a ``require`` other than ``"any"`` (some gold id must survive) or ``"all"`` (every one)."""
    if require not in ("any", "all"):
        raise ValueError(f"require must be 'any' or 'all', got {require!r}")


def survives(gold: Iterable[str], ids: Iterable[str], require: str = "any") -> bool:
    """Did the gold evidence survive a stage whose output is ``ids``?

    ``require="any"``: some gold id is there (one relevant abstract is enough);
    ``require="all"``: every gold id is. The meaning of the ``lost`` test, and the survival
    test of the funnel and the oracle measures.
    """
    gold = gold if isinstance(gold, frozenset) else frozenset(gold)
    kept = gold.intersection(ids)
    return bool(kept) if require == "any" else len(kept) == len(gold)


_MARKER = re.compile(r"\[(\d+)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_DIGIT = re.compile(r"\d")


def numeric_unmarked(text: str, _other: Any = None) -> bool:
    """A sentence states a number and carries no ``[n]`` marker (a citation check of
    *Diagnosing RAG Failure Modes*)."""
    if not _DIGIT.search(text):
        return False
    for sentence in _SENTENCE_END.split(text):
        if _DIGIT.search(_MARKER.sub("", sentence)) and not _MARKER.search(sentence):
            return True
    return False


def cites_outside(text: str, other: Sequence[str]) -> bool:
    """The text cites a ``[n]`` marker outside ``1..len(other)`` (the prompt's passages)."""
    return "[" in text and any(not 1 <= int(m) <= len(other) for m in _MARKER.findall(text))


def leaves_out(ids: Sequence[str], other: Sequence[str]) -> bool:
    """Some id of ``ids`` is not in ``other``."""
    for a in ids:  # a plain loop: no generator to build for the usual one or two ids
        if a not in other:
            return True
    return False


class Test(NamedTuple):
    """One condition of a rule, over a checked trace's fields: ``kind`` names what is tested
    (a key of :data:`TESTS`), ``field`` (and ``other``) the fields it reads; ``negate`` turns it around."""

    kind: str
    field: str
    other: str = ""
    negate: bool = False

    def __invert__(self) -> "Test":
        return self._replace(negate=not self.negate)


#: What each kind of test means. Every interpreter of the rules implements exactly these.
TESTS: dict[str, str] = {
    "given": "the field is not null",
    "true": "the field is true",
    "false": "the field is false (not merely null)",
    "empty": "the list is null or empty",
    "lost": "the list keeps fewer distinct gold ids than `require` needs (any: one; all: every one)",
    "holds": "the list holds at least one gold id",
    "some_false": "the list of claim labels is not empty and holds a false one",
    "flag": "the answer carries the flag named by `field`",
    "leaves_out": "some id of the list is not in the `other` list",
    "cites_outside": "the text cites a [n] marker outside 1..len(`other`)",
    "numeric_unmarked": "a sentence of the text states a number and carries no [n] marker",
}

#: The tests whose subject is free text, as functions of (the text, the ``other`` field's value):
#: every interpreter runs these same functions, trace by trace.
TEXT_TESTS: dict[str, Callable[[str, Any], bool]] = {
    "cites_outside": cites_outside,
    "numeric_unmarked": numeric_unmarked,
}


def given(field: str) -> Test:
    return Test("given", field)


def true(field: str) -> Test:
    return Test("true", field)


def false(field: str) -> Test:
    return Test("false", field)


def empty(field: str) -> Test:
    return Test("empty", field)


def lost(field: str) -> Test:
    return Test("lost", field)


def holds(field: str) -> Test:
    return Test("holds", field)


def some_false(field: str) -> Test:
    return Test("some_false", field)


def flag(name: str) -> Test:
    return Test("flag", name)


def leaves(field: str, other: str) -> Test:
    return Test("leaves_out", field, other)


def text_cites_outside(field: str, other: str) -> Test:
    return Test("cites_outside", field, other)


def text_numeric_unmarked(field: str) -> Test:
    return Test("numeric_unmarked", field)


class Rule(NamedTuple):
    """One row of a rule table: when every test holds, ``outcome`` (a bucket, or a flag's name) with reason ``code``."""

    outcome: Any
    code: str
    tests: tuple[Test, ...]


def _rule(outcome: Any, code: str, *tests: Test) -> Rule:
    return Rule(outcome, code, tests)


#: The attribution rules, in the order the walk checks them: the first rule whose tests all hold
#: gives the bucket and the reason code. First the outcomes decided before the evidence is
#: followed, then each stage the evidence travels through (a loss upstream is final), then the
#: verdict on an answer whose evidence reached its prompt: judged by ``correct``, then
#: ``answer_ids``, then claim support and ``complete``. Claim support is narrower than
#: correctness (*Why Good Retrieval Still Produces Bad Answers*): all claims supported leaves the
#: answer unjudged, while an unsupported claim or an incomplete answer makes it wrong; a wrong
#: answer gets the most specific reason the trace holds, and wrong with every claim supported,
#: the source or the label is to blame. The last rule has no test: every trace gets a bucket.
RULES: tuple[Rule, ...] = (
    _rule(Outcome.ENDPOINT_UNAVAILABLE, "service_failure", given("error")),
    _rule(Outcome.CORRECT_REFUSAL, "declined_unanswerable", false("answerable"), true("refused")),
    _rule(Outcome.MISSING_REFUSAL, "not_declined", false("answerable")),
    _rule(Outcome.LABEL_MISSING, "no_gold", empty("gold")),
    _rule(Outcome.QUERY_UNDERSTANDING, "query_judged_wrong", false("query_ok")),
    _rule(Outcome.RETRIEVAL, "not_retrieved", lost("retrieved")),
    _rule(Outcome.RERANKING, "reranker_cut", given("reranked"), lost("reranked")),
    _rule(Outcome.NOT_LOGGED, "prompt_not_logged", ~given("prompt")),
    _rule(Outcome.PROMPT_ASSEMBLY, "truncated", lost("prompt"), holds("truncated")),
    _rule(Outcome.PROMPT_ASSEMBLY, "not_in_prompt", lost("prompt")),
    _rule(Outcome.GENERATION, "refused", true("refused")),
    _rule(Outcome.NONE, "correct_by_label", true("correct")),
    _rule(Outcome.NONE, "correct_by_ids", ~given("correct"), given("answer_ids"), holds("answer_ids")),
    _rule(Outcome.UNJUDGED, "claims_supported", ~given("correct"), ~given("answer_ids"), ~some_false("claims"),
          ~false("complete"), ~empty("claims")),
    _rule(Outcome.UNJUDGED, "not_judged", ~given("correct"), ~given("answer_ids"), ~some_false("claims"),
          ~false("complete")),
    _rule(Outcome.GENERATION, "cited_outside", flag("fabricated_citation")),
    _rule(Outcome.GENERATION, "unsupported", some_false("claims")),
    _rule(Outcome.GENERATION, "partial", false("complete")),
    _rule(Outcome.GENERATION, "non_gold", ~empty("answer_ids"), ~holds("answer_ids")),
    _rule(Outcome.SOURCE_OR_LABEL, "supported_but_wrong", ~empty("claims")),
    _rule(Outcome.GENERATION, "numeric_unmarked", flag("numeric_unmarked")),
    _rule(Outcome.GENERATION, "gold_named_wrong", ~empty("answer_ids")),
    _rule(Outcome.GENERATION, "wrong"),
)

#: The flags' rules: a flag is set when the tests of any of its rows all hold. A citation is
#: fabricated when the answer names an id, or cites a ``[n]`` marker, that is not in the prompt;
#: free text (no ``answer_ids``: ``ID: 12345`` answers carry parsed ids and are not free text) is
#: checked for unmarked numbers (citation checks of *Diagnosing RAG Failure Modes*).
FLAG_RULES: tuple[Rule, ...] = (
    _rule("fabricated_citation", "", given("prompt"), given("answer_ids"), leaves("answer_ids", "prompt")),
    _rule("fabricated_citation", "", given("prompt"), text_cites_outside("answer", "prompt")),
    _rule("numeric_unmarked", "", ~given("answer_ids"), text_numeric_unmarked("answer")),
)
