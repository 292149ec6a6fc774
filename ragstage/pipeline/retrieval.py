"""First-stage retrieval: BM25 (sparse, lexical) and a bi-encoder (dense), one interface.

Both return, for each query id, a ranked list of ``(doc id, score)``. Ties are broken by
corpus order after rounding scores to 9 decimals, so the ranking does not depend on the
order in which floating-point terms happened to be summed (the two BM25 engines agree).
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Mapping, Protocol, Sequence

import numpy as np

from .data import Corpus, doc_text
from .embedding import DEFAULT_EMBEDDER, Embedder
from .models import ModelSpec

__all__ = ["STOPWORDS", "Hits", "Retriever", "BM25Retriever", "DenseRetriever", "tokenize", "rank_order", "top_k"]

Hits = list[tuple[str, float]]

#: A deliberately small English stopword list: function words only, so that a claim and an
#: abstract sharing "no terms" is a statement about content words. Negations ("not", "no")
#: are kept because they matter to claims.
STOPWORDS = frozenset(
    "a an and are as at be been being but by can could did do does for from had has have how if in into is "
    "it its of on or our so such than that the their them then there these they this those to was we were "
    "what when where which while who whom why will with would".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase, take maximal runs of ``[a-z0-9]``, drop :data:`STOPWORDS`.

    No stemming: "vaccine" and "vaccination" are different terms, as in rank_bm25's usual
    setup, which is exactly what makes some paraphrased claims a BM25 miss.
    """
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def rank_order(scores: np.ndarray) -> np.ndarray:
    """Positions from the best score to the worst; ties (to 9 decimals) keep their given order."""
    return np.lexsort((np.arange(len(scores)), -np.round(scores, 9)))


def top_k(scores: np.ndarray, ids: Sequence[str], k: int, positive_only: bool = False) -> Hits:
    """The ``k`` best ``(id, score)`` pairs; ties (to 9 decimals) keep corpus order."""
    order = rank_order(scores)
    if positive_only:
        order = order[scores[order] > 0]
    return [(ids[i], float(scores[i])) for i in order[:k]]


class Retriever(Protocol):
    """What a pipeline needs from a first stage."""

    corpus: Corpus
    short_name: str

    def describe(self) -> dict[str, Any]:
        """Settings and model provenance, for cache keys and receipts."""
        ...

    def retrieve(self, queries: Mapping[str, str], k: int = 100) -> dict[str, Hits]:
        """Top ``k`` ``(doc id, score)`` per query id, best first."""
        ...


class BM25Retriever:
    """BM25Okapi (k1=0.9, b=0.4, the Anserini/BEIR setting) over ``title + " " + text``.

    ``engine="rank_bm25"`` uses rank_bm25 itself; ``engine="sparse"`` uses
    :class:`~ragstage.pipeline.bm25_sparse.SparseBM25`, the same formula as one sparse matrix
    product (same ranking, much faster on hundreds of queries). Only documents that share at
    least one term with the query (score > 0) are returned: a document with no common term was
    not retrieved, it merely exists.
    """

    def __init__(self, corpus: Corpus, *, k1: float = 0.9, b: float = 0.4,
                 engine: Literal["rank_bm25", "sparse"] = "rank_bm25", short_name: str = "bm25") -> None:
        if engine not in ("rank_bm25", "sparse"):
            raise ValueError(f"engine must be 'rank_bm25' or 'sparse', got {engine!r}")
        self.corpus = corpus
        self.k1, self.b, self.engine, self.short_name = k1, b, engine, short_name
        self._ids = list(corpus)

    @cached_property
    def index(self) -> Any:
        """The scoring engine, built on first use (a cached run never pays for it)."""
        docs = [tokenize(doc_text(self.corpus[d])) for d in self._ids]
        if self.engine == "sparse":
            from .bm25_sparse import SparseBM25

            return SparseBM25(docs, k1=self.k1, b=self.b)
        from rank_bm25 import BM25Okapi

        return BM25Okapi(docs, k1=self.k1, b=self.b)

    def describe(self) -> dict[str, Any]:
        # The engine is left out on purpose: both give the same ranking, so they share caches.
        return {"kind": "bm25", "k1": self.k1, "b": self.b, "epsilon": 0.25,
                "tokenizer": "lowercase [a-z0-9]+ minus ragstage STOPWORDS", "stopwords": len(STOPWORDS)}

    def retrieve(self, queries: Mapping[str, str], k: int = 100) -> dict[str, Hits]:
        tokens = [tokenize(text) for text in queries.values()]
        if self.engine == "sparse":
            rows = self.index.get_batch_scores(tokens)
        else:
            rows = [self.index.get_scores(t) for t in tokens]
        return {qid: top_k(np.asarray(row), self._ids, k, positive_only=True) for qid, row in zip(queries, rows)}

    def scores(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """BM25 scores of ``query`` for the documents ``ids`` (0 for one that shares no term)."""
        row = np.asarray(self.index.get_scores(tokenize(query)))
        return row[[self._position[doc_id] for doc_id in ids]]

    @cached_property
    def _position(self) -> dict[str, int]:
        return {doc_id: i for i, doc_id in enumerate(self._ids)}


class DenseRetriever:
    """Cosine similarity between normalised sentence-transformers embeddings.

    Corpus embeddings are cached on disk per (model, corpus content); see :class:`Embedder`.
    """

    def __init__(self, corpus: Corpus, model: ModelSpec | Embedder = DEFAULT_EMBEDDER,
                 *, device: str = "auto", batch_size: int = 32, cache_dir: str | Path | None = None,
                 short_name: str | None = None) -> None:
        self.corpus = corpus
        self.embedder = model if isinstance(model, Embedder) else Embedder(
            model, device=device, batch_size=batch_size, cache_dir=cache_dir)
        # "minilm" for any MiniLM (the hub model or its stand-in), so pipeline names match the chapter
        self.short_name = short_name or ("minilm" if "minilm" in self.embedder.ref.source.lower() else "dense")
        self._ids = list(corpus)

    @cached_property
    def matrix(self) -> np.ndarray:
        return self.embedder.corpus_matrix(self.corpus)

    def describe(self) -> dict[str, Any]:
        return {"kind": "dense", **self.embedder.describe()}

    def retrieve(self, queries: Mapping[str, str], k: int = 100) -> dict[str, Hits]:
        vectors = self.embedder.encode(list(queries.values()))
        scores = vectors @ self.matrix.T
        return {qid: top_k(row, self._ids, k) for qid, row in zip(queries, scores)}
