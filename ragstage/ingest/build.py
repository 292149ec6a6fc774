"""Spans to traces: what one request becomes, and the result of an ingest.

:func:`request_to_trace` turns one request's stages (:mod:`.requests`) into a documented
trace: the prompt ids recovered from the prompt text when the application did not log them
(:mod:`.recover`), the chunks made gold from document and span labels (:mod:`.gold`).
:func:`load_spans` reads spans from any export :mod:`.formats` recognises (OTLP JSON, Phoenix
span JSON Lines or frames, MLflow traces) or from the objects those tools hand you (Phoenix
and MLflow DataFrames, MLflow ``Trace`` lists, Phoenix span lists, OpenTelemetry SDK spans).
:mod:`.flow` runs the whole ingest (``ingest_spans``) and fills :class:`IngestResult`.

Nothing is dropped or guessed silently: labels that matched no request, labels whose chunks
cannot be located with the chunk keys (with the metadata keys seen), incomplete requests
(never written with an empty stage), spans in a convention this does not read, requests
with no LLM span, and a gold span that reached the prompt only in part are all counted in
the result and its summary, and each trace says in ``meta.ingest`` how its lists were obtained.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..trace import Trace, write_traces
from .gold import ChunkKeys, Label, LabelIndex, gold_ids, locatable, locate, span_coverage
from .quote import quoted_ids
from .recover import MIN_FRAGMENT, normalise, recover_prompt_ids
from .requests import Request, candidate_contents
from .spans import Span, SpanError, from_sdk_spans

__all__ = ["IngestOptions", "IngestResult", "load_spans", "path_reader", "read_note", "request_to_trace", "Found",
           "judge_contains", "looks_like_refusal", "text_query_id"]


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
class _TraceCounts:
    """What :meth:`IngestResult.summary` needs of the traces, gathered as they go by."""

    n: int = 0
    by_source: Counter[str] = field(default_factory=Counter)  # prompt_source (or "not logged") -> traces
    truncated: list[str] = field(default_factory=list)  # query ids of traces with a truncated passage
    labelled: int = 0  # traces with gold

    def add(self, trace: Trace) -> None:
        self.n += 1
        self.by_source[trace.prompt_source or "not logged"] += 1
        if trace.truncated:
            self.truncated.append(trace.query_id)
        if trace.gold:
            self.labelled += 1

    def merge(self, other: "_TraceCounts") -> None:
        """Add the counts of traces gathered elsewhere (a part of the input read by another process)."""
        self.n += other.n
        self.by_source.update(other.by_source)
        self.truncated += other.truncated
        self.labelled += other.labelled


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
    written: int | None = None  # traces written straight to a file (ingest_spans_to), not kept in `traces`
    conventions: Counter[str] = field(default_factory=Counter)  # spans by the convention read ("(not read)")
    # every trace ingest produced, counted as it went by (the traces themselves may go to a file)
    counts: _TraceCounts = field(default_factory=_TraceCounts, repr=False, compare=False)

    def merge(self, part: "IngestResult") -> None:
        """Add what reading a later part of the same input found (its traces went to a file)."""
        self.without_llm += part.without_llm
        self.skipped += part.skipped
        self.incomplete.update(part.incomplete)
        self.unlocated += part.unlocated
        self.partial += part.partial
        self.warnings += part.warnings
        self.counts.merge(part.counts)

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
        counts = self.counts
        lines = [f"read {r}" for r in self.read]
        if self.conventions:
            by = self.conventions.most_common()
            lines.append("spans by convention: " + ", ".join(f"{n} {name}" for name, n in by))
        lines.append(f"{counts.n} trace(s)")
        lines.append("prompt ids: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.by_source.items())))
        partial = set(self.partial)
        truncated = sum(1 for query_id in counts.truncated if query_id not in partial)
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
                         + "): a parent span not in the export (an export cut by a limit, a run still in flight, "
                         "or an instrumentor that did not export it): " + _some(list(self.incomplete)))
        if self.skipped:
            lines.append(f"{len(self.skipped)} trace id(s) skipped: no retriever, reranker or LLM span "
                         "(indexing or other work, not a request)")
        if self.unmatched_labels:
            shown = [f"{lb.query_id or lb.query!r} (line {lb.line})" for lb in self.unmatched_labels]
            lines.append(f"{len(self.unmatched_labels)} label(s) matched no request: " + _some(shown))
        if self.unlocated:
            n_labelled = counts.labelled
            keys = ", ".join(self.chunk_metadata_keys) or "none"
            lines.append(f"{len(self.unlocated)} of {n_labelled + len(self.unlocated)} labelled request(s) have no "
                         "chunk the chunk keys locate, so their stage cannot be observed: written as label_missing, "
                         f"not as a retrieval loss; chunk metadata keys: {keys} (pass --doc-key/--start-key/--end-key, "
                         "Python: chunk_keys=ChunkKeys(...)): " + _some(self.unlocated))
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _some(items: list[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (" ..." if len(items) > k else "")


def path_reader(path: str | Path, found: Any) -> Callable[[Path], Iterable[Span]]:
    """The reader of a file in the detected format ``found``."""
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
    return reader


def _open_path(path: str | Path, read: list[str], warnings: list[str]) -> Iterator[Span]:
    """The spans of one file or folder, its format detected from the content (read once)."""
    from .formats import detect, regular_file

    with regular_file(path) as real:
        found = detect(real)
        n = 0
        for span in path_reader(path, found)(real):
            n += 1
            yield span
        read_note(path, found, n, read, warnings)


def read_note(path: str | Path, found: Any, n: int, read: list[str], warnings: list[str]) -> None:
    """Say what a file held, once it is read (and warn of a Phoenix pull cut at the client's limit)."""
    read.append(f"{path}: {found}, {n} span(s)")
    if found.name == "phoenix-parquet":  # a client pull saved as it came
        from .phoenix import limit_note

        note = limit_note(n)
        if note:
            warnings.append(f"{path}: {note}")


def _objects(source: Any, read: list[str], warnings: list[str]) -> Iterator[Span]:
    """Spans from an object a tool hands you (see :func:`ingest_spans`)."""
    if type(source).__name__ == "DataFrame":
        columns = set(source.columns)
        if "context.span_id" in columns or source.index.name in ("context.span_id", "span_id"):
            from .phoenix import from_phoenix, limit_note

            note = limit_note(len(source))
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
        from .phoenix import LIST_LIMIT, limit_note, span_object

        note = limit_note(len(items), "get_spans", LIST_LIMIT)
        if note:
            warnings.append(note)
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
        return _open_path(source, read, warnings)
    return _objects(source, read, warnings)


def _columns(record: dict[str, Any], stage: str, entries: list[tuple[str, float | None]],
             sections: list[str | None]) -> None:
    """Put a ranked list in ``record`` as the columns a Trace holds (``<stage>``, ``<stage>_scores``,
    ``<stage>_sections``): whatever score and section the spans gave (a section without a score is
    kept); scores (sections) None when the spans gave none. Columns are checked as entries would
    be (:meth:`~ragstage.trace.Trace.from_row`) without building an entry per chunk."""
    scores = [score for _, score in entries]
    record[stage] = [cid for cid, _ in entries]
    record[f"{stage}_scores"] = scores if any(score is not None for score in scores) else None
    record[f"{stage}_sections"] = sections if any(s is not None for s in sections) else None


def _sections(req: Request, ranked: list[tuple[str, float | None]], keys: tuple[str, ...]) -> list[str | None]:
    """Each ranked chunk's section: the first of ``keys`` its metadata holds as a string (one
    call for the list: this runs for every ranked chunk)."""
    candidates = req.candidates
    out: list[str | None] = []
    for cid, _ in ranked:
        cand = candidates.get(cid)
        meta = cand.metadata if cand is not None else {}
        section = None
        for k in keys:
            value = meta.get(k)
            if isinstance(value, str):
                section = value
                break
        out.append(section)
    return out


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
class Found:
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


def request_to_trace(req: Request, labels: LabelIndex, opts: IngestOptions) -> tuple[Trace, Found]:
    """One trace from one request (see :func:`ingest_spans`), and what its label found."""
    found = Found()
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
    _columns(record, "retrieved", req.retrieved, _sections(req, req.retrieved, opts.section_keys))
    if req.reranked is not None:
        _columns(record, "reranked", req.reranked, _sections(req, req.reranked, opts.section_keys))
    record["prompt"], record["prompt_source"], record["truncated"] = _prompt(req, opts)
    meta: dict[str, Any] = {"ingest": notes}
    if label is not None:
        where = {cid: locate(c.metadata, c.content, opts.chunk_keys) for cid, c in req.candidates.items()}
        gold = gold_ids(label, where)
        contents = candidate_contents(req, normalised=True) if label.gold_text else {}
        if contents:  # sentences copied from the evidence: found in the chunks' own text
            gold = tuple(dict.fromkeys([*gold, *quoted_ids(label.gold_text, contents)]))
        where_label = f" (labels line {label.line})" if label.line is not None else ""
        if gold:
            notes["gold"] = f"{len(gold)} candidate chunk(s) matched the label{where_label}"
        elif where and not contents and not locatable(label, where):
            found.unlocated = True
            notes["gold"] = (f"no candidate could be located{where_label}: the chunk keys find no document or "
                             "offsets in the chunks' metadata, so no stage can be shown to have lost or kept the "
                             "evidence: written with no gold (label_missing), never as a retrieval loss")
        else:
            notes["gold"] = f"no candidate matched the label{where_label}: gold is the label's own targets"
        # unlocated: the label's targets are no chunk's id, and every list would look as if it lost them
        record["gold"] = [] if found.unlocated else list(gold or label.targets)
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
    return Trace.from_row(record), found
