"""``ragstage doctor``: which of the minimum log fields your traces lack, and what that costs.

*Diagnosing RAG Failure Modes* names the minimum log per request: query; retrieved (id, score, section); reranked; the
prompt ids; answer; model; prompt version; gold; timestamp. Each missing field makes some
diagnosis impossible, and the doctor says which. A few gaps **block** attribution outright
(no gold: nothing to look for; no prompt ids: assembly and retrieval losses look the same; no
retrieved list: retrieval cannot be judged); a trace with any of them cannot be attributed,
and the doctor exits 1. It also reports shape problems that make the numbers wrong without
an error: prompt ids that no ranked list holds, duplicate ids, answers never judged. A trace
with a service failure (``error``) is attributed as such whatever it lacks, so it never blocks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ..attribution import Outcome, diagnose
from ..trace import Trace

__all__ = ["FIELD_CHECKS", "Finding", "Report", "examine", "doctor_files"]


@dataclass(frozen=True)
class FieldCheck:
    name: str
    missing: Callable[[Trace], bool]
    impact: str
    blocking: bool = False


def _no_scores(t: Trace) -> bool:
    return bool(t.retrieved) and (t.retrieved_scores is None or any(s is None for s in t.retrieved_scores))


def _no_sections(t: Trace) -> bool:
    return bool(t.retrieved) and (t.retrieved_sections is None or any(s is None for s in t.retrieved_sections))


FIELD_CHECKS: tuple[FieldCheck, ...] = (
    FieldCheck("query", lambda t: not t.query,
               "labels cannot be matched by question text; query understanding cannot be judged"),
    FieldCheck("retrieved", lambda t: not t.retrieved,
               "retrieval cannot be judged: every labelled question lands in `retrieval`", blocking=True),
    FieldCheck("retrieved.score", _no_scores,
               "no score distribution: a threshold or a near-miss cannot be seen"),
    FieldCheck("retrieved.section", _no_sections,
               "failures cannot be sliced by section or document type (a slice names where to look)"),
    FieldCheck("reranked", lambda t: t.reranked is None,
               "no reranking stage logged: if the pipeline has one, its cuts count as `prompt_assembly`"),
    FieldCheck("prompt", lambda t: t.prompt is None,
               "assembly and retrieval losses cannot be told apart (`not_logged`); recover them from the "
               "prompt text or log them", blocking=True),
    FieldCheck("answer", lambda t: not t.answer,
               "generation cannot be checked: no citation markers, no refusals, nothing to judge"),
    FieldCheck("model", lambda t: t.model is None, "runs cannot be compared or sliced by model"),
    FieldCheck("prompt_version", lambda t: t.prompt_version is None,
               "a prompt change cannot be told from any other change between two runs"),
    FieldCheck("gold", lambda t: not t.gold and t.answerable,
               "nothing to look for: the question goes to `label_missing`", blocking=True),
    FieldCheck("timestamp", lambda t: t.timestamp is None,
               "requests cannot be replayed in order or lined up with deploys"),
)


def _duplicates(t: Trace) -> list[str]:
    return [name for name in ("retrieved", "reranked", "prompt", "gold")
            if (ids := getattr(t, name)) is not None and len(set(ids)) != len(ids)]


def _partial_span(t: Trace) -> bool:
    """Ingest found the gold span covered only in part by the chunks in the prompt."""
    notes = t.meta.get("ingest")
    return isinstance(notes, dict) and "partial_coverage" in notes


def _outside(t: Trace) -> bool:
    """Prompt ids that no ranked list holds: the prompt came from somewhere the log does not show."""
    if t.prompt is None:
        return False
    ranked = set(t.reranked if t.reranked is not None else t.retrieved)
    return any(p not in ranked for p in t.prompt)


def _reranked_outside(t: Trace) -> bool:
    """Reranked ids that the retrieved list does not hold (one set of the retrieved ids per trace)."""
    if t.reranked is None:
        return False
    retrieved = set(t.retrieved)
    return any(r not in retrieved for r in t.reranked)


SHAPE_CHECKS: tuple[tuple[str, Callable[[Trace], bool], str], ...] = (
    ("prompt ids outside the ranked list", _outside,
     "prompt ⊆ reranked ⊆ retrieved does not hold: a stage is missing from the log, or ids differ between stages"),
    ("duplicate ids", lambda t: bool(_duplicates(t)), "a passage counted twice inflates recall and retention"),
    ("reranked outside retrieved", _reranked_outside, "the reranker saw candidates the retrieval log does not list"),
    ("answer never judged", lambda t: diagnose(t).stage is Outcome.UNJUDGED,
     "the evidence reached the prompt but nothing judges the answer (`unjudged`): add `correct`, "
     "`answer_ids` or claim labels"),
    ("passage truncated in the prompt", lambda t: bool(t.truncated) and not _partial_span(t),
     "a passage reached the model only in part: it does not count as in the prompt"),
    ("gold span only partly in the prompt", _partial_span,
     "a gold span straddles chunks and only some of them reached the prompt: the prompt text does not "
     "contain the whole span, so the loss is prompt assembly's"),
    ("query and answer redacted", lambda t: isinstance(r := t.meta.get("redacted"), list) and "answer" in r,
     "the answer is a digest: its citation markers and numbers are gone, so the flags (fabricated_citation, "
     "numeric_unmarked) and the reasons read from the answer text cannot be found; judge with `correct` or "
     "`answer_ids`"),
)


@dataclass
class Finding:
    """One line of the report: a field or problem, how many traces it affects, what it costs."""

    name: str
    count: int
    n: int
    impact: str
    blocking: bool = False
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "n": self.n, "impact": self.impact,
                "blocking": self.blocking, "examples": self.examples}


@dataclass
class Report:
    """The doctor's findings for a batch of traces."""

    n: int
    fields: list[Finding]
    problems: list[Finding]
    attributable: int
    prompt_sources: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        """True when some trace cannot be attributed (the CLI's exit code 1)."""
        return self.attributable < self.n or self.n == 0

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "attributable": self.attributable, "blocked": self.blocked,
                "prompt_sources": self.prompt_sources, "fields": [f.to_dict() for f in self.fields],
                "problems": [p.to_dict() for p in self.problems], "notes": self.notes}

    def to_text(self) -> str:
        """A terminal report: one row per minimum field, then the shape problems."""
        rows = [("field", "missing", "of", "what it makes impossible")]
        for f in self.fields:
            rows.append((f.name + (" *" if f.blocking and f.count else ""), str(f.count), str(f.n),
                         f.impact if f.count else "-"))
        width = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join([r[0].ljust(width[0]), r[1].rjust(width[1]), r[2].rjust(width[2]), r[3]]).rstrip()
                 for r in rows]
        source = ", ".join(f"{v} {k}" for k, v in sorted(self.prompt_sources.items()))
        lines += ["", f"prompt ids: {source or 'none'}"]
        if self.problems:
            lines += ["", "shape problems:"]
            for p in self.problems:
                lines.append(f"  {p.name}: {p.count} of {p.n} (e.g. {', '.join(p.examples)}): {p.impact}")
        lines += [""] + [f"note: {n}" for n in self.notes]
        verdict = (f"attributable: {self.attributable} of {self.n} traces"
                   + ("; * blocks attribution" if self.blocked else ""))
        lines.append(verdict)
        return "\n".join(line for line in lines).strip("\n")


def _examples(traces: list[Trace], check: Callable[[Trace], bool], k: int = 3) -> tuple[int, list[str]]:
    hits = [t.query_id for t in traces if check(t)]
    return len(hits), hits[:k]


def examine(traces: Iterable[Trace], notes: Iterable[str] = (),
            blocked: Mapping[tuple[str, str], str] | None = None) -> Report:
    """Check traces against the minimum log and for shape problems. ``blocked``: traces known
    to be unattributable for a reason the fields do not show (``(query_id, pipeline) -> why``)."""
    traces = list(traces)
    n = len(traces)
    fields = []
    blocked_ids: set[tuple[str, str]] = set()
    for check in FIELD_CHECKS:
        count, examples = _examples(traces, check.missing)
        fields.append(Finding(check.name, count, n, check.impact, check.blocking, examples))
        if check.blocking:  # a service failure is attributed (endpoint_unavailable) whatever it lacks
            blocked_ids.update((t.query_id, t.pipeline) for t in traces if t.error is None and check.missing(t))
    problems = []
    if blocked:
        keys = {(t.query_id, t.pipeline) for t in traces} & set(blocked)
        blocked_ids.update(keys)
        for why in sorted({blocked[k] for k in keys}):
            hits = [k[0] for k in sorted(keys) if blocked[k] == why]
            problems.append(Finding(why, len(hits), n, "their gold cannot be found among the chunks: no stage can "
                                    "be shown to have lost it (written as label_missing); set the chunk keys or "
                                    "label with gold_text", True, hits[:3]))
    for name, check, impact in SHAPE_CHECKS:
        count, examples = _examples(traces, check)
        if count:
            problems.append(Finding(name, count, n, impact, False, examples))
    sources: Counter[str] = Counter(t.prompt_source or ("not logged" if t.prompt is None else "unstated")
                                    for t in traces)
    return Report(n, fields, problems, n - len(blocked_ids), dict(sources), [*notes, *_labels_notes(traces)])


def _labels_notes(traces: list[Trace]) -> list[str]:
    """A note when labels are silver: who labelled how many (see :mod:`ragstage.judge.notice`)."""
    from ..judge.notice import silver_note, silver_summary

    note = silver_note(silver_summary(traces), len(traces))
    return [note] if note else []


def _spans_notes(path: str, result: Any, recover_prompt: bool) -> tuple[list[str], dict[tuple[str, str], str]]:
    """Notes on an ingest, and the traces it leaves unattributable (key -> why)."""
    from .conventions import CANNOT_SHOW

    notes = [f"read {r}" for r in result.read]
    for by in result.conventions.values():
        for name, n in by.most_common():
            notes.append(f"{path}: {n} span(s) in {name}" + (f"; it cannot show {CANNOT_SHOW[name]}"
                                                              if name in CANNOT_SHOW else ""))
    blocked: dict[tuple[str, str], str] = {}
    if result.without_llm:
        notes.append(f"{path}: {len(result.without_llm)} request(s) with no LLM span")
    if result.unmatched_labels:
        notes.append(f"{path}: {len(result.unmatched_labels)} label(s) matched no request")
    if result.incomplete:
        notes.append(f"{path}: {len(result.incomplete)} incomplete request(s) not read (a parent span missing, "
                     "no root, or no retriever span): pull every span (the Phoenix client's limit=)")
    if result.partial:
        notes.append(f"{path}: {len(result.partial)} trace(s) whose gold span reached the prompt only in part")
    if result.unlocated:
        keys = ", ".join(result.chunk_metadata_keys) or "none"
        notes.append(f"{path}: {len(result.unlocated)} labelled request(s) with no chunk the chunk keys locate: "
                     f"their stage cannot be observed; chunk metadata keys: {keys} (--doc-key, --start-key, --end-key)")
        unlocated = set(result.unlocated)
        for t in result.traces:
            if t.query_id in unlocated:
                blocked[(t.query_id, t.pipeline)] = "labels located in no chunk"
    notes += [f"{path}: {w}" for w in result.warnings]
    if not recover_prompt and len(result.without_llm) < len(result.traces):
        notes.append(f"{path}: the prompt text is in the spans: --recover-prompt recovers the prompt ids")
    return notes, blocked


def doctor_files(paths: Iterable[str], labels: str | None = None, recover_prompt: bool = False,
                 ingest_options: Mapping[str, Any] | None = None) -> Report:
    """The doctor on files: trace JSON Lines (or Parquet), or spans in any format
    ``ragstage ingest spans`` reads, each detected from its content and read once (a pipe too).

    Spans are ingested first, with prompt-id recovery **off** unless asked: the doctor reports
    what the export itself logs. Requests without an LLM span, incomplete requests and labels
    that matched no request are notes; traces whose labels no chunk could be tested against
    cannot be attributed.
    """
    from ..formats import read_any
    from .flow import ingest_spans
    from .formats import detect, regular_file

    traces: list[Trace] = []
    notes: list[str] = []
    blocked: dict[tuple[str, str], str] = {}
    for path in paths:
        with regular_file(path) as real:
            if detect(real).name == "traces":
                traces.extend(read_any(str(real)))
                continue
            result = ingest_spans(str(real), labels=labels, recover_prompt=recover_prompt,
                                  **dict(ingest_options or {}))
        traces.extend(result.traces)
        more, more_blocked = _spans_notes(str(path), result, recover_prompt)
        notes += [n.replace(str(real), str(path)) for n in more]
        blocked.update(more_blocked)
    return examine(traces, notes, blocked)
