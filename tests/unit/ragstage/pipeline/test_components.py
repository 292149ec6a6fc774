"""The one place that chooses hub models or offline stand-ins, and the receipt's parts."""

import pytest
from pipeline_helpers import mini_data

from ragstage import Trace
from ragstage.pipeline import components
from ragstage.pipeline.components import (
    RERANKERS,
    choose_components,
    make_embedder,
    make_reranker,
    make_retriever,
)
from ragstage.pipeline.embedding import DEFAULT_EMBEDDER
from ragstage.pipeline.generation import DEFAULT_GENERATOR
from ragstage.pipeline.models import ModelRef
from ragstage.pipeline.receipt import counts, stand_ins
from ragstage.pipeline.rerank import DEFAULT_CROSS_ENCODER


def test_hub_choice_names_the_chapters_models_and_loads_nothing():
    chosen = choose_components(offline=False)
    assert chosen.embedder.ref.source == DEFAULT_EMBEDDER and not chosen.embedder.ref.is_stand_in
    assert chosen.reranker.describe()["kind"] == "cross-encoder"
    assert chosen.reranker.describe()["model"]["source"] == DEFAULT_CROSS_ENCODER
    assert chosen.generator.name == DEFAULT_GENERATOR
    assert "model" not in vars(chosen.embedder) and "model" not in vars(chosen.generator)  # lazy: nothing loaded


def test_offline_choice_is_the_stand_ins_and_says_so(monkeypatch):
    fake_qwen = ModelRef("/nowhere", gguf_file="q.gguf", stand_in_for="Qwen/Qwen2.5-1.5B-Instruct",
                         label="STAND-IN test generator")
    monkeypatch.setattr(components, "qwen_coder_standin", lambda cache_dir=None: fake_qwen)
    chosen = choose_components(offline=True)
    assert chosen.offline and chosen.embedder.ref.is_stand_in
    assert chosen.embedder.ref.stand_in_for == DEFAULT_EMBEDDER
    assert "not a cross-encoder" in chosen.reranker.describe()["kind"]
    assert chosen.reranker.embedder is chosen.embedder  # one embedder: the corpus is encoded once
    assert chosen.generator.ref == fake_qwen
    lines = chosen.lines()
    assert lines[0].startswith("embedder:  STAND-IN") and lines[2] == "generator: STAND-IN test generator"


def test_unknown_kinds_list_the_known_ones():
    embedder = make_embedder()
    with pytest.raises(ValueError, match="unknown retriever 'sparse' \\(known: bm25, dense\\)"):
        make_retriever("sparse", mini_data().corpus, embedder)
    with pytest.raises(ValueError, match=f"unknown reranker 'colbert' \\(known: {', '.join(RERANKERS)}\\)"):
        make_reranker("colbert", embedder)
    assert make_retriever("bm25", mini_data().corpus, embedder).short_name == "bm25"
    assert make_reranker("none", embedder).short_name == ""


def test_receipt_names_each_stand_in_once_wherever_it_is_described():
    minilm = {"name": "M", "stand_in": True, "stand_in_for": "hub/m"}
    hub = {"name": "G", "stand_in": False, "stand_in_for": None}
    described = [{"kind": "dense", "model": minilm}, {"kind": "fusion", "parts": [{"model": minilm}]},
                 {"model": hub}]
    assert stand_ins(*described) == ["M, standing in for hub/m"]
    assert stand_ins({"model": hub}) == []


def test_counts_split_new_generations_from_cached_ones():
    traces = [Trace(query_id="a"), Trace(query_id="b", error={"stage": "reranking", "message": "down"})]
    assert counts(traces, asked=1, generated=1) == {"traces": 2, "errors": 1, "generated": 1,
                                                    "generation_cache_hits": 0}
    assert counts([], asked=5, generated=2)["generation_cache_hits"] == 3
