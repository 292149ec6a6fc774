"""Gold on document and character span, so labels survive re-chunking.

Chunk ids change whenever chunking changes (*Which RAG component broke?*: label gold on
document and span, not chunk id); a document id and a character range do not. A label names
documents (``gold``) and/or spans of them (``gold_spans``: ``{"id", "start", "end"}``, end
exclusive, offsets in the source document). A retrieved chunk is gold when its own span (read
from its metadata: source document, start offset, end offset or start plus its length)
overlaps a gold span, or when its document (or its own id) is a gold document.

A gold span can straddle two chunks. Retrieval counts a chunk as a hit when it overlaps the
span; the prompt holds the evidence only when the chunks in it cover the whole span (the
article's context-assembly test: "does the final prompt text contain the gold span").
:func:`span_coverage` measures that.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import orjson

from ..trace import read_json_lines
from .labels_typed import label_values
from .spans import SpanError

__all__ = ["Label", "ChunkKeys", "read_labels", "parse_label", "locate", "gold_ids", "LabelIndex",
           "locate_llamaindex_nodes", "span_coverage", "locatable", "JudgeInfo", "NO_RELEVANT"]

_LABEL_KEYS = frozenset({"query_id", "query", "gold", "gold_spans", "gold_text", "answerable", "correct", "refused",
                         "reference", "judge"})
_JUDGE_KEYS = ("name", "model", "prompt", "prompt_sha256")

#: The target a silver label without gold stands for: the judge found no relevant candidate, so the
#: evidence (if any) is outside what was retrieved, and the request is a silver ``retrieval`` loss.
NO_RELEVANT = "judge:no-relevant-candidate"


@dataclass(frozen=True)
class JudgeInfo:
    """Which judge made a silver label: its name, its model (id or stand-in label), its prompt
    template's id and the sha256 of the template's text. A label without one is a person's."""

    name: str
    model: str
    prompt: str
    prompt_sha256: str

    def to_json(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in _JUDGE_KEYS}

    def meta(self) -> dict[str, str]:
        """The value of a silver trace's ``meta["labels"]``."""
        return {"by": "judge", "judge": self.name, "model": self.model, "prompt": self.prompt,
                "prompt_sha256": self.prompt_sha256}


@dataclass(frozen=True)
class Label:
    """One question's label. ``line`` is where it was read (for messages)."""

    query_id: str | None = None
    query: str | None = None
    gold: tuple[str, ...] = ()
    gold_spans: tuple[tuple[str, int, int], ...] = ()
    answerable: bool | None = None
    correct: bool | None = None
    refused: bool | None = None
    reference: str | None = None
    line: int | None = None
    path: str | None = None
    #: Sentences copied from the gold evidence: a chunk holding one (whitespace aside) is gold. The
    #: label for a stack whose chunks carry no location (DSPy's ``Retrieve`` exports only the text).
    gold_text: tuple[str, ...] = ()
    #: The judge that made this label (a silver label), or None for a person's.
    judge: JudgeInfo | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        """What the label points at, as ids: ``doc`` for a document, ``doc#start-end`` for a span.

        These stand in as the trace's gold when no candidate matched, so a question whose
        evidence was never retrieved lands in ``retrieval``, not in ``label_missing``. A silver
        label that names nothing (its judge found no relevant candidate) and is not marked
        unanswerable points at :data:`NO_RELEVANT`: a silver ``retrieval`` loss.
        """
        out = (self.gold + tuple(f"{d}#{s}-{e}" for d, s, e in self.gold_spans)
               + tuple(f"text:{t}" for t in self.gold_text))
        if not out and self.judge is not None and self.answerable is not False:
            return (NO_RELEVANT,)
        return out


@dataclass(frozen=True)
class ChunkKeys:
    """Metadata keys that locate a chunk in its source document (first key present wins).

    Defaults cover LangChain (``source``, ``start_index`` from a splitter with
    ``add_start_index=True``), Haystack's ``DocumentSplitter`` (``source_id``, the parent
    document's id, and ``split_idx_start``) and LlamaIndex nodes whose ``ref_doc_id``, ``start_char_idx`` and
    ``end_char_idx`` were copied into metadata (see :func:`ragstage.ingest.locate_llamaindex_nodes`).
    """

    doc: Sequence[str] = ("source", "ref_doc_id", "doc_id", "document_id", "source_id")
    start: Sequence[str] = ("start_index", "start_char_idx", "split_idx_start")
    end: Sequence[str] = ("end_index", "end_char_idx")


def _first(meta: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        value = meta.get(key)
        if value is not None:
            return value
    return None


def locate(meta: Mapping[str, Any], content: str, keys: ChunkKeys) -> tuple[str | None, int | None, int | None]:
    """``(document id, start, end)`` of a chunk from its metadata; parts unknown are None."""
    doc = _first(meta, keys.doc)
    start, end = _first(meta, keys.start), _first(meta, keys.end)
    start = start if isinstance(start, int) and not isinstance(start, bool) else None
    end = end if isinstance(end, int) and not isinstance(end, bool) else None
    if start is not None and end is None:
        end = start + len(content)
    return (None if doc is None else str(doc)), start, end


def gold_ids(label: Label, chunks: Mapping[str, tuple[str | None, int | None, int | None]]) -> tuple[str, ...]:
    """The chunk ids (``id -> (doc, start, end)``) the label makes gold, in the given order."""
    docs = set(label.gold)
    spans: dict[str, list[tuple[int, int]]] = {}
    for d, s, e in label.gold_spans:
        spans.setdefault(d, []).append((s, e))
    out = []
    for cid, (doc, start, end) in chunks.items():
        if cid in docs or (doc is not None and doc in docs):
            out.append(cid)
        elif doc in spans and start is not None and end is not None:
            if any(start < e and s < end for s, e in spans[doc]):
                out.append(cid)
    return tuple(out)


def span_coverage(label: Label, chunks: Mapping[str, tuple[str | None, int | None, int | None]],
                  ids: Iterable[str]) -> list[tuple[tuple[str, int, int], int]]:
    """For each gold span of the label: the characters of it that the chunks ``ids`` cover
    together (their union, with the separator a splitter drops between two neighbouring chunks
    counted as covered), from the chunks' located ``(doc, start, end)``."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for cid in ids:
        doc, start, end = chunks.get(cid, (None, None, None))
        if doc is not None and start is not None and end is not None:
            ranges.setdefault(doc, []).append((start, end))
    out = []
    for d, s, e in label.gold_spans:
        covered, reach = 0, s
        for a, b in _joined(sorted(ranges.get(d, ()))):
            a, b = max(a, reach), min(b, e)
            if b > a:
                covered += b - a
                reach = b
        out.append(((d, s, e), covered))
    return out


#: Characters between two chunks that a splitter drops (the separator: a space, a newline).
SEPARATOR_GAP = 2


def _joined(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ranges with the separator gaps between neighbours closed."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out and a - out[-1][1] <= SEPARATOR_GAP:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def locatable(label: Label, chunks: Mapping[str, tuple[str | None, int | None, int | None]]) -> bool:
    """Whether the chunks' metadata says enough to test this label at all: a chunk id or a
    located document for document labels, a located document with offsets for span labels.
    False means the chunk keys are wrong (or absent), not that retrieval missed."""
    if not label.gold and not label.gold_spans:
        return True
    if label.gold and any(cid in label.gold or doc is not None for cid, (doc, _, _) in chunks.items()):
        return True
    return bool(label.gold_spans) and any(doc is not None and start is not None and end is not None
                                          for doc, start, end in chunks.values())


def _fail(msg: str, name: str) -> SpanError:
    return SpanError(msg, field=name)


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise _fail(f"expected a list of document ids, got {value!r:.60}", name)
    return tuple(str(v) for v in value)


_SPAN_KEYS = frozenset({"id", "start", "end"})


def _spans(value: Any) -> tuple[tuple[str, int, int], ...]:
    if not isinstance(value, list):
        raise _fail(f"expected a list of {{\"id\", \"start\", \"end\"}} objects, got {value!r:.60}", "gold_spans")
    out = []
    for item in value:
        if not isinstance(item, dict) or item.keys() != _SPAN_KEYS:
            raise _fail(f"each span must be exactly {{\"id\", \"start\", \"end\"}}, got {item!r:.60}", "gold_spans")
        s, e = item["start"], item["end"]
        if not (isinstance(s, int) and not isinstance(s, bool) and isinstance(e, int) and not isinstance(e, bool)
                and 0 <= s < e):
            raise _fail(f"start and end must be integers with 0 <= start < end, got {s!r}, {e!r}", "gold_spans")
        if isinstance(item["id"], bool) or not isinstance(item["id"], (str, int)):
            raise _fail(f"a span's id must be a document id (a string), got {item['id']!r:.40}", "gold_spans")
        out.append((str(item["id"]), s, e))
    return tuple(out)


def _opt_bool(record: Mapping[str, Any], name: str) -> bool | None:
    value = record.get(name)
    if value is not None and type(value) is not bool:
        raise _fail(f"expected true, false or null, got {value!r:.40}", name)
    return value


def _list_or_null(record: Mapping[str, Any], name: str) -> Any:
    """A list field: null or absent is empty; anything else is checked as given (``false`` is no list)."""
    value = record.get(name)
    return [] if value is None else value


def _judge(value: Any) -> JudgeInfo:
    if not isinstance(value, dict) or set(value) != set(_JUDGE_KEYS):
        raise _fail(f"expected an object with exactly {', '.join(_JUDGE_KEYS)}, got {value!r:.80}", "judge")
    for key in _JUDGE_KEYS:
        if not isinstance(value[key], str) or not value[key]:
            raise _fail(f"'{key}': expected a non-empty string, got {value[key]!r:.40}", "judge")
    return JudgeInfo(*(value[k] for k in _JUDGE_KEYS))


def parse_label(record: Any) -> Label:
    """Check one decoded label object (unknown keys are errors: a typo must not drop a label)."""
    if not isinstance(record, dict):
        raise SpanError(f"a label must be a JSON object, got {type(record).__name__}")
    if not _LABEL_KEYS.issuperset(record):
        unknown = sorted(set(record) - _LABEL_KEYS)
        raise _fail(f"unknown key(s) {unknown} (known: {', '.join(sorted(_LABEL_KEYS))})", unknown[0])
    qid, query = record.get("query_id"), record.get("query")
    if qid is None and not query:
        raise _fail("a label needs a query_id or a query to match a request", "query_id")
    if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int))):
        raise _fail(f"expected a string, got {qid!r:.40}", "query_id")
    if query is not None and not isinstance(query, str):
        raise _fail("expected a string", "query")
    reference = record.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise _fail("expected a string", "reference")
    gold = record.get("gold")  # null, absent and [] are no gold; anything else is checked
    return Label(
        query_id=None if qid is None else str(qid),
        query=query,
        gold=() if gold is None or (type(gold) is list and not gold) else _str_list(gold, "gold"),
        gold_spans=_spans(_list_or_null(record, "gold_spans")),
        answerable=_opt_bool(record, "answerable") if "answerable" in record else None,
        correct=_opt_bool(record, "correct") if "correct" in record else None,
        refused=_opt_bool(record, "refused") if "refused" in record else None,
        reference=reference,
        gold_text=_texts(_list_or_null(record, "gold_text")),
        judge=_judge(record["judge"]) if "judge" in record else None,
    )


def _texts(value: Any) -> tuple[str, ...]:
    """Quoted sentences: a list of non-blank strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(f"expected a list of non-blank sentences, got {value!r:.60}", "gold_text")
    return tuple(value)


_new = object.__new__


def new_label(query_id: str | None, query: str | None, gold: tuple[str, ...],
              gold_spans: tuple[tuple[str, int, int], ...], answerable: bool | None, correct: bool | None,
              refused: bool | None, reference: str | None, line: int | None = None,
              path: str | None = None) -> Label:
    """``Label(...)`` of checked values, for a file of many labels: the frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, a third of reading a label."""
    label = _new(Label)
    fields = label.__dict__
    fields["query_id"], fields["query"], fields["gold"], fields["gold_spans"] = query_id, query, gold, gold_spans
    fields["answerable"], fields["correct"], fields["refused"] = answerable, correct, refused
    fields["reference"], fields["line"], fields["path"], fields["gold_text"] = reference, line, path, ()
    fields["judge"] = None  # a line with a judge is read by parse_label
    return label


def _decode_label(line: bytes) -> Any:
    """A label line decoded: the label when the line is in the usual shape (:mod:`.labels_typed`),
    else its JSON value, which :func:`parse_label` checks (and names the fault of)."""
    values = label_values(line)
    return orjson.loads(line) if values is None else new_label(*values)


def _label(value: Any) -> Label:
    return value if type(value) is Label else parse_label(value)


def read_labels(path: str | Path) -> list[Label]:
    """Labels from a JSON Lines file; an error names the file, the line and the key."""
    out = []
    where = str(path)
    for lineno, label in read_json_lines(path, _label, SpanError, decode=_decode_label):
        # each label is new and not yet seen by anyone: where it was read is set in place, as a
        # frozen dataclass sets its own fields (building a second one costs as much as the parse)
        fields = label.__dict__
        fields["line"], fields["path"] = lineno, where
        out.append(label)
    _one_kind(out)
    return out


def _one_kind(labels: list[Label]) -> None:
    """A file is a judge's or people's: mixed, its rates would be neither (the first odd line is named)."""
    if labels and any((label.judge is None) != (labels[0].judge is None) for label in labels):
        other = next(label for label in labels if (label.judge is None) != (labels[0].judge is None))
        first = "a judge's" if labels[0].judge is not None else "a person's (no judge)"
        raise SpanError(f"line {labels[0].line} is {first} label but this one is not: a labels file holds a judge's "
                        "labels or people's, not both (split it)", path=other.path, line=other.line, field="judge")


class LabelIndex:
    """Labels looked up by query id, else by the exact (whitespace-normalised) query text."""

    def __init__(self, labels: Iterable[Label]) -> None:
        from .recover import normalise

        self._normalise = normalise
        self.labels = list(labels)
        self.by_id: dict[str, Label] = {}
        self.by_text: dict[str, Label] = {}
        for label in self.labels:
            if label.query_id is not None:
                if label.query_id in self.by_id:
                    raise SpanError(f"query_id {label.query_id!r} labelled twice (lines "
                                    f"{self.by_id[label.query_id].line} and {label.line})", path=label.path,
                                    line=label.line, field="query_id")
                self.by_id[label.query_id] = label
            if label.query:
                self.by_text.setdefault(normalise(label.query), label)
        self.used: set[int] = set()

    def match(self, query_id: str | None, query: str) -> Label | None:
        """The label for a request, remembering it was used (see :meth:`unmatched`)."""
        label = self.by_id.get(query_id) if query_id is not None else None
        if label is None and query:
            label = self.by_text.get(self._normalise(query))
        if label is not None:
            self.used.add(id(label))
        return label

    def unmatched(self) -> list[Label]:
        """Labels no request matched: reported, never silently dropped."""
        return [label for label in self.labels if id(label) not in self.used]


def iter_labels(labels: Iterable[Label] | str | Path | None) -> Iterator[Label]:
    """Labels from a path, or passed through."""
    if labels is None:
        return iter(())
    if isinstance(labels, (str, Path)):
        return iter(read_labels(labels))
    return iter(labels)


_LLAMAINDEX_KEYS = ("ref_doc_id", "start_char_idx", "end_char_idx")


def locate_llamaindex_nodes(nodes: Iterable[Any]) -> list[Any]:
    """Copy each LlamaIndex node's source document id and character offsets into its metadata.

    The OpenInference LlamaIndex instrumentor exports a node's ``metadata`` but not its
    ``ref_doc_id`` or ``start_char_idx``/``end_char_idx``, so without this a span cannot say
    where a chunk came from. The keys are kept out of the text the LLM and the embedder see.
    Returns the nodes (changed in place).
    """
    out = []
    for node in nodes:
        node.metadata.update({"ref_doc_id": node.ref_doc_id, "start_char_idx": node.start_char_idx,
                              "end_char_idx": node.end_char_idx})
        for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
            keys.extend(k for k in _LLAMAINDEX_KEYS if k not in keys)
        out.append(node)
    return out
