"""The serial accounting of an ingest: requests to traces, in the order their trace ids were first seen.

Reading requests may run in parts (:mod:`.flow`), but what a request becomes is accounted here,
one request after the other in a fixed order: the duplicate check, the run numbering, and every
count and list of :class:`.result.IngestResult`; then, once every request is read, what only the
whole shows (labels no request used, the chunks' metadata keys, the spans by convention).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

from ..trace import Trace
from .build import Found, IngestOptions, request_to_trace
from .conventions import NO_CONVENTION, OPENINFERENCE, adapt, foreign_convention
from .gold import LabelIndex
from .grouping import TraceGroups
from .memo import IngestCache
from .requests import Request, read_request
from .result import IngestResult
from .spans import Span, SpanError

__all__ = ["Accounts", "Outcome", "conclude", "request"]


@dataclass
class Outcome:
    """What one request became, kept until every request first seen before it is done."""

    trace_id: str
    timestamp: str | None
    trace: Trace | None = None  # None: skipped or incomplete
    found: Found | None = None
    has_llm: bool = True
    incomplete: list[str] | None = None


class Accounts:
    """Requests to traces, accounted in the order their trace ids were first seen (or, with
    ``split_runs``, in the order they ran): the result's lists and the run numbering do not
    depend on the order the requests were completed in. Also what the spans showed on the
    way: how many, the foreign conventions among them, the metadata keys of the chunks."""

    def __init__(self, result: IngestResult, index: LabelIndex, opts: IngestOptions, paths: str) -> None:
        self.result, self.index, self.opts, self.paths = result, index, opts, paths
        self.pending: dict[int, Outcome] = {}
        self.next = 0
        self.seen: dict[tuple[str, str], str] = {}  # (query_id, pipeline) -> trace id, in accounting order
        self.runs: Counter[tuple[str, str]] = Counter()
        self.chunk_keys: set[Any] = set()
        # spans by (input, convention), OpenInference's aside; a convention no adapter reads ends "(not read)"
        self.conventions: Counter[tuple[str, str]] = Counter()
        self.spans: Counter[str] = Counter()  # spans by input
        self.cache = IngestCache()  # this ingest's memos (a process reading a part has its own)

    def read_as(self, spans: list[Span], where: str) -> list[Span]:
        """A line's spans (of the input ``where``) as the ingest reads them: a span with no
        OpenInference kind read by its convention's adapter (:func:`.conventions.adapt`), each
        convention counted by input (a span in none counted as such, never as OpenInference)."""
        self.spans[where] += len(spans)
        if all(s.kind for s in spans):  # the usual line: every span in a known kind
            return spans
        out = []
        for s in spans:
            if not s.kind:
                s, read = adapt(s)
                foreign = None if read is not None else foreign_convention(s)
                self.conventions[where, read or (f"{foreign} (not read)" if foreign else NO_CONVENTION)] += 1
            out.append(s)
        return out

    def outcome(self, req: Request) -> Outcome:
        out = Outcome(req.trace_id, req.timestamp)
        if req.incomplete:  # a fragment (a parent not in the export) may be a request cut in two
            out.incomplete = req.incomplete
            return out
        if not req.is_request:
            return out
        # the keys as written (named as text when the ingest ends), every candidate's in one call
        self.chunk_keys.update(*[cand.metadata for cand in req.candidates.values()])
        out.trace, out.found = request_to_trace(req, self.index, self.opts)
        out.has_llm = req.has_llm
        return out

    def done(self, seq: int, req: Request) -> Iterator[Trace]:
        """Take request number ``seq``; the traces every request up to the first one not done yet gives."""
        self.pending[seq] = self.outcome(req)
        if self.opts.split_runs:
            return
        while self.next in self.pending:
            trace = self.account(self.pending.pop(self.next))
            self.next += 1
            if trace is not None:
                yield trace

    def finish(self) -> Iterator[Trace]:
        """The rest (with ``split_runs``: everything, runs numbered in the order they ran)."""
        outcomes = [self.pending[seq] for seq in sorted(self.pending)]
        self.pending = {}
        if self.opts.split_runs:
            outcomes.sort(key=lambda o: o.timestamp or "")
        for out in outcomes:
            trace = self.account(out)
            if trace is not None:
                yield trace

    def asked_twice(self, key: tuple[str, str], trace_id: str) -> SpanError:
        """The error for a second request with the key of one already accounted."""
        where = self.paths or "; ".join(self.result.read) or "the spans"
        return SpanError(f"{where}: requests {self.seen[key]} and {trace_id} both have query_id "
                         f"{key[0]!r} in pipeline {key[1]!r}: two runs in one export? Split them with "
                         f"--split-runs (Python: split_runs=True; the n-th run becomes pipeline "
                         f"'{key[1]}#n'), set distinct query ids or pipelines (metadata "
                         f"'{self.opts.query_id_key}', 'pipeline'), or ingest the runs separately", field="query_id")

    def account(self, out: Outcome) -> Trace | None:
        result = self.result
        if out.trace is None:
            if out.incomplete:
                result.incomplete[out.trace_id] = out.incomplete
            else:
                result.skipped.append(out.trace_id)
            return None
        trace, found = out.trace, out.found
        key = (trace.query_id, trace.pipeline)
        if key in self.seen:
            if not self.opts.split_runs:
                raise self.asked_twice(key, out.trace_id)
            self.runs[key] += 1
            trace = trace.replace(pipeline=f"{trace.pipeline}#{self.runs[key] + 1}")
        else:
            self.seen[key] = out.trace_id
        if not out.has_llm:
            result.without_llm.append(trace.query_id)
        if found is not None and found.unlocated:
            result.unlocated.append(trace.query_id)
        if found is not None and found.unrecorded:
            result.unrecorded.append(trace.query_id)
        if found is not None and found.partial:
            result.partial.append(trace.query_id)
        result.counts.add(trace)
        return trace

    def line(self, source: int, line: int, spans: list[Span], groups: TraceGroups, where: str) -> Iterator[Trace]:
        """The traces one line's spans complete."""
        for seq, trace_id, group in groups.add(source, line, self.read_as(spans, where), where):
            yield from self.done(seq, request(trace_id, group, where, line, self.cache))


def request(trace_id: str, spans: list[Span], where: str, line: int | None = None,
            cache: IngestCache | None = None) -> Request:
    """:func:`.requests.read_request`, its error placed: the input, and the line whose spans
    completed the request (the request's last line) when it is known."""
    try:
        return read_request(trace_id, spans, cache=cache)
    except SpanError as exc:
        if exc.path is not None:
            raise
        detail = exc.detail if exc.detail.startswith("trace ") else f"trace {trace_id}: {exc.detail}"
        raise SpanError(detail, path=where, line=line, field=exc.field) from None


def conclude(result: IngestResult, index: LabelIndex, chunk_keys: set[Any], conventions: Counter[tuple[str, str]],
             spans: Counter[str]) -> None:
    """What is known only once every request is read: labels no request used, the chunks'
    metadata keys, each input's spans by convention, and a warning when spans in a convention
    this does not read may have cost requests (some trace ids skipped, or nothing written)."""
    result.unmatched_labels = index.unmatched()
    result.chunk_metadata_keys = sorted({str(key) for key in chunk_keys})
    overall: Counter[str] = Counter()
    for where, n in spans.items():
        found = Counter({name: k for (w, name), k in conventions.items() if w == where})
        overall.update(found)
        native = n - sum(found.values())
        result.conventions[where] = Counter({OPENINFERENCE: native} if native else {}) + found
    n_spans = sum(spans.values())
    unread = Counter({name: n for name, n in overall.items() if name.endswith("(not read)")})
    if n_spans and not result.counts.n and not result.incomplete:
        found_text = ", ".join(f"{name} on {n} span(s)" for name, n in overall.most_common())
        result.warnings.append(f"{n_spans} span(s) read, but no request in a convention this reads"
                               + (f" (found {found_text})" if found_text else "")
                               + ": instrument with OpenInference, OpenLLMetry or MLflow Tracing, or export from "
                               "Phoenix or MLflow")
    elif unread and result.skipped:
        found_text = ", ".join(f"{name} on {n} span(s)" for name, n in unread.most_common())
        result.warnings.append(f"{len(result.skipped)} trace id(s) skipped as no request, and {found_text}: requests "
                               "recorded only in a convention this does not read are among them")
