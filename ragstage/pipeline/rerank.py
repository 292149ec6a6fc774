"""Second stage: re-order the retriever's candidates and keep the top ``n``.

Three rerankers share one interface, ``rerank(query, candidates, corpus, n) -> Hits``:

* :class:`NoReranker` keeps the retriever's own order (the cut to ``n`` still happens, and
  that cut is what a ``reranking`` diagnosis then measures);
* :class:`CrossEncoderReranker` scores (query, passage) pairs jointly with a
  sentence-transformers CrossEncoder (by default ``cross-encoder/ms-marco-MiniLM-L-6-v2``);
* :class:`DenseRescoreReranker` re-scores the candidates with a bi-encoder. It is NOT a
  cross-encoder: it is the honest offline choice, because no cross-encoder with trained
  weights ships on PyPI, and it answers a narrower question (does a second, dense opinion
  re-order lexical candidates usefully?).

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
from .retrieval import Hits, top_k

__all__ = ["DEFAULT_CROSS_ENCODER", "Reranker", "RerankerUnavailable", "NoReranker", "CrossEncoderReranker",
           "DenseRescoreReranker"]

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


class DenseRescoreReranker(_ModelReranker):
    """Re-score candidates by bi-encoder cosine. NOT a cross-encoder (see the module docstring).

    The corpus vectors come from the shared embedding cache, so a MiniLM retriever and a
    MiniLM rescorer encode the corpus once between them.
    """

    short_name = "rescore"

    def __init__(self, model: ModelSpec | Embedder = DEFAULT_EMBEDDER, *, device: str = "auto",
                 batch_size: int = 32, cache_dir: str | Path | None = None) -> None:
        self.embedder = model if isinstance(model, Embedder) else Embedder(
            model, device=device, batch_size=batch_size, cache_dir=cache_dir)
        super().__init__(self.embedder.ref.name)
        self._vectors_for: tuple[Corpus, dict[str, np.ndarray]] | None = None

    def _load(self) -> Any:
        return self.embedder.model

    def describe(self) -> dict[str, Any]:
        return {"kind": "dense-rescore (bi-encoder, not a cross-encoder)", **self.embedder.describe()}

    def _doc_vectors(self, corpus: Corpus) -> dict[str, np.ndarray]:
        if self._vectors_for is None or self._vectors_for[0] is not corpus:
            self._vectors_for = (corpus, dict(zip(corpus, self.embedder.corpus_matrix(corpus))))
        return self._vectors_for[1]

    def rerank(self, query: str, candidates: Hits, corpus: Corpus, n: int) -> Hits:
        self.loaded()
        if not candidates:
            return []
        vectors = self._doc_vectors(corpus)
        ids = [doc_id for doc_id, _ in candidates]
        scores = np.stack([vectors[d] for d in ids]) @ self.embedder.encode([query])[0]
        return top_k(scores, ids, n)
