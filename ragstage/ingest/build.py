"""Spans to traces: what one request becomes, and the options that say how.

:func:`request_to_trace` turns one request's stages (:mod:`.requests`) into a documented
trace: the prompt ids recovered from the prompt text when the application did not log them
(:mod:`.recover`), the chunks made gold from document and span labels (:mod:`.gold`) or from
sentences copied from the evidence (:mod:`.quote`), the answer judged and read for a refusal.
Each trace says in ``meta.ingest`` how its lists were obtained; what a request's label could not
find (a chunk located nowhere, a gold span reaching the prompt in part) comes back as
:class:`Found`, which :mod:`.accounts` counts into the :class:`~.result.IngestResult`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from ..trace import Trace
from .gold import ChunkKeys, Label, LabelIndex, gold_ids, locatable, locate, span_coverage
from .quote import quoted_ids
from .recover import MIN_FRAGMENT, normalise, recover_prompt_ids
from .requests import Request, candidate_contents

__all__ = ["IngestOptions", "request_to_trace", "Found", "judge_contains", "looks_like_refusal", "text_query_id"]


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
    unrecorded: bool = False  # the gold may be among documents the export did not record
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
        if req.unrecorded and not found.unlocated and not set(gold) & {cid for cid, _ in req.retrieved}:
            found.unrecorded = True
            notes["gold"] = (f"no gold among the {len(req.retrieved)} retrieved document(s) the export records, and "
                             f"the retriever returned {req.unrecorded} more that it does not{where_label}: the "
                             "stage cannot be observed: written with no gold (label_missing), never as a retrieval "
                             "loss")
        # unlocated or unrecorded: every list would look as if it lost the label's targets
        record["gold"] = [] if found.unlocated or found.unrecorded else list(gold or label.targets)
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
