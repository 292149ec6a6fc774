"""One request's spans, read as stages: retrieval, reranking, the answering LLM call, errors.

Spans are grouped by OpenTelemetry trace id (one trace id = one request). Within a request:

* **retrieval**: RETRIEVER spans that list documents and wrap no other such span (a
  LlamaIndex ``retrieve`` span wraps a ``_retrieve`` span that lists none). Several of them
  (multi-query, hybrid) are all kept; when a RETRIEVER span wraps them and returns exactly
  their union, its order is the merged order ("fused"), else they are merged in the order they
  ran, first occurrence first. How is recorded in the trace's ``meta``.
* **reranking**: RERANKER spans (``reranker.output_documents``), a RETRIEVER span that wraps
  retrievers and returns fewer documents than they found (a compression retriever), and
  LlamaIndex node postprocessors (``*._postprocess_nodes`` CHAIN spans). The last to finish
  gives ``reranked``.
* **generation**: every answering LLM span's input counts as prompt text (a refine-style
  synthesis spreads the context over several calls); the one that finishes last gives the
  answer and the model. A model call inside a retriever or a ranking step (an LLM reranker's)
  belongs to that step, and an LLM span wrapping another (LlamaIndex's ``predict`` around
  ``complete``) is not the call itself: neither is the answering model. A prompt that renders
  its chunks as a Python list (escaped line breaks) is also read unescaped. An LLM span that
  only renders a template (Haystack's ``PromptBuilder``) is
  prompt assembly, not a model call: the prompt is what the model received.
* **errors**: the first span to finish with status ERROR sets the trace's ``error``, at the
  stage of its kind (``pipeline`` when only a chain span recorded it); a pasted traceback is
  cut to its exception line.
* **completeness**: a parent span missing from the export, no root span, or an LLM span with
  no retriever span makes the request *incomplete* (a parent span not in the export: an export
  cut by a limit, a run still in flight, or an instrumentor that did not export it): it is
  reported, never turned into a trace with an empty stage.
* **robustness**: exact copies of a span are read once; two different spans with one id, or a
  parent chain that loops, are errors. The tree is walked in linear time.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from operator import attrgetter
from typing import Any, Iterable, Iterator, Mapping

from . import frameworks as fw
from . import openinference as oi
from .genai import UNRECORDED
from .memo import MEMO_SIZE, IngestCache, remember
from .recover import normalise, unescaped
from .result import LLM_WITHOUT_RETRIEVER
from .spans import Span
from .stages import answering as answering_spans
from .stages import retrieval, text_ranking
from .tree import SpanTree

__all__ = ["Request", "Candidate", "group_requests", "read_request", "STAGE_OF_KIND"]

STAGE_OF_KIND = {"RETRIEVER": "retrieval", "EMBEDDING": "retrieval", "RERANKER": "reranking",
                 "LLM": "generation", "PROMPT": "prompt_assembly"}
_QUERY_KEYS = ("query", "question", "input", "user_input", "query_str")
_start_end = attrgetter("start_ns", "end_ns")  # spans in the order they ran
_POSTPROCESSORS, _TEXT_RANKERS = fw.POSTPROCESSOR_SUFFIXES, fw.TEXT_RANKER_SUFFIXES  # CHAIN span names of a step


@dataclass
class Candidate:
    """A document seen in the request: its content and metadata (first non-empty kept).

    ``normalised`` is the content :func:`~.recover.normalise`'d, once it has been needed
    (an id made from the text, prompt recovery): each passage is normalised once."""

    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    normalised: str | None = field(default=None, repr=False, compare=False)

    def normalised_content(self, memo: dict[str, tuple[str, str]] | None = None) -> str:
        if self.normalised is None:
            self.normalised = _passage(self.content, {} if memo is None else memo)[0]
        return self.normalised


@dataclass
class Request:
    """What one request's spans say, before labels and prompt recovery turn it into a trace."""

    trace_id: str
    query: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    candidates: dict[str, Candidate] = field(default_factory=dict)
    retrieved: list[tuple[str, float | None]] = field(default_factory=list)
    reranked: list[tuple[str, float | None]] | None = None
    prompt_texts: list[str] = field(default_factory=list)
    answer: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    timestamp: str | None = None
    error: dict[str, str] | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    stage_spans: int = 0  # RETRIEVER, RERANKER and LLM spans seen
    unrecorded: int = 0  # documents the retrievers returned beyond those their spans record
    incomplete: list[str] = field(default_factory=list)  # why the spans cannot stand for the request
    # the ingest's memo of passages' normalised texts (prompt recovery normalises each candidate once)
    passages: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_request(self) -> bool:
        """False for a trace id with no retriever, reranker or LLM span and no failure (indexing,
        other work). A failure recorded only on a chain span still makes a request."""
        return self.stage_spans > 0 or self.error is not None

    @property
    def has_llm(self) -> bool:
        return self.answer is not None or bool(self.prompt_texts)


def group_requests(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans by trace id, in the order each trace id was first seen."""
    groups: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        groups[span.trace_id].append(span)
    return groups


def content_id(content: str) -> str:
    """A stable id for a passage that came without one: a digest of its normalised text."""
    return _passage(content, {})[1]


def _passage(content: str, memo: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """A passage's normalised text and the id made from it, kept for the passages seen lately: the
    same chunks come back request after request, and looking one up costs less than normalising
    and hashing it (a memo of half the usual size: passages are long)."""
    known = memo.get(content)
    if known is None:
        norm = normalise(content)
        known = remember(memo, content, (norm, "h:" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]),
                         MEMO_SIZE // 2)
    return known


def _iso(ns: int, memo: dict[int, str] | None = None) -> str | None:
    """``datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)`` as ISO text to the millisecond, with Z.

    The float's microseconds are rounded half to even as ``fromtimestamp`` rounds them, and a
    second's text is kept: requests read together started within seconds of each other, and
    making a datetime and its text for each costs more than the rest of this.
    """
    if ns <= 0:
        return None
    frac, whole = math.modf(ns / 1e9)
    us = round(frac * 1e6)
    if us >= 1_000_000:
        us -= 1_000_000
        whole += 1.0
    second = int(whole)
    memo = {} if memo is None else memo
    text = memo.get(second)
    if text is None:  # the text without +00:00
        text = remember(memo, second, datetime.fromtimestamp(second, tz=timezone.utc).isoformat()[:-6])
    return f"{text}.{us // 1000:03d}Z"


def _query_from(value: Any) -> str:
    decoded = oi.json_or_none(value)
    if decoded is None:
        return "" if value is None else str(value)
    stack = [decoded]
    while stack:  # breadth-first: {"query_bundle": {"query_str": ...}} is found too
        item = stack.pop(0)
        if isinstance(item, dict):
            for key in _QUERY_KEYS:
                if isinstance(item.get(key), str):
                    return item[key]
            stack.extend(v for v in item.values() if isinstance(v, dict))
    return ""


def is_prompt_builder(span: Span) -> bool:
    """An LLM span that renders a template and calls no model (Haystack's ``PromptBuilder``, which
    the OpenInference instrumentor reports as LLM): it has a template, no messages, no model."""
    attrs = span.attributes
    return (span.kind == "LLM" and any(k.startswith("llm.prompt_template") for k in attrs)
            and "llm.model_name" not in attrs
            and not any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs))


def _error_detail(text: str) -> str:
    """The one line of an error that says what failed: the exception line of a pasted
    traceback (LangChain records the whole traceback), else the first line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback (most recent call last)"):
        return lines[-1]
    return lines[0]


def _error(req: Request, tree: SpanTree) -> None:
    failed = [s for s in tree.spans if s.error is not None]
    if not failed:
        return
    # the span that failed first, and of spans failing together, the innermost (it names the stage)
    first = min(failed, key=lambda s: (s.end_ns, -sum(1 for _ in tree.ancestors(s))))
    if is_prompt_builder(first):
        stage = "prompt_assembly"
    elif first.kind in STAGE_OF_KIND:
        stage = STAGE_OF_KIND[first.kind]
    elif first.kind in ("CHAIN", "AGENT", ""):
        stage = "pipeline"  # recorded only on the pipeline (or a chain): the component is not named
    else:
        stage = first.kind.lower()
    detail = _error_detail(first.error or "")
    req.error = {"stage": stage, "message": ": ".join([first.name, *([detail] if detail else [])])}


def _incomplete(req: Request, tree: SpanTree, retrievers: list[Span], llms: list[Span]) -> None:
    """Why this request's spans cannot stand for the whole request, if they cannot."""
    reasons = []
    if tree.missing_parents:
        reasons.append(f"{len(tree.missing_parents)} parent span(s) not in the export")
    if not tree.roots:
        reasons.append("no root span")
    if llms and not retrievers and req.error is None:
        reasons.append(LLM_WITHOUT_RETRIEVER)
    req.incomplete = reasons


class _Kinds:
    """A request's spans sorted by the part they play, in the order they started."""

    __slots__ = ("retrievers", "rerankers", "postprocessors", "text_rankers", "builders", "llms", "unrecorded")

    def __init__(self, ordered: list[Span]) -> None:
        self.retrievers: list[Span] = []
        self.rerankers: list[Span] = []
        self.postprocessors: list[Span] = []  # LlamaIndex node postprocessors (CHAIN)
        self.text_rankers: list[tuple[Span, list[str]]] = []  # CHAIN spans returning passages' texts (DSPy)
        self.builders: list[Span] = []  # LLM spans that only render a template
        self.llms: list[Span] = []
        self.unrecorded = 0  # documents the retrievers returned beyond those their spans record
        for s in ordered:
            kind = s.kind
            if kind == "RETRIEVER":
                self.retrievers.append(s)
                self.unrecorded += s.attributes.get(UNRECORDED, 0)
            elif kind == "RERANKER":
                self.rerankers.append(s)
            elif kind == "LLM":
                (self.builders if is_prompt_builder(s) else self.llms).append(s)
            elif kind == "CHAIN":
                name = s.name
                if name.endswith(_POSTPROCESSORS):
                    self.postprocessors.append(s)
                elif name.endswith(_TEXT_RANKERS) and (texts := fw.ranked_texts(s)) is not None:
                    self.text_rankers.append((s, texts))


_Groups = dict[str, "oi.AttributeGroups | None"]  # span id -> its attributes, read once
_Ranked = list[tuple[str, "float | None"]]  # (document id, score) in rank order


def _read_metadata(req: Request, ordered: list[Span], cache: IngestCache) -> _Groups:
    """Every span's attribute groups, and the request's metadata from them (the root's first)."""
    groups: _Groups = {}
    for s in ordered:
        groups[s.span_id] = read = oi.attribute_groups(s.attributes, cache)
        if read is None or read.metadata or "metadata" in s.attributes:  # else it has none
            for k, v in oi.metadata(s, read).items():
                req.metadata.setdefault(k, v)
    return groups


def _ranked_lists(req: Request, kinds: _Kinds, groups: _Groups, cache: IngestCache) -> dict[str, _Ranked | None]:
    """Each retriever's and reranker's documents as ``(id, score)`` (None: it lists none), every
    document made a candidate once (an id made from its text when it has none: hashing is not free)."""
    docs = {s.span_id: oi.documents(s, groups=groups[s.span_id], cache=cache) for s in kinds.retrievers}
    for s in kinds.rerankers:
        docs[s.span_id] = oi.documents(s, "reranker.output_documents", groups[s.span_id], cache)
        docs[s.span_id + ":in"] = oi.documents(s, "reranker.input_documents", groups[s.span_id], cache)
    lists: dict[str, _Ranked | None] = {}
    passages, candidates = cache.passages, req.candidates
    for key, listing in docs.items():
        if listing is None:
            lists[key] = None
            continue
        pairs = []
        for d in listing:
            cid, norm = d.id, None
            if cid is None:
                norm, cid = _passage(d.content, passages)
            pairs.append((cid, d.score))
            cand = candidates.get(cid)
            if cand is None:  # first seen: what this document gives, as the updates below would set it
                candidates[cid] = Candidate(d.content, d.metadata or {}, norm if d.content else None)
                continue
            if not cand.content and d.content:
                cand.content, cand.normalised = d.content, norm
            if not cand.metadata and d.metadata:
                cand.metadata = d.metadata
        lists[key] = pairs
    return lists


def _rank(req: Request, tree: SpanTree, kinds: _Kinds, lists: dict[str, _Ranked | None]) -> None:
    """``retrieved`` from the retrievers; ``reranked`` from the last ranking step to finish."""
    stages: list[tuple[Span, _Ranked]] = retrieval(req, tree, kinds.retrievers, lists)
    stages += [(s, list(lists[s.span_id] or ())) for s in kinds.rerankers]
    for s in kinds.postprocessors:
        ids = oi.postprocessor_ids(s)
        if ids is not None:
            scores = dict(req.retrieved)
            stages.append((s, [(i, scores.get(i)) for i in ids]))
    stages += text_ranking(req, tree, kinds.retrievers, kinds.text_rankers)
    if stages:
        last, ranked = max(stages, key=lambda pair: pair[0].end_ns)
        req.reranked = ranked
        kind = last.kind.lower() or "span"
        req.notes["reranking"] = f"'{last.name}' ({kind}), the last of {len(stages)} ranking step(s)"


def _prompt_and_answer(req: Request, tree: SpanTree, kinds: _Kinds, groups: _Groups) -> None:
    """The prompt the answering model received, its answer and its model."""
    steps = kinds.retrievers + kinds.rerankers + kinds.postprocessors
    if kinds.text_rankers:
        steps += [s for s, _ in kinds.text_rankers]
    answering = answering_spans(req, tree, kinds.llms, steps)
    for s in answering:  # the prompt is what the model received, not what a template was given
        text = oi.prompt_text(s, groups[s.span_id])
        if text:
            req.prompt_texts.append(text)
            plain = unescaped(text)  # chunks rendered as a Python list: their line breaks escaped
            if plain is not None:
                req.prompt_texts.append(plain)
    builders = kinds.builders
    if not req.prompt_texts:  # no model call logged its input: the rendered prompt, if a builder logged it
        req.prompt_texts = [t for s in builders if (t := oi.answer_text(s, groups[s.span_id]))]
    if builders:
        req.notes["prompt"] = (f"{len(builders)} prompt-builder span(s) {[s.name for s in builders][:3]} read as "
                               "prompt assembly, not as a model call")
    answers = [(s, answer) for s in answering if (answer := oi.answer_text(s, groups[s.span_id])) is not None]
    if answers:
        last, answer = max(answers, key=lambda pair: pair[0].end_ns)
        req.answer = fw.field_answer(answer)  # DSPy's [[ ## answer ## ]] field, not the whole output
        req.model = (last.attributes.get("llm.model_name")
                     or oi.metadata(last, groups[last.span_id]).get("ls_model_name"))
        req.notes["answer"] = f"'{last.name}', the last of {len(answering)} LLM span(s) to finish"


def _query_and_version(req: Request, tree: SpanTree, ordered: list[Span], retrievers: list[Span],
                       query_key: str) -> None:
    """The question (metadata, else a root's or a retriever's input) and the prompt version."""
    if isinstance(req.metadata.get(query_key), str):
        req.query = req.metadata[query_key]
    else:
        roots = [s for s in ordered if s.parent_id is None or s.parent_id not in tree.by_id]
        for s in roots + retrievers:
            req.query = _query_from(s.attributes.get("input.value"))
            if req.query:
                break
    version = req.metadata.get("prompt_version")
    if version is None:
        version = next((s.attributes["llm.prompt_template.version"] for s in ordered
                        if "llm.prompt_template.version" in s.attributes), None)
    req.prompt_version = None if version is None else str(version)


def read_request(trace_id: str, spans: list[Span], query_key: str = "query",
                 cache: IngestCache | None = None) -> Request:
    """Read one request's spans (see the module docstring for the rules); ``cache``: the memos of
    the ingest it belongs to (a fresh one when not given)."""
    cache = IngestCache() if cache is None else cache
    req = Request(trace_id=trace_id, passages=cache.passages)
    tree = SpanTree(trace_id, spans)
    if tree.copies:
        req.notes["copies"] = f"{tree.copies} exact copies of spans read once"
    ordered = sorted(tree.spans, key=_start_end)
    groups = _read_metadata(req, ordered, cache)
    kinds = _Kinds(ordered)
    req.stage_spans = len(kinds.retrievers) + len(kinds.rerankers) + len(kinds.builders) + len(kinds.llms)
    req.unrecorded = kinds.unrecorded
    _rank(req, tree, kinds, _ranked_lists(req, kinds, groups, cache))
    _prompt_and_answer(req, tree, kinds, groups)
    _query_and_version(req, tree, ordered, kinds.retrievers, query_key)
    req.timestamp = _iso(ordered[0].start_ns if ordered else 0, cache.seconds)  # the earliest start
    _error(req, tree)
    _incomplete(req, tree, kinds.retrievers, kinds.llms + kinds.builders)
    return req


def requests_from_spans(spans: Iterable[Span], query_key: str = "query") -> Iterator[Request]:
    """One :class:`Request` per trace id."""
    for trace_id, group in group_requests(spans).items():
        yield read_request(trace_id, group, query_key)


def candidate_contents(req: Request, normalised: bool = False) -> Mapping[str, str]:
    """``id -> content`` of every candidate with content (what prompt recovery searches for);
    ``normalised=True``: each content :func:`~.recover.normalise`'d."""
    if normalised:  # a candidate's normalised text is usually there already (its id was made from it)
        return {cid: c.normalised if c.normalised is not None else c.normalised_content(req.passages)
                for cid, c in req.candidates.items() if c.content}
    return {cid: c.content for cid, c in req.candidates.items() if c.content}
