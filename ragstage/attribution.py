"""Stage attribution: the first stage at which a question lost its gold evidence.

The walk follows the order the evidence travels (query understanding, retrieval,
reranking, prompt assembly, generation) and stops at the first stage that lost it. A
loss upstream is final: no prompt wording can use a passage the model never received,
so a later stage is never blamed for an earlier stage's loss. A stage whose output was
not logged cannot be blamed either: such a question is ``not_logged``, never a loss and
never right.

The rules are one table, :data:`RULES` (and :data:`FLAG_RULES` for the flags): rows of
tests over a checked trace's fields, each kind of test (:data:`TESTS`) with one meaning. Two
interpreters run that table. The walk, :func:`diagnose_record`, reads one trace's fields as
attributes (a :class:`~ragstage.trace.Trace`, or the streaming path's
:class:`~ragstage.record.Record`); it is written out from the table as plain Python when this
module loads (:data:`WALK_SOURCE`), so it runs as fast as a hand-written chain of ``if``.
:mod:`ragstage.arrow_rules` runs the same rows over the Arrow columns of a batch. :func:`diagnose`,
the streaming CLI, the Parquet reader and Spark all use one of the two, and property tests check
that they agree, so a notebook and ``ragstage attribute`` can never disagree.
"""

from __future__ import annotations

import re
from collections import Counter
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Sequence, Union

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
    "Test",
    "TESTS",
    "TEXT_TESTS",
    "Rule",
    "RULES",
    "FLAG_RULES",
    "FLAG_BITS",
    "FLAG_COMBINATIONS",
    "WALK_SOURCE",
    "FLAGS_SOURCE",
    "PYTHON_TESTS",
    "walk_lines",
    "WALK_NAMES",
    "outcome",
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


class Test(NamedTuple):
    """One condition of a rule, over a checked trace's fields: ``kind`` names what is tested
    (a key of :data:`TESTS`), ``field`` (and ``other``) the fields it reads; ``negate`` turns it around."""

    kind: str
    field: str
    other: str = ""
    negate: bool = False

    def __invert__(self) -> "Test":
        return self._replace(negate=not self.negate)


#: What each kind of test means. Both interpreters of the rules implement exactly these: the
#: walk over one trace (:func:`diagnose_record`) and the one over Arrow columns
#: (:mod:`ragstage.arrow_rules`); ``tests/test_arrow_rules.py`` checks they agree.
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


def _test(kind: str) -> Callable[..., Test]:
    return lambda field, other="": Test(kind, field, other)


given, true, false, empty, lost, holds, some_false, flag, leaves_out, cites_outside, numeric_unmarked = map(
    _test, TESTS)


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
    _rule(Stage.ENDPOINT_UNAVAILABLE, "service_failure", given("error")),
    _rule(Stage.CORRECT_REFUSAL, "declined_unanswerable", false("answerable"), true("refused")),
    _rule(Stage.MISSING_REFUSAL, "not_declined", false("answerable")),
    _rule(Stage.LABEL_MISSING, "no_gold", empty("gold")),
    _rule(Stage.QUERY_UNDERSTANDING, "query_judged_wrong", false("query_ok")),
    _rule(Stage.RETRIEVAL, "not_retrieved", lost("retrieved")),
    _rule(Stage.RERANKING, "reranker_cut", given("reranked"), lost("reranked")),
    _rule(Stage.NOT_LOGGED, "prompt_not_logged", ~given("prompt")),
    _rule(Stage.PROMPT_ASSEMBLY, "truncated", lost("prompt"), holds("truncated")),
    _rule(Stage.PROMPT_ASSEMBLY, "not_in_prompt", lost("prompt")),
    _rule(Stage.GENERATION, "refused", true("refused")),
    _rule(Stage.NONE, "correct_by_label", true("correct")),
    _rule(Stage.NONE, "correct_by_ids", ~given("correct"), given("answer_ids"), holds("answer_ids")),
    _rule(Stage.UNJUDGED, "claims_supported", ~given("correct"), ~given("answer_ids"), ~some_false("claims"),
          ~false("complete"), ~empty("claims")),
    _rule(Stage.UNJUDGED, "not_judged", ~given("correct"), ~given("answer_ids"), ~some_false("claims"),
          ~false("complete")),
    _rule(Stage.GENERATION, "cited_outside", flag("fabricated_citation")),
    _rule(Stage.GENERATION, "unsupported", some_false("claims")),
    _rule(Stage.GENERATION, "partial", false("complete")),
    _rule(Stage.GENERATION, "non_gold", ~empty("answer_ids"), ~holds("answer_ids")),
    _rule(Stage.SOURCE_OR_LABEL, "supported_but_wrong", ~empty("claims")),
    _rule(Stage.GENERATION, "numeric_unmarked", flag("numeric_unmarked")),
    _rule(Stage.GENERATION, "gold_named_wrong", ~empty("answer_ids")),
    _rule(Stage.GENERATION, "wrong"),
)

#: The flags' rules: a flag is set when the tests of any of its rows all hold. A citation is
#: fabricated when the answer names an id, or cites a ``[n]`` marker, that is not in the prompt;
#: free text (no ``answer_ids``: ``ID: 12345`` answers carry parsed ids and are not free text) is
#: checked for unmarked numbers (citation checks of *Diagnosing RAG Failure Modes*).
FLAG_RULES: tuple[Rule, ...] = (
    _rule("fabricated_citation", "", given("prompt"), given("answer_ids"), leaves_out("answer_ids", "prompt")),
    _rule("fabricated_citation", "", given("prompt"), cites_outside("answer", "prompt")),
    _rule("numeric_unmarked", "", ~given("answer_ids"), numeric_unmarked("answer")),
)


def _gold_in(gold: frozenset[str], single: str | None, ids: Sequence[str]) -> int:
    """How many distinct gold ids ``ids`` holds. ``single``: the one gold id, when there is
    exactly one (the usual case), tested by membership instead of a set intersection."""
    if single is not None:
        return single in ids
    return len(gold.intersection(ids))


_NO_GOLD: frozenset[str] = frozenset()  # the set form of gold when its one id is tested by membership
_new = tuple.__new__  # builds a Diagnosis without NamedTuple's Python-level __new__ (a million calls)


def _leaves_out(ids: Sequence[str], other: Sequence[str]) -> bool:
    for a in ids:  # a plain loop: no generator to build for the usual one or two ids
        if a not in other:
            return True
    return False


def _cites_outside(text: str, other: Sequence[str]) -> bool:
    return "[" in text and any(not 1 <= int(m) <= len(other) for m in _MARKER.findall(text))


#: The tests whose subject is free text, as functions of (the text, the ``other`` field's value):
#: every interpreter runs these same functions, trace by trace.
TEXT_TESTS: dict[str, Callable[[str, Any], bool]] = {
    "cites_outside": _cites_outside,
    "numeric_unmarked": lambda text, _other: _numeric_unmarked(text),
}


#: How the walk writes each kind of test, as a Python expression over ``rec`` (the checked trace),
#: ``gold``, ``single`` and ``need`` (:func:`_gold_in`, written out: one call less per stage)
#: and ``flags``. With a single gold id, ``need`` is 1 whatever ``require`` says.
PYTHON_TESTS: dict[str, str] = {
    "given": "rec.{f} is not None",
    "true": "rec.{f} is True",
    "false": "rec.{f} is False",
    "empty": "not rec.{f}",
    "lost": "(single not in rec.{f} if single is not None else len(gold.intersection(rec.{f})) < need)",
    "holds": "bool(rec.{f}) and (single in rec.{f} if single is not None else not gold.isdisjoint(rec.{f}))",
    "some_false": "bool(rec.{f}) and not all(rec.{f})",
    "flag": "{f!r} in flags",
    "leaves_out": "(rec.{f}[0] not in rec.{o} if len(rec.{f}) == 1 else _leaves_out(rec.{f}, rec.{o}))",
    "cites_outside": "'[' in rec.{f} and _cites_outside(rec.{f}, rec.{o})",  # no "[", no marker: no call
    "numeric_unmarked": "_numeric_unmarked(rec.{f})",
}


def _python(test: Test, flags: str = "") -> str:
    """``test`` as a Python expression; with ``flags`` (the name of a bit mask of :data:`FLAG_BITS`),
    a ``flag`` test reads that mask instead of the tuple of flag names."""
    if flags and test.kind == "flag":
        expr = f"{flags} & {FLAG_BITS[test.field]}"
    else:
        expr = PYTHON_TESTS[test.kind].format(f=test.field, o=test.other)
    return f"not ({expr})" if test.negate else f"({expr})"


def _walk_source() -> str:
    """The Python source of the first-match walk down :data:`RULES`: the index of the rule that decides."""
    lines = ["def _rule_of(rec, gold, single, need, flags):"]
    for i, rule in enumerate(RULES):
        lines += [f"    if {' and '.join(map(_python, rule.tests)) or 'True'}:", f"        return {i}"]
    return "\n".join([*lines, "    raise AssertionError('the last rule has no test')"])


def _compile(source: str, name: str) -> Callable[..., Any]:
    namespace = {"_leaves_out": _leaves_out, "_cites_outside": _cites_outside,
                 "_numeric_unmarked": _numeric_unmarked, "FLAG_COMBINATIONS": FLAG_COMBINATIONS}
    exec(compile(source, f"<ragstage.attribution {name}>", "exec"), namespace)  # noqa: S102 - source built above
    return namespace[name]


#: The flags an interpreter found, as a bit mask: each flag's bit, and each mask's tuple of flag names.
FLAG_BITS: dict[str, int] = {name: 1 << i for i, name in enumerate(FLAGS)}
FLAG_COMBINATIONS: tuple[tuple[str, ...], ...] = tuple(tuple(f for f in FLAGS if mask & FLAG_BITS[f])
                                                       for mask in range(1 << len(FLAGS)))

#: The walk, written out from :data:`RULES` (and :data:`FLAG_RULES`) once, when the module is
#: loaded, as plain Python: as fast as a hand-written chain of ``if``, and the same rules as the
#: Arrow interpreter's by construction. ``WALK_SOURCE`` shows what runs.
WALK_SOURCE = _walk_source()
_rule_of = _compile(WALK_SOURCE, "_rule_of")
_STAGES = tuple(rule.outcome for rule in RULES)


def _flags_source() -> str:
    # Every flag rule is tried (a trace may carry several flags); one flag found makes its later rows moot.
    lines = ["def _flags_of(rec):", "    found = 0"]
    for rule in FLAG_RULES:
        bit = FLAG_BITS[rule.outcome]
        lines += [f"    if not found & {bit} and {' and '.join(map(_python, rule.tests))}:", f"        found |= {bit}"]
    return "\n".join([*lines, "    return FLAG_COMBINATIONS[found]"])


FLAGS_SOURCE = _flags_source()
_flags_of = _compile(FLAGS_SOURCE, "_flags_of")


def walk_lines(require: str, value: Callable[[int, Rule], str], found: str = "found",
               decided: str = "decided") -> list[str]:
    """The walk down :data:`FLAG_RULES` and :data:`RULES` as lines of Python, to be written into a loop.

    The lines read ``rec`` (a checked trace) and set ``found`` (its flags, as a mask of
    :data:`FLAG_BITS`) and ``decided`` (``value(i, rule)``, an expression, for the first rule ``i``
    whose tests hold): the same tests as :data:`WALK_SOURCE` and :data:`FLAGS_SOURCE` with no call
    per trace, for a counter that runs them a million times. ``require`` is fixed in the lines.
    ``tests/test_tally.py`` checks that a loop built of them counts as :func:`outcome` does.
    """
    check_require(require)
    lines = ["gold_ids = rec.gold",  # _gold, written out; with one gold id, the tests read single alone
             "if len(gold_ids) == 1:",
             "    single = gold_ids[0]",
             "else:",
             "    gold, single = frozenset(gold_ids), None",
             f"    need = {'1' if require == 'any' else 'len(gold)'}",
             f"{found} = 0",
             "if rec.answer or rec.answer_ids:"]
    set_before = 0  # the bits an earlier row can have set: only those are worth testing
    for rule in FLAG_RULES:
        bit = FLAG_BITS[rule.outcome]
        unset = [f"not {found} & {bit}"] if set_before & bit else []
        lines += [f"    if {' and '.join(unset + [_python(t, found) for t in rule.tests])}:",
                  f"        {found} |= {bit}"]
        set_before |= bit
    for i, rule in enumerate(RULES):
        test = " and ".join(_python(t, found) for t in rule.tests)
        if not test and i != len(RULES) - 1:
            raise AssertionError("only the last rule may have no test")
        head = "else:" if not test else f"{'if' if i == 0 else 'elif'} {test}:"
        lines += [head, f"    {decided} = {value(i, rule)}"]
    if RULES[-1].tests:
        lines += ["else:", "    raise AssertionError('the last rule has no test')"]
    return lines


#: The names the lines of :func:`walk_lines` read, besides ``rec``.
WALK_NAMES: dict[str, Any] = {"_NO_GOLD": _NO_GOLD, "_leaves_out": _leaves_out, "_cites_outside": _cites_outside,
                              "_numeric_unmarked": _numeric_unmarked}


def _gold(rec: Checked) -> tuple[frozenset[str], str | None, int]:
    """``(gold, single, n_gold)``: the distinct gold ids, as a set or, when there is one, as ``single``."""
    gold_ids = rec.gold
    if len(gold_ids) == 1:
        return _NO_GOLD, gold_ids[0], 1
    gold = frozenset(gold_ids)
    return gold, None, len(gold)


def outcome(rec: Checked, require: str = "any") -> tuple[Stage, tuple[str, ...]]:
    """The bucket and the flags of a checked trace: what counting needs of :func:`diagnose_record`."""
    gold_ids = rec.gold
    if len(gold_ids) == 1:  # _gold, inline: a million calls
        gold, single, n_gold = _NO_GOLD, gold_ids[0], 1
    else:
        gold, single, n_gold = _gold(rec)
    flags = _flags_of(rec) if rec.answer or rec.answer_ids else ()
    return _STAGES[_rule_of(rec, gold, single, 1 if require == "any" else n_gold, flags)], flags


def diagnose_record(rec: Checked, require: str = "any") -> Diagnosis:
    """Diagnose a checked trace: a :class:`~ragstage.trace.Trace` or a :class:`~ragstage.record.Record`
    (see :func:`diagnose`), by the walk down :data:`RULES`.

    Each gold count is computed once for the shares (recall, retention); ``tests/test_attribution.py``
    checks that the walk stops where :func:`survives` says.
    """
    if require != "any" and require != "all":
        check_require(require)
    gold, single, n_gold = _gold(rec)
    prompt, claims = rec.prompt, rec.claims
    flags = _flags_of(rec) if rec.answer or rec.answer_ids else ()
    if n_gold:
        recall = _gold_in(gold, single, rec.retrieved) / n_gold
        retention = None if prompt is None else _gold_in(gold, single, prompt) / n_gold
    else:
        recall = retention = None
    support = sum(claims) / len(claims) if claims else None
    stage, code, _ = RULES[_rule_of(rec, gold, single, 1 if require == "any" else n_gold, flags)]
    if code == "service_failure":
        err = rec.error
        reason = f"service failure at {err['stage']}: {err['message']}".rstrip(": ")
    else:
        reason = REASONS[code]
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
