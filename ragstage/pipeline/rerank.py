"""Second stage: re-order the retriever's candidates and keep the top ``n``.

Three rerankers share one interface, ``rerank(query, candidates, corpus, n) -> Hits``:

* :class:`NoReranker` keeps the retriever's own order (the cut to ``n`` still happens, and
  that cut is what a ``reranking`` diagnosis then measures);
* :class:`CrossEncoderReranker` scores (query, passage) pairs jointly with a
  sentence-transformers CrossEncoder (by default ``cross-encoder/ms-marco-MiniLM-L-6-v2``);
* :class:`RankFusionReranker` fuses two rankings of the candidates, BM25 and a bi-encoder, by
  reciprocal rank. It is NOT a cross-encoder: it is the honest offline choice, because no
  cross-encoder with trained weights ships on PyPI. It brings a signal the retriever did not
  use (lexical for a dense retriever, dense for BM25), so unlike re-scoring a bi-encoder's
  candidates with the same bi-encoder it really re-orders them: it can rescue a passage the
  retriever's cut lost, and lose one the retriever had.

A reranker that cannot be loaded (a missing or retired model id, no network) raises
:class:`RerankerUnavailable`; the pipeline records it as the trace's ``error`` at stage
``reranking`` and carries on with the next question, as a service outage would be logged.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .data import Corpus, doc_text
from .embedding import DEFAULT_EMBEDDER, Embedder
from .models import LOAD_ERRORS, ModelSpec, as_model_ref, pick_device
from .retrieval import BM25Retriever, Hits, rank_order, top_k

__all__ = ["DEFAULT_CROSS_ENCODER", "Reranker", "RerankerUnavailable", "NoReranker", "CrossEncoderReranker",
           "RankFusionReranker"]

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


class RerankerUnavailable(RuntimeError):
    """The reranker's model could not be loaded: a service failure, not a relevance failure."""


class Reranker(Protocol):
    short_name: str  # "" for no reranker; else appended to the pipeline name ("bm25+ce")

    def describe(self) -> dict[str, Any]:
        ...

    def rerank(self, query: str, candidates: Hits, corpus: Corpus, n: int) -> Hits:
        """The best ``n`` of ``candidates`` for ``query``, best first."""
        ...


class NoReranker:
    """The retriever's own top ``n``."""

    short_name = ""

    def describe(self) -> dict[str, Any]:
        return {"kind": "none"}

    def rerank(self, query: str, candidates: Hits, corpus: Corpus, n: int) -> Hits:
        return list(candidates[:n])


class _ModelReranker:
    """Loads its model once, on first use; a load failure is remembered and re-raised per call."""

    def __init__(self, model_name: str) -> None:
        self._model_name = model_name
        self._failure: str | None = None

    def _load(self) -> Any:
        raise NotImplementedError

    @cached_property
    def _model(self) -> Any:
        return self._load()

    def loaded(self) -> Any:
        """The model, loading it on first call; RerankerUnavailable when it cannot be loaded."""
        if self._failure is None:
            try:
                return self._model
            except LOAD_ERRORS as exc:
                detail = str(exc).splitlines()[0] if str(exc) else repr(exc)
                self._failure = f"cannot load {self._model_name}: {type(exc).__name__}: {detail}"
        raise RerankerUnavailable(self._failure)


class CrossEncoderReranker(_ModelReranker):
    """A sentence-transformers CrossEncoder over (query, ``title + " " + text``) pairs."""

    short_name = "ce"

    def __init__(self, model: ModelSpec = DEFAULT_CROSS_ENCODER, *, device: str = "auto", batch_size: int = 32,
                 max_length: int = 512) -> None:
        self.ref = as_model_ref(model)
        super().__init__(self.ref.name)
        self.device, self.batch_size, self.max_length = device, batch_size, max_length

    def _load(self) -> Any:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(self.ref.source, device=pick_device(self.device), revision=self.ref.revision,
                            max_length=self.max_length)

    def describe(self) -> dict[str, Any]:
        return {"kind": "cross-encoder", "model": self.ref.describe(), "max_length": self.max_length}

    def rerank(self, query: str, candidates: Hits, corpus: Corpus, n: int) -> Hits:
        model = self.loaded()
        if not candidates:
            return []
        ids = [doc_id for doc_id, _ in candidates]
        scores = model.predict([(query, doc_text(corpus[d])) for d in ids], batch_size=self.batch_size,
                               show_progress_bar=False)
        return top_k(np.asarray(scores, dtype=np.float64).reshape(-1), ids, n)


class RankFusionReranker(_ModelReranker):
    """Reciprocal-rank fusion of BM25 and a bi-encoder over the candidates. NOT a cross-encoder.

    Each candidate scores ``sum(1 / (k + rank))`` over two rankings of the candidates: by BM25
    (only candidates that share a term with the query are ranked there; the others add nothing)
    and by embedding cosine. Fusion lets a passage that one signal ranks high and the other
    ranks reasonably overtake one that only a single signal likes: an exact rare term rescues a
    passage the bi-encoder ranked low, and a paraphrase with no shared term loses ground. With
    ``k = 60`` (the constant of Cormack, Clarke and Büttcher, 2009) no single rank dominates.
    Corpus vectors come from the shared embedding cache.
    """

    short_name = "rrf"

    def __init__(self, model: ModelSpec | Embedder = DEFAULT_EMBEDDER, *, k: int = 60, device: str = "auto",
                 batch_size: int = 32, cache_dir: str | Path | None = None) -> None:
        if k < 1:
            raise ValueError(f"the fusion constant k must be at least 1, got {k}")
        self.embedder = model if isinstance(model, Embedder) else Embedder(
            model, device=device, batch_size=batch_size, cache_dir=cache_dir)
        super().__init__(self.embedder.ref.name)
        self.k = k
        self._indexed: tuple[Corpus, BM25Retriever, dict[str, np.ndarray]] | None = None

    def _load(self) -> Any:
        return self.embedder.model

    def describe(self) -> dict[str, Any]:
        return {"kind": f"rank fusion of BM25 and a bi-encoder (reciprocal rank, k={self.k}): not a cross-encoder",
                "k": self.k, "bm25": BM25Retriever({}).describe(), "dense": self.embedder.describe()}

    def _index(self, corpus: Corpus) -> tuple[BM25Retriever, dict[str, np.ndarray]]:
        if self._indexed is None or self._indexed[0] is not corpus:
            vectors = dict(zip(corpus, self.embedder.corpus_matrix(corpus)))
            self._indexed = (corpus, BM25Retriever(corpus), vectors)
        return self._indexed[1], self._indexed[2]

    def rerank(self, query: str, candidates: Hits, corpus: Corpus, n: int) -> Hits:
        self.loaded()
        if not candidates:
            return []
        bm25, vectors = self._index(corpus)
        ids = [doc_id for doc_id, _ in candidates]
        lexical = bm25.scores(query, ids)
        dense = np.stack([vectors[d] for d in ids]) @ self.embedder.encode([query])[0]
        fused = _reciprocal_ranks(dense, self.k) + _reciprocal_ranks(lexical, self.k, positive_only=True)
        return top_k(fused, ids, n)


def _reciprocal_ranks(scores: np.ndarray, k: int, positive_only: bool = False) -> np.ndarray:
    """``1 / (k + rank)`` per item (rank 1 = best score; ties keep the candidates' order); 0 for an
    item left unranked (score <= 0 when ``positive_only``)."""
    order = rank_order(scores)
    out = np.zeros(len(scores))
    ranked = order[scores[order] > 0] if positive_only else order
    out[ranked] = 1.0 / (k + np.arange(1, len(ranked) + 1))
    return out
