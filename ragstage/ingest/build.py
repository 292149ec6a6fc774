"""Spans to traces: one documented trace per request, with gold from labels.

``ingest_openinference(spans, labels=...)`` reads spans (OTLP JSON Lines files, a Phoenix
export, or the SDK's span objects), reads each request's stages (:mod:`.requests`), recovers
the prompt ids from the prompt text when the application did not log them (:mod:`.recover`),
and makes chunks gold from document and span labels (:mod:`.gold`). Nothing is dropped
silently: labels that matched no request and requests with no LLM span are listed in the
result, and each trace says in ``meta.ingest`` how its lists were obtained.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..trace import Trace, write_traces
from .gold import ChunkKeys, Label, LabelIndex, gold_ids, iter_labels, locate
from .recover import MIN_FRAGMENT, normalise, recover_prompt_ids
from .requests import Request, candidate_contents, requests_from_spans
from .spans import Span, SpanError, from_sdk_spans

__all__ = ["IngestOptions", "IngestResult", "ingest_openinference", "load_spans", "judge_contains"]


def judge_contains(answer: str, label: Label) -> bool | None:
    """Right when the label's reference answer appears in the answer (case and whitespace
    ignored); None without a reference. A crude judge, for scripted answers and smoke runs."""
    if not label.reference:
        return None
    return normalise(label.reference).lower() in normalise(answer).lower()


@dataclass(frozen=True)
class IngestOptions:
    """How to read a system's spans. Metadata keys are looked up on any span of the request."""

    pipeline: str = "default"
    recover_prompt: bool = True
    chunk_keys: ChunkKeys = field(default_factory=ChunkKeys)
    section_keys: tuple[str, ...] = ("section", "heading")
    query_id_key: str = "query_id"
    prompt_ids_key: str = "prompt_ids"
    judge: Callable[[str, Label], bool | None] | None = None
    min_fragment: int = MIN_FRAGMENT


@dataclass
class IngestResult:
    """The traces, and what could not be matched (reported, not dropped)."""

    traces: list[Trace]
    unmatched_labels: list[Label]
    without_llm: list[str]  # query ids of requests with no LLM span
    skipped: list[str] = field(default_factory=list)  # trace ids with no retriever, reranker or LLM span

    def write(self, path: str | Path) -> int:
        """Write the traces as JSON Lines; returns the count."""
        return write_traces(path, self.traces)

    def summary(self) -> str:
        """One paragraph for a terminal: counts and what was left unmatched."""
        lines = [f"{len(self.traces)} trace(s)"]
        by_source: dict[str, int] = {}
        for t in self.traces:
            key = t.prompt_source or "not logged"
            by_source[key] = by_source.get(key, 0) + 1
        lines.append("prompt ids: " + ", ".join(f"{v} {k}" for k, v in sorted(by_source.items())))
        truncated = sum(1 for t in self.traces if t.truncated)
        if truncated:
            lines.append(f"{truncated} trace(s) with a passage that reached the prompt only in part")
        if self.without_llm:
            lines.append(f"{len(self.without_llm)} request(s) with no LLM span (prompt and answer not logged): "
                         + ", ".join(self.without_llm[:5]) + (" ..." if len(self.without_llm) > 5 else ""))
        if self.skipped:
            lines.append(f"{len(self.skipped)} trace id(s) skipped: no retriever, reranker or LLM span "
                         "(indexing or other work, not a request)")
        if self.unmatched_labels:
            shown = [f"{lb.query_id or lb.query!r} (line {lb.line})" for lb in self.unmatched_labels[:5]]
            lines.append(f"{len(self.unmatched_labels)} label(s) matched no request: " + ", ".join(shown)
                         + (" ..." if len(self.unmatched_labels) > 5 else ""))
        return "\n".join(lines)


def load_spans(source: Any) -> Iterator[Span]:
    """Spans from a path (``.parquet``: a Phoenix export; else OTLP JSON Lines), a Phoenix
    DataFrame, or an iterable of SDK spans or :class:`Span` objects."""
    if isinstance(source, (str, Path)):
        if str(source).endswith(".parquet"):
            from .phoenix import from_phoenix

            return from_phoenix(source)
        from .otlp import read_otlp_json

        return read_otlp_json(source)
    if type(source).__name__ == "DataFrame":
        from .phoenix import from_phoenix

        return from_phoenix(source)
    items = list(source)
    if all(isinstance(s, Span) for s in items):
        return iter(items)
    return from_sdk_spans(items)


def _ranked(entries: list[tuple[str, float | None]], sections: list[str | None]) -> list[Any]:
    """Entries with whatever score and section the spans gave (a section without a score is kept)."""
    if any(score is not None for _, score in entries) or any(s is not None for s in sections):
        out: list[dict[str, Any]] = []
        for (cid, score), section in zip(entries, sections):
            entry: dict[str, Any] = {"id": cid}
            if score is not None:
                entry["score"] = score
            if section is not None:
                entry["section"] = section
            out.append(entry)
        return out
    return [cid for cid, _ in entries]


def _section(req: Request, cid: str, keys: tuple[str, ...]) -> str | None:
    meta = req.candidates[cid].metadata if cid in req.candidates else {}
    value = next((meta[k] for k in keys if isinstance(meta.get(k), str)), None)
    return value


def _prompt(req: Request, opts: IngestOptions) -> tuple[list[str] | None, str | None, list[str] | None]:
    logged = req.metadata.get(opts.prompt_ids_key)
    if isinstance(logged, list):
        return [str(i) for i in logged], "logged", None
    if not opts.recover_prompt or not req.prompt_texts:
        return None, None, None
    found = recover_prompt_ids(candidate_contents(req), req.prompt_texts, opts.min_fragment)
    return list(found.prompt), "recovered", list(found.truncated)


def request_to_trace(req: Request, labels: LabelIndex, opts: IngestOptions) -> Trace:
    """One trace from one request (see :func:`ingest_openinference`)."""
    meta_qid = req.metadata.get(opts.query_id_key)
    label = labels.match(None if meta_qid is None else str(meta_qid), req.query)
    query_id = str(meta_qid) if meta_qid is not None else (label.query_id if label and label.query_id else req.trace_id)
    notes: dict[str, Any] = {"trace_id": req.trace_id, **req.notes}
    if not req.has_llm:
        notes["answer"] = "no LLM span in this request: prompt and answer were not logged"
    record: dict[str, Any] = {
        "query_id": query_id,
        "pipeline": str(req.metadata.get("pipeline") or opts.pipeline),
        "query": req.query,
        "answer": req.answer or "",
        "model": None if req.model is None else str(req.model),
        "prompt_version": req.prompt_version,
        "timestamp": req.timestamp,
        "error": req.error,
    }
    sections = [_section(req, cid, opts.section_keys) for cid, _ in req.retrieved]
    record["retrieved"] = _ranked(req.retrieved, sections)
    if req.reranked is not None:
        record["reranked"] = _ranked(req.reranked, [_section(req, cid, opts.section_keys) for cid, _ in req.reranked])
    record["prompt"], record["prompt_source"], record["truncated"] = _prompt(req, opts)
    meta: dict[str, Any] = {"ingest": notes}
    if label is not None:
        where = {cid: locate(c.metadata, c.content, opts.chunk_keys) for cid, c in req.candidates.items()}
        gold = gold_ids(label, where)
        where_label = f" (labels line {label.line})" if label.line is not None else ""
        notes["gold"] = (f"{len(gold)} candidate chunk(s) matched the label{where_label}" if gold else
                         f"no candidate matched the label{where_label}: gold is the label's own targets")
        record["gold"] = list(gold or label.targets)
        if label.answerable is not None:
            record["answerable"] = label.answerable
        correct = label.correct
        if correct is None and opts.judge is not None and req.answer is not None:
            correct = opts.judge(req.answer, label)
        record["correct"] = correct
        if label.reference is not None:
            meta["reference"] = label.reference
    record["meta"] = meta
    return Trace.from_dict(record)


def ingest_openinference(spans: Any, labels: Iterable[Label] | str | Path | None = None,
                         options: IngestOptions | None = None, **kwargs: Any) -> IngestResult:
    """Traces from OpenInference spans, one per request (OpenTelemetry trace id).

    ``spans``: a path or a list of paths (OTLP JSON Lines, or ``.parquet`` Phoenix exports), a
    Phoenix spans DataFrame, or SDK span objects. ``labels``: a JSON Lines path or
    :class:`~ragstage.ingest.gold.Label` objects. Options as :class:`IngestOptions` or keywords.
    Raises :class:`~ragstage.ingest.spans.SpanError` (a ``TraceError``) on bad input, naming
    the file, line and field.
    """
    opts = options or IngestOptions(**kwargs)
    sources = spans if isinstance(spans, (list, tuple)) and spans and isinstance(spans[0], (str, Path)) else [spans]
    # Spans are many small acyclic dicts: the cyclic collector, run again and again over a
    # growing heap, made reading 100,000 spans several times slower than reading 10,000 x 10.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _ingest(sources, labels, opts)
    finally:
        if was_enabled:
            gc.enable()


def _ingest(sources: list[Any], labels: Iterable[Label] | str | Path | None, opts: IngestOptions) -> IngestResult:
    all_spans = [s for source in sources for s in load_spans(source)]
    index = LabelIndex(iter_labels(labels))
    traces: list[Trace] = []
    seen: dict[tuple[str, str], str] = {}
    without_llm, skipped = [], []
    for req in requests_from_spans(all_spans):
        if not req.is_request:
            skipped.append(req.trace_id)
            continue
        trace = request_to_trace(req, index, opts)
        key = (trace.query_id, trace.pipeline)
        if key in seen:
            raise SpanError(f"requests {seen[key]} and {req.trace_id} both have query_id {key[0]!r} in pipeline "
                            f"{key[1]!r}: set distinct query ids (metadata '{opts.query_id_key}') or ingest "
                            "the runs separately", field="query_id")
        seen[key] = req.trace_id
        if not req.has_llm:
            without_llm.append(trace.query_id)
        traces.append(trace)
    return IngestResult(traces, index.unmatched(), without_llm, skipped)
