"""Sentence-transformers bi-encoder embeddings, with the corpus side cached on disk.

Encoding a corpus is the slow part of dense retrieval (minutes for SciFact on a CPU), and the
same vectors serve the dense retriever and the rank-fusion reranker. They are stored once
per (model, corpus content) pair, so neither a re-run nor the second pipeline pays again.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..atomic import atomic_output
from .data import Corpus, doc_text, hash_corpus
from .download import default_cache_dir
from .models import ModelSpec, as_model_ref, pick_device
from .store import config_key

__all__ = ["DEFAULT_EMBEDDER", "Embedder"]

DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"


class Embedder:
    """Normalised embeddings (so a dot product is the cosine) from a sentence-transformers model."""

    def __init__(self, model: ModelSpec = DEFAULT_EMBEDDER, *, device: str = "auto", batch_size: int = 32,
                 cache_dir: str | Path | None = None) -> None:
        self.ref = as_model_ref(model)
        self.device = device
        self.batch_size = batch_size
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    @cached_property
    def model(self) -> Any:
        """The loaded SentenceTransformer (raises OSError/ValueError when it cannot be found)."""
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.ref.source, device=pick_device(self.device), revision=self.ref.revision)

    def describe(self) -> dict[str, Any]:
        return {"model": self.ref.describe(), "normalized": True, "similarity": "cosine"}

    def encode(self, texts: Sequence[str], desc: str | None = None) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit-length rows."""
        vectors = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=desc is not None and len(texts) > 1)
        return np.asarray(vectors, dtype=np.float32)

    def corpus_matrix(self, corpus: Corpus) -> np.ndarray:
        """Embeddings of every document, rows in ``corpus`` order, read from or written to the cache."""
        key = config_key({"embedder": self.describe(), "corpus": hash_corpus(corpus)})
        path = self.cache_dir / "embeddings" / f"{key}.npz"
        ids = list(corpus)
        if path.exists():
            with np.load(path) as stored:
                row = {doc_id: i for i, doc_id in enumerate(stored["ids"].tolist())}
                return stored["vectors"][[row[doc_id] for doc_id in ids]]
        vectors = self.encode([doc_text(corpus[d]) for d in ids], desc="embed corpus")
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, ids=np.asarray(ids), vectors=vectors)
        return vectors
