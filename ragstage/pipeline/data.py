"""BEIR-format corpora: read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

BEIR is the format SciFact ships in, and the one the mini corpus under ``fixtures/`` copies,
so one reader serves both. Bad input stops with an error that names the file, the line and
the field: a silently skipped line would quietly change every rate computed downstream.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TypeVar

import orjson

from ..trace import iter_json_lines

__all__ = ["BeirData", "Corpus", "DataError", "Document", "Qrels", "doc_text", "hash_corpus", "load_beir"]

T = TypeVar("T")

#: One abstract: ``{"title": ..., "text": ...}`` (a missing title reads as "").
Document = Mapping[str, str]
#: Document id → document, in corpus order (the order ties are broken in).
Corpus = Mapping[str, Document]
#: Query id → {document id: relevance}; only relevance > 0 is kept, so every listed id is gold.
Qrels = Mapping[str, Mapping[str, int]]


class DataError(ValueError):
    """A corpus, query or qrels file that cannot be read as BEIR. Names file, line and field."""

    def __init__(self, message: str, *, path: str | Path, line: int | None = None,
                 field: str | None = None) -> None:
        where = [str(path)]
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}")


@dataclass(frozen=True)
class BeirData:
    """One split of a BEIR dataset.

    ``corpus`` maps a document id to ``{"title", "text"}``, ``queries`` maps a query id to
    its text, ``qrels`` maps a query id to ``{doc id: relevance}`` (only relevance > 0).
    ``queries`` holds only the queries judged in this split, in file order, so a run over
    ``queries`` is a run over the split.
    """

    corpus: Corpus
    queries: Mapping[str, str]
    qrels: Qrels
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def corpus_hash(self) -> str:
        """See :func:`hash_corpus`."""
        return hash_corpus(self.corpus)

    def limit(self, n: int | None) -> "BeirData":
        """The first ``n`` queries (file order) with their qrels; the whole corpus is kept."""
        if n is None:
            return self
        if n < 1:
            raise ValueError(f"limit must be at least 1, got {n}")
        keep = list(self.queries)[:n]
        return BeirData(self.corpus, {q: self.queries[q] for q in keep},
                        {q: self.qrels[q] for q in keep}, self.source, dict(self.meta))


def hash_corpus(corpus: Corpus) -> str:
    """sha256 over the corpus content (ids, titles, texts) in id order.

    Caches of embeddings and retrieval results are keyed by it, so editing one abstract
    of a fixture invalidates them instead of serving stale vectors.
    """
    digest = hashlib.sha256()
    for doc_id in sorted(corpus):
        doc = corpus[doc_id]
        digest.update(orjson.dumps([doc_id, doc.get("title", ""), doc["text"]]))
        digest.update(b"\n")
    return digest.hexdigest()


def doc_text(doc: Document) -> str:
    """The text every retriever and reranker sees: ``title + " " + text``."""
    return f"{doc.get('title', '')} {doc['text']}".strip()


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise DataError(f"cannot open ({exc.strerror or exc})", path=path) from None
    with handle:
        for lineno, record in iter_json_lines(handle, lambda msg, n: DataError(msg, path=path, line=n)):
            if not isinstance(record, dict):
                raise DataError(f"expected a JSON object, got {type(record).__name__}", path=path, line=lineno)
            yield lineno, record


def _text(record: Mapping[str, Any], name: str, path: Path, lineno: int, required: bool) -> str:
    value = record.get(name)
    if value is None and not required:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and name == "_id":
        return str(value)  # some BEIR exports write numeric ids as numbers
    if not isinstance(value, str) or (required and not value):
        raise DataError(f"expected a non-empty string, got {value!r:.60}" if required
                        else f"expected a string, got {value!r:.60}", path=path, line=lineno, field=name)
    return value


def _read_by_id(path: Path, what: str, value: Callable[[Mapping[str, Any], int], T]) -> dict[str, T]:
    """``{_id: value(record, line)}`` over a JSON Lines file; a repeated id is an error, not an overwrite."""
    out: dict[str, T] = {}
    for lineno, rec in _jsonl(path):
        key = _text(rec, "_id", path, lineno, required=True)
        if key in out:
            raise DataError(f"duplicate {what} id {key!r}", path=path, line=lineno, field="_id")
        out[key] = value(rec, lineno)
    return out


def _read_corpus(path: Path) -> dict[str, Document]:
    corpus = _read_by_id(path, "document", lambda rec, n: {"title": _text(rec, "title", path, n, required=False),
                                                          "text": _text(rec, "text", path, n, required=True)})
    if not corpus:
        raise DataError("no documents", path=path)
    return corpus


def _read_queries(path: Path) -> dict[str, str]:
    return _read_by_id(path, "query", lambda rec, n: _text(rec, "text", path, n, required=True))


def _read_qrels(path: Path, corpus: Mapping[str, Any], queries: Mapping[str, str]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    try:
        handle = open(path, encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(f"cannot open ({exc.strerror or exc})", path=path) from None
    with handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows, None)
        if header != ["query-id", "corpus-id", "score"]:
            raise DataError(f"expected the header 'query-id<TAB>corpus-id<TAB>score', got {header!r}",
                            path=path, line=1)
        for lineno, row in enumerate(rows, start=2):
            if not row:
                continue
            if len(row) != 3:
                raise DataError(f"expected 3 tab-separated columns, got {len(row)}", path=path, line=lineno)
            qid, doc_id, raw_score = row
            try:
                score = int(raw_score)
            except ValueError:
                raise DataError(f"expected an integer, got {raw_score!r}", path=path, line=lineno,
                                field="score") from None
            if qid not in queries:
                raise DataError(f"unknown query id {qid!r}", path=path, line=lineno, field="query-id")
            if doc_id not in corpus:
                raise DataError(f"unknown document id {doc_id!r}", path=path, line=lineno, field="corpus-id")
            if score > 0:
                qrels.setdefault(qid, {})[doc_id] = score
    return qrels


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """Read one split of a BEIR dataset folder.

    Only the queries with at least one relevant document (score > 0) in ``qrels/<split>.tsv``
    are kept: BEIR's ``queries.jsonl`` holds every split's queries, and a query without
    gold evidence cannot be attributed to a stage.
    """
    root = Path(folder)
    if not root.is_dir():
        raise DataError("not a folder (expected corpus.jsonl, queries.jsonl, qrels/)", path=root)
    corpus = _read_corpus(root / "corpus.jsonl")
    all_queries = _read_queries(root / "queries.jsonl")
    qrels = _read_qrels(root / "qrels" / f"{split}.tsv", corpus, all_queries)
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    return BeirData(corpus, queries, {qid: qrels[qid] for qid in queries}, source=str(root),
                    meta={"split": split})
