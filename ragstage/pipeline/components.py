"""Which models a run uses, the hub ones or the offline stand-ins: chosen in this one place.

``ragstage run`` builds each component from its option (``--embedder standin`` and
``--generator standin`` select the stand-ins of :mod:`ragstage.pipeline.offline`), and chapter 5
asks for a whole set at once with :func:`choose_components`: the hub models the chapter names,
or, with no model hub in reach, the stand-ins and the offline reranker. Either way the choice
is spelled out once, and every trace and receipt then says which models made the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .data import Corpus
from .embedding import DEFAULT_EMBEDDER, Embedder
from .generation import DEFAULT_GENERATOR, HFGenerator
from .models import ModelRef, ModelSpec
from .offline import minilm_standin, qwen_coder_standin
from .receipt import local_path
from .rerank import DEFAULT_CROSS_ENCODER, CrossEncoderReranker, NoReranker, RankFusionReranker, Reranker
from .retrieval import BM25Retriever, DenseRetriever, Retriever

__all__ = ["STANDIN", "RETRIEVERS", "RERANKERS", "OFFLINE_RERANKER", "Components", "choose_components",
           "make_embedder", "make_generator", "make_retriever", "make_reranker", "generator_from_receipt"]

#: The model name that selects the offline stand-in (``--embedder standin``, ``--generator standin``).
STANDIN = "standin"
#: Retriever kinds: lexical BM25, or dense retrieval with the embedder.
RETRIEVERS = ("bm25", "dense")
#: Reranker kinds; the offline one needs no cross-encoder weights (none ship on PyPI).
RERANKERS = ("none", "cross-encoder", "rank-fusion")
OFFLINE_RERANKER = "rank-fusion"


def make_embedder(model: str | ModelSpec = DEFAULT_EMBEDDER, *, device: str = "auto",
                  cache_dir: str | Path | None = None) -> Embedder:
    """The embedder for dense retrieval (and any reranker that uses one); ``"standin"``: the MiniLM copy."""
    spec = minilm_standin() if model == STANDIN else model
    return Embedder(spec, device=device, cache_dir=cache_dir)


def make_generator(model: str | ModelSpec = DEFAULT_GENERATOR, *, gguf_file: str | None = None,
                   device: str = "auto", batch_size: int | None = None,
                   cache_dir: str | Path | None = None, dtype: str | None = None) -> HFGenerator:
    """The answering model; ``"standin"``: the Qwen2.5-Coder GGUF joined into ``cache_dir``.
    ``dtype`` None keeps the checkpoint's own loading precision (float32 for a GGUF)."""
    spec = qwen_coder_standin(cache_dir) if model == STANDIN else model
    return HFGenerator(spec, gguf_file=gguf_file, device=device, batch_size=batch_size, dtype=dtype)


def make_retriever(kind: str, corpus: Corpus, embedder: Embedder) -> Retriever:
    """``"bm25"`` or ``"dense"`` over ``corpus`` (the embedder is used only by ``"dense"``)."""
    if kind == "bm25":
        return BM25Retriever(corpus)
    if kind == "dense":
        return DenseRetriever(corpus, embedder)
    raise ValueError(f"unknown retriever {kind!r} (known: {', '.join(RETRIEVERS)})")


def make_reranker(kind: str, embedder: Embedder, *, cross_encoder: ModelSpec = DEFAULT_CROSS_ENCODER,
                  device: str = "auto") -> Reranker:
    """One of :data:`RERANKERS`; the embedder is shared, so a corpus is encoded once per run."""
    if kind == "cross-encoder":
        return CrossEncoderReranker(cross_encoder, device=device)
    if kind == "rank-fusion":
        return RankFusionReranker(embedder)
    if kind == "none":
        return NoReranker()
    raise ValueError(f"unknown reranker {kind!r} (known: {', '.join(RERANKERS)})")


@dataclass(frozen=True)
class Components:
    """An embedder, the reranker of the "with reranker" pipelines, and a generator."""

    embedder: Embedder
    reranker: Reranker
    generator: HFGenerator
    offline: bool

    def lines(self) -> list[str]:
        """One line per component, naming stand-ins as such (for a chapter to print)."""
        return [f"embedder:  {self.embedder.ref.name}", f"reranker:  {self.reranker.describe()['kind']}",
                f"generator: {self.generator.name}"]


def generator_from_receipt(receipt: Mapping[str, Any], *, device: str = "auto",
                           cache_dir: str | Path | None = None) -> HFGenerator:
    """The generator a run's receipt names, rebuilt here, so a re-run or an oracle uses the same model.

    A stand-in is rebuilt from its package (the receipt's file path belongs to the machine that
    made the run), and must carry the same label; any other model is loaded from the source the
    receipt recorded (a hub id, or a local path that must exist here). Decoding settings come
    from the receipt too.
    """
    described = receipt["generator"]
    model = described["model"]
    ref = qwen_coder_standin(cache_dir) if model["stand_in"] else ModelRef(local_path(model["source"], cache_dir),
                                                                         model["gguf_file"], model["revision"])
    if ref.name != model["name"]:
        raise ValueError(f"the run was made with the stand-in {model['name']!r}; "
                         f"this package's stand-in is {ref.name!r}: pass the generator explicitly")
    return HFGenerator(ref, device=device, max_new_tokens=described["decoding"]["max_new_tokens"],
                       dtype=described["dtype"])


def choose_components(offline: bool, *, device: str = "auto", cache_dir: str | Path | None = None) -> Components:
    """The hub models (``offline=False``) or the stand-ins and the offline reranker (``offline=True``)."""
    embedder = make_embedder(STANDIN if offline else DEFAULT_EMBEDDER, device=device, cache_dir=cache_dir)
    reranker = make_reranker(OFFLINE_RERANKER if offline else "cross-encoder", embedder, device=device)
    generator = make_generator(STANDIN if offline else DEFAULT_GENERATOR, device=device, cache_dir=cache_dir)
    return Components(embedder, reranker, generator, offline)
