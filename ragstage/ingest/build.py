"""Spans to traces: one documented trace per request, with gold from labels.

``ingest_spans(spans, labels=...)`` (also named ``ingest_openinference``) reads spans from any
export :mod:`.formats` recognises (OTLP JSON, Phoenix span JSON Lines or frames, MLflow traces)
or from the objects those tools hand you (Phoenix and MLflow DataFrames, MLflow ``Trace`` lists,
Phoenix span lists, OpenTelemetry SDK spans), reads each request's stages (:mod:`.requests`),
recovers the prompt ids from the prompt text when the application did not log them
(:mod:`.recover`), and makes chunks gold from document and span labels (:mod:`.gold`).

Nothing is dropped or guessed silently: labels that matched no request, labels whose chunks
cannot be located with the chunk keys (with the metadata keys seen), incomplete requests
(never written with an empty stage), spans in a convention this does not read, requests
with no LLM span, and a gold span that reached the prompt only in part are all counted in
the result and its summary, and each trace says in ``meta.ingest`` how its lists were obtained.
"""

from __future__ import annotations

import gc
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..trace import Trace, write_traces
from .gold import ChunkKeys, Label, LabelIndex, gold_ids, iter_labels, locatable, locate, span_coverage
from .recover import MIN_FRAGMENT, normalise, recover_prompt_ids
from .requests import Request, candidate_contents, requests_from_spans
from .spans import Span, SpanError, from_sdk_spans

__all__ = ["IngestOptions", "IngestResult", "ingest_spans", "ingest_openinference", "load_spans", "judge_contains",
           "looks_like_refusal", "text_query_id"]


def judge_contains(answer: str, label: Label) -> bool | None:
    """Right when the label's reference answer appears in the answer (case and whitespace
    ignored); None without a reference. A crude judge, for scripted answers and smoke runs."""
    if not label.reference:
        return None
    return normalise(label.reference).lower() in normalise(answer).lower()


#: How a refusal starts, once lower-cased and whitespace-normalised (``NONE`` is the SciFact
#: pipeline's own refusal). Pass ``refusal=`` to :class:`IngestOptions` for your system's wording.
REFUSAL_OPENINGS = ("none", "i don't know", "i do not know", "i cannot answer", "i can't answer",
                    "i am unable to answer", "i'm unable to answer", "i cannot find", "i could not find",
                    "i couldn't find", "the context does not", "the provided context does not",
                    "the documents do not", "there is no information", "not enough information",
                    "insufficient information", "i'm sorry, but i", "sorry, i")


_REFUSAL_PREFIXES = tuple(o + end for o in REFUSAL_OPENINGS for end in " ,.")


def looks_like_refusal(answer: str) -> bool:
    """True when the answer opens like a refusal (:data:`REFUSAL_OPENINGS`): it is one of them,
    or starts with one followed by a space, a comma or a full stop."""
    text = normalise(answer).lower().strip(" .!\"'")
    return text in REFUSAL_OPENINGS or text.startswith(_REFUSAL_PREFIXES)


def text_query_id(query: str) -> str:
    """A question id from its text (whitespace and case ignored): the same question gets the
    same id in every run, so two runs pair in ``compare``."""
    return "q-" + hashlib.sha1(normalise(query).lower().encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class IngestOptions:
    """How to read a system's spans. Metadata keys are looked up on any span of the request.

    ``split_runs``: a question asked again (the same query id in the same pipeline, e.g. an
    app run twice into one Phoenix project) starts the next run, named ``<pipeline>#2``...
    instead of being an error. ``refusal``: decides from the answer text whether the system
    declined (a label's or the spans' own ``refused`` wins); None turns it off.
    """

    pipeline: str = "default"
    recover_prompt: bool = True
    chunk_keys: ChunkKeys = field(default_factory=ChunkKeys)
    section_keys: tuple[str, ...] = ("section", "heading")
    query_id_key: str = "query_id"
    prompt_ids_key: str = "prompt_ids"
    judge: Callable[[str, Label], bool | None] | None = None
    min_fragment: int = MIN_FRAGMENT
    split_runs: bool = False
    refusal: Callable[[str], bool] | None = looks_like_refusal


@dataclass
class IngestResult:
    """The traces, and everything that could not be read as asked (reported, not dropped)."""

    traces: list[Trace]
    unmatched_labels: list[Label]
    without_llm: list[str]  # query ids of requests with no LLM span
    skipped: list[str] = field(default_factory=list)  # trace ids with no retriever, reranker or LLM span
    incomplete: dict[str, list[str]] = field(default_factory=dict)  # trace id -> why; not written
    unlocated: list[str] = field(default_factory=list)  # query ids whose label no chunk could be tested against
    chunk_metadata_keys: list[str] = field(default_factory=list)  # every metadata key seen on a chunk
    partial: list[str] = field(default_factory=list)  # query ids whose gold span reached the prompt in part
    read: list[str] = field(default_factory=list)  # "<source>: <format>, N spans" per input
    warnings: list[str] = field(default_factory=list)  # whatever else a user must know

    def write(self, path: str | Path) -> int:
        """Write the traces as JSON Lines; returns the count."""
        return write_traces(path, self.traces)

    @property
    def loud(self) -> bool:
        """True when something would put traces in a wrong bucket (``--strict`` exits 1)."""
        return bool(self.unmatched_labels or self.without_llm or self.incomplete or self.unlocated
                    or self.warnings)

    def summary(self) -> str:
        """One paragraph for a terminal: counts and what was left unmatched."""
        lines = [f"read {r}" for r in self.read] + [f"{len(self.traces)} trace(s)"]
        by_source: dict[str, int] = {}
        for t in self.traces:
            key = t.prompt_source or "not logged"
            by_source[key] = by_source.get(key, 0) + 1
        lines.append("prompt ids: " + ", ".join(f"{v} {k}" for k, v in sorted(by_source.items())))
        partial = set(self.partial)
        truncated = sum(1 for t in self.traces if t.truncated and t.query_id not in partial)
        if truncated:
            lines.append(f"{truncated} trace(s) with a passage that reached the prompt only in part")
        if self.partial:
            lines.append(f"{len(self.partial)} trace(s) whose gold span the prompt holds only in part (partial "
                         "coverage: prompt_assembly): " + _some(self.partial))
        if self.without_llm:
            lines.append(f"{len(self.without_llm)} request(s) with no LLM span (prompt and answer not logged): "
                         + _some(self.without_llm))
        if self.incomplete:
            why = Counter(r for reasons in self.incomplete.values() for r in reasons)
            lines.append(f"{len(self.incomplete)} incomplete request(s) not written ("
                         + "; ".join(f"{n} with {r}" for r, n in why.most_common())
                         + "): an export cut by a limit, or a run still in flight: " + _some(list(self.incomplete)))
        if self.skipped:
            lines.append(f"{len(self.skipped)} trace id(s) skipped: no retriever, reranker or LLM span "
                         "(indexing or other work, not a request)")
        if self.unmatched_labels:
            shown = [f"{lb.query_id or lb.query!r} (line {lb.line})" for lb in self.unmatched_labels]
            lines.append(f"{len(self.unmatched_labels)} label(s) matched no request: " + _some(shown))
        if self.unlocated:
            n_labelled = sum(1 for t in self.traces if t.gold)
            keys = ", ".join(self.chunk_metadata_keys) or "none"
            lines.append(f"{len(self.unlocated)} of {n_labelled} labels matched no retrieved chunk: the chunk keys "
                         f"locate no chunk; chunk metadata keys: {keys} (pass --doc-key/--start-key/--end-key, "
                         "Python: chunk_keys=ChunkKeys(...)): " + _some(self.unlocated))
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _some(items: list[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (" ..." if len(items) > k else "")


def _open_path(path: str | Path, read: list[str]) -> Iterator[Span]:
    """The spans of one file or folder, its format detected from the content (read once)."""
    from .formats import detect, regular_file

    with regular_file(path) as real:
        found = detect(real)
        if found.name == "traces":
            raise SpanError("this file holds ragstage traces, not spans: run `ragstage attribute` or "
                            "`ragstage doctor` on it", path=str(path))
        if found.name == "otlp":
            from .otlp import read_otlp_json as reader
        elif found.name == "phoenix-jsonl":
            from .phoenix import read_phoenix_jsonl as reader
        elif found.name == "phoenix-parquet":
            from .phoenix import from_phoenix as reader
        else:
            from .mlflow import from_mlflow as reader
        n = 0
        for span in reader(real):
            n += 1
            yield span
        read.append(f"{path}: {found}, {n} span(s)")


def _objects(source: Any, read: list[str], warnings: list[str]) -> Iterator[Span]:
    """Spans from an object a tool hands you (see :func:`ingest_spans`)."""
    if type(source).__name__ == "DataFrame":
        columns = set(source.columns)
        if "context.span_id" in columns or source.index.name in ("context.span_id", "span_id"):
            from .phoenix import frame_limit_note, from_phoenix

            note = frame_limit_note(source)
            if note:
                warnings.append(note)
            read.append(f"a Phoenix spans DataFrame, {len(source)} span(s)")
            return from_phoenix(source)
        if "trace_id" in columns and ({"spans", "trace"} & columns):
            from .mlflow import from_mlflow

            read.append(f"an MLflow search_traces DataFrame, {len(source)} trace(s)")
            return from_mlflow(source)
        raise SpanError(f"a DataFrame in no known shape: columns {', '.join(sorted(map(str, columns))[:8])} "
                        "(expected Phoenix's spans frame or MLflow's search_traces frame)")
    if hasattr(source, "info") and hasattr(source, "data"):  # one MLflow Trace
        source = [source]
    items = list(source)
    if not items:
        return iter(())
    first = items[0]
    if all(isinstance(s, Span) for s in items):
        read.append(f"{len(items)} span(s)")
        return iter(items)
    if (hasattr(first, "info") and hasattr(first, "data")) or (isinstance(first, dict) and "info" in first
                                                                 and "data" in first):
        from .mlflow import from_mlflow

        read.append(f"{len(items)} MLflow trace(s)")
        return from_mlflow(items)
    if isinstance(first, dict) and "context" in first:
        from .phoenix import span_object

        read.append(f"{len(items)} Phoenix span object(s)")
        return (span_object(s) for s in items)
    read.append(f"{len(items)} OpenTelemetry SDK span(s)")
    return from_sdk_spans(items)


def load_spans(source: Any, read: list[str] | None = None, warnings: list[str] | None = None) -> Iterator[Span]:
    """Spans from a path (any format :func:`.formats.detect` names; a folder of Parquet files),
    a Phoenix or MLflow DataFrame, MLflow ``Trace`` objects, Phoenix span objects (dicts), or
    SDK / :class:`Span` objects. ``read`` collects one line per input saying what was read."""
    read = [] if read is None else read
    warnings = [] if warnings is None else warnings
    if isinstance(source, (str, Path)):
        return _open_path(source, read)
    return _objects(source, read, warnings)


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
    found = recover_prompt_ids(candidate_contents(req, normalised=True), req.prompt_texts, opts.min_fragment,
                               normalised=True)
    return list(found.prompt), "recovered", list(found.truncated)


@dataclass
class _Found:
    """What reading one request against its label found, beyond the trace itself."""

    unlocated: bool = False
    partial: bool = False


def _partial_coverage(label: Label, where: dict[str, tuple[str | None, int | None, int | None]],
                      gold: tuple[str, ...], prompt: list[str], texts: list[str],
                      notes: dict[str, Any]) -> list[str]:
    """Gold chunks in the prompt whose gold span the prompt holds only in part, when no gold
    evidence is in it whole; [] otherwise. The context-assembly test of *Which RAG component
    broke?* is "does the final prompt text contain the gold span": a straddling span whose other
    chunk never reached the prompt is not contained, so its chunk counts as cut (``truncated``)
    and the loss is prompt assembly's. Not when the label's reference answer is in the prompt
    text (the part that arrived carries it), and the caller skips an answer judged right: in
    both the bucket stays what the rest of the walk says."""
    in_prompt = [cid for cid in prompt if cid in set(gold)]
    if not in_prompt or not label.gold_spans:
        return []
    if label.reference and normalise(label.reference).lower() in normalise("\n".join(texts)).lower():
        return []  # the part of the span that carries the answer is in the prompt
    doc_gold = set(label.gold)
    if any(cid in doc_gold or where.get(cid, (None,))[0] in doc_gold for cid in in_prompt):
        return []  # a whole gold document is in the prompt
    coverage = span_coverage(label, where, in_prompt)
    if any(covered == e - s for (_, s, e), covered in coverage):
        return []
    parts = [f"{d}#{s}-{e}: {covered} of {e - s} characters" for (d, s, e), covered in coverage if covered]
    notes["partial_coverage"] = ("the chunks in the prompt cover the gold span only in part (" + "; ".join(parts)
                                 + "): the evidence did not reach the prompt whole")
    return in_prompt


def request_to_trace(req: Request, labels: LabelIndex, opts: IngestOptions) -> tuple[Trace, _Found]:
    """One trace from one request (see :func:`ingest_spans`), and what its label found."""
    found = _Found()
    meta_qid = req.metadata.get(opts.query_id_key)
    label = labels.match(None if meta_qid is None else str(meta_qid), req.query)
    if meta_qid is not None:
        query_id = str(meta_qid)
    elif label is not None and label.query_id:
        query_id = label.query_id
    else:  # labelled by question text, or not labelled: an id that pairs across runs
        query_id = text_query_id(req.query) if req.query else req.trace_id
    notes: dict[str, Any] = {"trace_id": req.trace_id, **req.notes}
    if not req.has_llm:
        notes["answer"] = "no LLM span in this request: prompt and answer were not logged"
    refused = req.metadata.get("refused")
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
        if gold:
            notes["gold"] = f"{len(gold)} candidate chunk(s) matched the label{where_label}"
        elif where and not locatable(label, where):
            found.unlocated = True
            notes["gold"] = (f"no candidate could be located{where_label}: the chunk keys find no document or "
                             "offsets in the chunks' metadata; gold is the label's own targets")
        else:
            notes["gold"] = f"no candidate matched the label{where_label}: gold is the label's own targets"
        record["gold"] = list(gold or label.targets)
        correct = label.correct
        if correct is None and opts.judge is not None and req.answer is not None:
            correct = opts.judge(req.answer, label)
        if gold and record["prompt"] is not None and correct is not True:
            cut = _partial_coverage(label, where, gold, record["prompt"], req.prompt_texts, notes)
            if cut:
                found.partial = True
                record["prompt"] = [cid for cid in record["prompt"] if cid not in cut]
                record["truncated"] = list(dict.fromkeys([*(record["truncated"] or []), *cut]))
        if label.answerable is not None:
            record["answerable"] = label.answerable
        record["correct"] = correct
        if label.refused is not None:
            refused = label.refused
        if label.reference is not None:
            meta["reference"] = label.reference
    if not isinstance(refused, bool):
        refused = bool(req.answer) and opts.refusal is not None and opts.refusal(req.answer)
        if refused:
            notes["refused"] = "the answer opens like a refusal"
    record["refused"] = refused
    record["meta"] = meta
    return Trace.from_dict(record), found


def ingest_spans(spans: Any, labels: Iterable[Label] | str | Path | None = None,
                 options: IngestOptions | None = None, **kwargs: Any) -> IngestResult:
    """Traces from spans, one per request (OpenTelemetry trace id), whatever exported them.

    ``spans``: a path or a list of paths (OTLP JSON in either key style, Phoenix span JSON
    Lines, Phoenix or MLflow frames saved as Parquet or a folder of them, MLflow
    ``Trace.to_json()`` lines), a Phoenix spans DataFrame (``get_spans_dataframe``), Phoenix span
    objects (``client.spans.get_spans()``), an MLflow ``search_traces`` DataFrame or a list of
    ``Trace`` objects, or OpenTelemetry SDK spans. ``labels``: a JSON Lines path or
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


#: The same function under the name chapter 7 and earlier code use.
ingest_openinference = ingest_spans

#: Attribute prefixes of span conventions this does not read, and what they are.
FOREIGN_CONVENTIONS = {"traceloop.": "OpenLLMetry (traceloop.*)", "gen_ai.": "OpenTelemetry GenAI (gen_ai.*)",
                       "llm.": "OpenInference-like llm.* without a span kind", "langsmith.": "LangSmith"}


def _mlflow_otel(span: Span) -> Span:
    """An MLflow span that reached us as OpenTelemetry (its attributes JSON text), read as MLflow's."""
    from .mlflow import span_from_dict

    return span_from_dict({"trace_id": span.trace_id, "span_id": span.span_id, "parent_span_id": span.parent_id,
                           "name": span.name, "start_time_unix_nano": span.start_ns,
                           "end_time_unix_nano": span.end_ns, "attributes": dict(span.attributes),
                           "status": {"code": "ERROR" if span.error is not None else "OK",
                                      "message": span.error or ""}}, {})


def _conventions(spans: list[Span]) -> str:
    seen: Counter[str] = Counter()
    for s in spans:
        if s.kind:
            continue
        for key in s.attributes:
            for prefix, name in FOREIGN_CONVENTIONS.items():
                if key.startswith(prefix):
                    seen[name] += 1
                    break
            else:
                continue
            break
    return ", ".join(f"{name} on {n} span(s)" for name, n in seen.most_common())


def _ingest(sources: list[Any], labels: Iterable[Label] | str | Path | None, opts: IngestOptions) -> IngestResult:
    read: list[str] = []
    warnings: list[str] = []
    all_spans = [s for source in sources for s in load_spans(source, read, warnings)]
    index = LabelIndex(iter_labels(labels))
    traces: list[Trace] = []
    seen: dict[tuple[str, str], str] = {}
    runs: Counter[tuple[str, str]] = Counter()
    result = IngestResult(traces, [], [], read=read, warnings=warnings)
    chunk_keys: set[str] = set()
    all_spans = [_mlflow_otel(s) if not s.kind and "mlflow.spanType" in s.attributes else s for s in all_spans]
    requests: Iterable[Request] = requests_from_spans(all_spans)
    if opts.split_runs:  # runs numbered in the order they ran
        requests = sorted(requests, key=lambda r: r.timestamp or "")
    for req in requests:
        if not req.is_request:
            result.skipped.append(req.trace_id)
            continue
        if req.incomplete:
            result.incomplete[req.trace_id] = req.incomplete
            continue
        for cand in req.candidates.values():
            chunk_keys.update(map(str, cand.metadata))
        trace, found = request_to_trace(req, index, opts)
        key = (trace.query_id, trace.pipeline)
        if key in seen:
            if not opts.split_runs:
                where = ", ".join(str(s) for s in sources if isinstance(s, (str, Path))) or "the spans"
                raise SpanError(f"{where}: requests {seen[key]} and {req.trace_id} both have query_id {key[0]!r} in "
                                f"pipeline {key[1]!r}: two runs in one export? Split them with --split-runs "
                                f"(Python: split_runs=True; the n-th run becomes pipeline '{key[1]}#n'), set "
                                f"distinct query ids or pipelines (metadata '{opts.query_id_key}', 'pipeline'), "
                                "or ingest the runs separately", field="query_id")
            runs[key] += 1
            trace = trace.replace(pipeline=f"{trace.pipeline}#{runs[key] + 1}")
        else:
            seen[key] = req.trace_id
        if not req.has_llm:
            result.without_llm.append(trace.query_id)
        if found.unlocated:
            result.unlocated.append(trace.query_id)
        if found.partial:
            result.partial.append(trace.query_id)
        traces.append(trace)
    result.unmatched_labels = index.unmatched()
    result.chunk_metadata_keys = sorted(chunk_keys)
    if all_spans and not traces and not result.incomplete:
        found = _conventions(all_spans)
        warnings.append(f"{len(all_spans)} span(s) read, but none in a convention this reads"
                        + (f" (found {found})" if found else "")
                        + ": instrument with OpenInference (openinference-instrumentation-*) or MLflow Tracing, "
                        "or export from Phoenix or MLflow")
    return result
