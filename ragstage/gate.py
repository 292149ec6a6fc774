"""A regression gate: is the new run worse than the old one on the same questions, and by which rule?

``ragstage compare BEFORE AFTER --gate`` and :func:`ragstage.testing.assert_no_regression`
both call :func:`gate`. A change fails when any of three rules fires, checked in this order
(the first that fires decides the verdict line):

1. **paired exact McNemar**: more questions broke than were fixed, and the exact McNemar
   p-value of that split is at most ``alpha``. Only the discordant questions carry
   information in a paired design; a difference of two on 300 questions is noise.
2. **max broken**: more than ``max_broken`` questions broke, whatever was fixed (off unless
   given): a team may refuse any change that breaks more than a handful.
3. **critical**: some question newly lands in a critical bucket or carries a critical flag
   it did not carry before (a missing refusal, a source or label problem, a fabricated
   citation). A change that improves the frequent questions can break a rare and
   important one, and the test of rule 1 would never see it.

The pairing and the counts are :func:`ragstage.report.compare`'s, so the gate, the
comparison page and ``compare --format json`` cannot disagree.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .attribution import RIGHT, SEVERITY, UNDECIDED, Diagnosis, diagnose
from .report import Comparison, compare
from .rows import printable
from .run_labels import require_gold, run_labels
from .trace import Trace

__all__ = ["CRITICAL", "RULES", "Pair", "Paired", "Verdict", "GateResult", "pair_runs", "gate", "format_p",
           "critical_rule", "decide", "outcome", "md_text", "md_code"]

#: The bucket and flag names whose severity is critical (from :data:`ragstage.attribution.SEVERITY`).
CRITICAL: frozenset[str] = frozenset(name for name, level in SEVERITY.items() if level == "critical")
#: The rules in the order they are checked.
RULES: tuple[str, ...] = ("paired exact McNemar", "max broken", "critical")
STATUSES: tuple[str, ...] = ("fixed", "broken", "both_right", "both_wrong", "undecided")
_LISTED = 50  # questions named in a message or a Markdown list before "and N more"


def outcome(before_bucket: str, after_bucket: str) -> str:
    """What happened to a question whose buckets were these: ``fixed``, ``broken``, ``both_right``,
    ``both_wrong``, or ``undecided`` when its outcome is unknown in either run (as :func:`compare` counts)."""
    if before_bucket in UNDECIDED or after_bucket in UNDECIDED:
        return "undecided"
    was, now = before_bucket in RIGHT, after_bucket in RIGHT
    if was and now:
        return "both_right"
    if was:
        return "broken"
    return "fixed" if now else "both_wrong"


@dataclass(frozen=True)
class Pair:
    """One question in both runs: both traces, both diagnoses, and what happened to it."""

    query_id: str
    before: Trace
    after: Trace
    before_diagnosis: Diagnosis
    after_diagnosis: Diagnosis

    @property
    def before_bucket(self) -> str:
        return self.before_diagnosis.stage.value

    @property
    def after_bucket(self) -> str:
        return self.after_diagnosis.stage.value

    @property
    def before_reason(self) -> str:
        return self.before_diagnosis.reason

    @property
    def after_reason(self) -> str:
        return self.after_diagnosis.reason

    @property
    def before_flags(self) -> tuple[str, ...]:
        return self.before_diagnosis.flags

    @property
    def after_flags(self) -> tuple[str, ...]:
        return self.after_diagnosis.flags

    @property
    def status(self) -> str:
        """``fixed``, ``broken``, ``both_right``, ``both_wrong`` or ``undecided`` (as :func:`compare` counts)."""
        return outcome(self.before_bucket, self.after_bucket)

    @property
    def newly_critical(self) -> tuple[str, ...]:
        """Critical buckets or flags the question has after and did not have before."""
        had = {self.before_bucket, *self.before_flags}
        return tuple(sorted(n for n in {self.after_bucket, *self.after_flags} if n in CRITICAL and n not in had))


@dataclass(frozen=True)
class Paired:
    """Two runs paired by ``query_id``: the comparison's counts and every question's pair."""

    comparison: Comparison
    pairs: tuple[Pair, ...]

    def having(self, status: str) -> list[Pair]:
        return [p for p in self.pairs if p.status == status]

    @property
    def broken(self) -> list[Pair]:
        return self.having("broken")

    @property
    def fixed(self) -> list[Pair]:
        return self.having("fixed")

    @property
    def newly_critical(self) -> list[Pair]:
        return [p for p in self.pairs if p.newly_critical]


def pair_runs(before: Iterable[Trace], after: Iterable[Trace], *, require: str = "any",
              intersect: bool = False) -> Paired:
    """Pair two runs: :func:`ragstage.report.compare` for the counts, one :class:`Pair` per shared question.

    Bad input (a question twice in a run, runs over different questions without
    ``intersect``) raises :func:`compare`'s errors, word for word.
    """
    a, b = list(before), list(after)
    result = compare(a, b, intersect=intersect, require=require)
    after_by_id = {t.query_id: t for t in b}
    pairs = []
    for old in a:
        new = after_by_id.get(old.query_id)
        if new is None:
            continue
        pairs.append(Pair(old.query_id, old, new, diagnose(old, require), diagnose(new, require)))
    return Paired(result, tuple(pairs))


def format_p(p: float) -> str:
    """A p-value as a verdict prints it: ``1.0``, ``0.0215``, ``3.1e-07``."""
    return f"{p:.2g}" if 0 < p < 1e-4 else str(round(p, 4))


@dataclass(frozen=True)
class Verdict:
    """The gate's decision: passed or not, the rule that decided, every rule that fired, one line."""

    passed: bool
    rule: str | None
    failed: tuple[str, ...]
    line: str


@dataclass(frozen=True)
class GateResult:
    """A gated comparison: the pairs, the thresholds and the verdict, with its Markdown and JUnit forms.

    ``rules``: the rules checked, in order. ``estimate``: on judge-labelled runs, the estimate the
    verdict was made on (:class:`ragstage.gate_ppi.JudgeEstimate`): it supplies its own Markdown
    lines (already escaped), JUnit properties and rule thresholds, and the pairs' counts are then
    the judge's.
    """

    paired: Paired
    verdict: Verdict
    alpha: float
    max_broken: int | None
    critical: bool
    before_name: str = "before"
    after_name: str = "after"
    observed: dict[str, str] = field(default_factory=dict)
    rules: tuple[str, ...] = RULES
    estimate: Any = None

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def failure_message(self) -> str:
        """The verdict, then the broken (and newly critical) questions, for an assertion error."""
        lines = [self.verdict.line]
        broken = self.paired.broken
        if broken:
            lines.append(f"broken questions ({len(broken)}):")
            lines += [f"  - {printable(p.query_id)}: {p.before_bucket} -> {p.after_bucket} "
                      f"({printable(p.after_reason)})" for p in broken[:_LISTED]]
            if len(broken) > _LISTED:
                lines.append(f"  ... and {len(broken) - _LISTED} more")
        critical = self.paired.newly_critical if self.critical else []
        if critical:
            lines.append(f"newly critical ({len(critical)}):")
            lines += [f"  - {printable(p.query_id)}: {', '.join(p.newly_critical)}" for p in critical[:_LISTED]]
            if len(critical) > _LISTED:
                lines.append(f"  ... and {len(critical) - _LISTED} more")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The verdict and the comparison as Markdown: a CI job summary or a pull-request comment."""
        c = self.paired.comparison
        status = "PASS" if self.passed else "FAIL"
        out = [f"## ragstage gate: {status}", "", f"**{md_text(self.verdict.line)}**", "",
               f"{md_code(self.before_name)} → {md_code(self.after_name)}", ""]
        if self.estimate is not None:
            out += [*self.estimate.markdown(), ""]
        out += ["| questions paired | right before | right after | fixed | broken | undecided | exact McNemar p |",
               "|---:|---:|---:|---:|---:|---:|---:|",
               f"| {c.n} | {c.both_right + c.broken} | {c.both_right + c.fixed} | {c.fixed} | {c.broken} "
               f"| {c.undecided} | {format_p(c.p_value)} |", "",
               "| rule | fails when | observed | result |", "|---|---|---|---|"]
        for rule in self.rules:
            result = "FAIL" if rule in self.verdict.failed else ("off" if self._off(rule) else "pass")
            out.append(f"| {rule} | {self._threshold(rule)} | {self.observed[rule]} | {result} |")
        by = "" if self.estimate is None else " by the judge's labels"
        out += self._md_list(f"Broken{by}", self.paired.broken,
                             lambda p: f"{p.before_bucket} → {p.after_bucket}: {p.after_reason}")
        if self.critical:
            out += self._md_list(f"Newly critical{by}", self.paired.newly_critical,
                                 lambda p: ", ".join(p.newly_critical))
        out += self._md_list(f"Fixed{by}", self.paired.fixed, lambda p: f"{p.before_bucket} → {p.after_bucket}")
        m = c.migration
        if len(m):
            out += ["", "### Bucket migration (rows: before, columns: after)", "",
                    "| before \\ after | " + " | ".join(map(str, m.columns)) + " |",
                    "|---|" + "---:|" * len(m.columns)]
            out += [f"| {src} | " + " | ".join(str(int(v)) if v else "·" for v in row) + " |"
                    for src, row in m.iterrows()]
        return "\n".join(out) + "\n"

    def _off(self, rule: str) -> bool:
        return (rule == "max broken" and self.max_broken is None) or (rule == "critical" and not self.critical)

    def _threshold(self, rule: str) -> str:
        own = None if self.estimate is None else self.estimate.threshold(rule, self.max_broken)
        if own is not None:
            return own
        if rule == "paired exact McNemar":
            return f"broken > fixed and p ≤ {self.alpha:g}"
        if rule == "max broken":
            return "off (--max-broken)" if self.max_broken is None else f"broken > {self.max_broken}"
        return "off" if not self.critical else "a question newly critical (" + ", ".join(sorted(CRITICAL)) + ")"

    @staticmethod
    def _md_list(title: str, pairs: Sequence[Pair], describe) -> list[str]:
        if not pairs:
            return []
        out = ["", f"### {title} ({len(pairs)})", "", "| question | what happened |", "|---|---|"]
        out += [f"| {md_code(p.query_id, cell=True)} | {md_text(describe(p))} |" for p in pairs[:_LISTED]]
        if len(pairs) > _LISTED:
            out += ["", f"... and {len(pairs) - _LISTED} more (the JUnit file lists them all)"]
        return out

    def to_junit(self) -> str:
        """JUnit XML: a ``verdict`` test case, each broken (and newly critical) question a failing
        test case, each fixed one a passing test case, so a CI system lists them by name."""
        cases: list[ET.Element] = []
        verdict = _case("ragstage.gate", "verdict")
        if not self.passed:
            _fail(verdict, self.verdict.rule or "gate", self.verdict.line, self.failure_message())
        cases.append(verdict)
        by = "" if self.estimate is None else " by the judge's labels"
        for p in self.paired.broken:
            _fail(case := _case("ragstage.gate.broken", p.query_id), "broken",
                  f"broken{by}: {p.before_bucket} -> {p.after_bucket}",
                  f"before: {p.before_bucket} ({printable(p.before_reason)})\n"
                  f"after: {p.after_bucket} ({printable(p.after_reason)})")
            cases.append(case)
        if self.critical:
            for p in self.paired.newly_critical:
                _fail(case := _case("ragstage.gate.critical", p.query_id), "critical",
                      f"newly critical{by}: {', '.join(p.newly_critical)}",
                      f"before: {p.before_bucket} {list(p.before_flags)}\nafter: {p.after_bucket} "
                      f"{list(p.after_flags)} ({printable(p.after_reason)})")
                cases.append(case)
        cases += [_case("ragstage.gate.fixed", p.query_id) for p in self.paired.fixed]
        failures = sum(1 for case in cases if case.find("failure") is not None)
        counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0"}
        root = ET.Element("testsuites", {"name": "ragstage gate", **counts, "time": "0"})
        names = f"{printable(self.before_name)} -> {printable(self.after_name)}"
        suite = ET.SubElement(root, "testsuite", {"name": f"ragstage gate: {names}",
                                                  **counts, "skipped": "0", "time": "0"})
        props = ET.SubElement(suite, "properties")
        c = self.paired.comparison
        limit = "off" if self.max_broken is None else str(self.max_broken)
        for name, value in (("alpha", f"{self.alpha:g}"), ("max_broken", limit),
                            ("critical", str(self.critical).lower()), ("n", str(c.n)), ("fixed", str(c.fixed)),
                            ("broken", str(c.broken)), ("undecided", str(c.undecided)),
                            ("p_value", repr(c.p_value)),
                            *(() if self.estimate is None else self.estimate.properties())):
            ET.SubElement(props, "property", {"name": name, "value": printable(value)})
        suite.extend(cases)
        ET.SubElement(suite, "system-out").text = self.verdict.line
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case(classname: str, name: str) -> ET.Element:
    """A test case named by a question id, written with :func:`printable` (XML 1.0 cannot hold every character)."""
    return ET.Element("testcase", {"classname": classname, "name": printable(name), "time": "0"})


def _fail(case: ET.Element, kind: str, message: str, text: str) -> None:
    ET.SubElement(case, "failure", {"message": message, "type": kind}).text = text


# The punctuation GitHub's Markdown acts on inside a line (emphasis, code, links and images,
# tables, strikethrough, math, issue references and mentions) is backslash-escaped; the HTML
# specials become entities. Data never starts a line, so block markup (``#``, ``-``) cannot start.
_MD_PUNCTUATION = frozenset("\\`*_[]!|~$#@")
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(text: str) -> str:
    """Data as inert Markdown text on one line: no markup, no HTML (a table cell or a line of prose).

    Every punctuation mark Markdown acts on is backslash-escaped and every HTML special is an
    entity, so an id or an error message can neither start a heading, an image, a link or a
    tag, nor end a table cell.
    """
    return "".join(_HTML_ENTITIES.get(c) or (f"\\{c}" if c in _MD_PUNCTUATION else c) for c in printable(text))


def md_code(text: str, cell: bool = False) -> str:
    """Data as a Markdown code span, shown literally: backslashes single, markup and tags inert.

    The fence is one backtick longer than any run inside; inside a table cell a ``|`` is
    escaped, the one escape a GitHub table reads inside a code span.
    """
    text = printable(text)
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def gate(before: Iterable[Trace], after: Iterable[Trace], *, alpha: float = 0.05, max_broken: int | None = None,
         critical: bool = True, require: str = "any", intersect: bool = False,
         names: tuple[str, str] = ("before", "after")) -> GateResult:
    """Pair two runs and decide whether ``after`` is worse (see the module's rules).

    Runs labelled by a judge are refused (:func:`ragstage.run_labels.require_gold`): their counts
    are the judge's; :func:`ragstage.gate_ppi.gate_on_judge` gates them with a gold sample.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if max_broken is not None and max_broken < 0:
        raise ValueError(f"max_broken must not be negative, got {max_broken}")
    before, after = list(before), list(after)
    for run, name, side in ((before, names[0], "before"), (after, names[1], "after")):
        require_gold(run_labels(run, name), None, None, side)
    paired = pair_runs(before, after, require=require, intersect=intersect)
    c = paired.comparison
    counts = f"{c.fixed} fixed, {c.broken} broken, p = {format_p(c.p_value)}"
    if c.undecided:
        counts += f", {c.undecided} undecided"
    critical_pairs = paired.newly_critical if critical else []
    fired = {
        "paired exact McNemar": (c.broken > c.fixed and c.p_value <= alpha,
                                 f"significantly worse (p ≤ alpha {alpha:g})"),
        "max broken": (max_broken is not None and c.broken > max_broken,
                       f"{c.broken} questions broke, more than --max-broken {max_broken}"),
        "critical": critical_rule(critical_pairs),
    }
    observed = {"paired exact McNemar": counts, "max broken": f"{c.broken} broken",
                "critical": f"{len(critical_pairs)} question(s)" if critical else "-"}
    return GateResult(paired, decide(RULES, fired, counts), alpha, max_broken, critical, *names, observed)


def critical_rule(critical_pairs: Sequence[Pair]) -> tuple[bool, str]:
    """Whether the critical rule fires on these newly critical questions, and its reason (the first three named)."""
    shown = ", ".join(f"{printable(p.query_id)} {'+'.join(p.newly_critical)}" for p in critical_pairs[:3])
    more = f" and {len(critical_pairs) - 3} more" if len(critical_pairs) > 3 else ""
    return bool(critical_pairs), f"{len(critical_pairs)} question(s) newly critical ({shown}{more})"


def decide(rules: Sequence[str], fired: dict[str, tuple[bool, str]], counts: str) -> Verdict:
    """The verdict of rules checked in order: ``fired[rule]`` is (whether it fired, why); the first
    that fired names the line, the others follow "also failed"; ``counts`` ends the line."""
    failed = tuple(rule for rule in rules if fired[rule][0])
    if not failed:
        return Verdict(True, None, (), f"PASS: not significantly worse: {counts}")
    also = f"; also failed: {', '.join(failed[1:])}" if len(failed) > 1 else ""
    return Verdict(False, failed[0], failed, f"FAIL ({failed[0]}): {fired[failed[0]][1]}: {counts}{also}")
