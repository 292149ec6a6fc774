"""End to end on the mini corpus with real weights: the MiniLM copy and the Qwen GGUF STAND-IN.

Slow (about two minutes on two CPU cores: one GGUF load, three generations) but offline, so
it runs in CI too. It checks run invariants and the mini corpus's designed traps, not answer
quality: a stand-in's answers say nothing about the hub model it replaces.
"""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import mini_data

from ragstage.attribution import diagnose
from ragstage.pipeline import NoReranker, Pipeline, choose_components, make_retriever
from ragstage.trace import read_traces

pytestmark = pytest.mark.slow

#: fixtures/mini_scifact/README.md's table: where each claim's abstract is lost before generation.
DESIGN = {
    "1": {"bm25": "retrieval", "bm25+rrf": "retrieval", "minilm": "prompt", "minilm+rrf": "reranking"},
    "2": dict.fromkeys(("bm25", "bm25+rrf", "minilm", "minilm+rrf"), "reranking"),
    "3": dict.fromkeys(("bm25", "bm25+rrf", "minilm", "minilm+rrf"), "prompt_assembly"),
    "4": dict.fromkeys(("bm25", "bm25+rrf", "minilm", "minilm+rrf"), "prompt_assembly"),
    "9": {"bm25": "prompt", "bm25+rrf": "prompt", "minilm": "reranking", "minilm+rrf": "prompt"},
}


@pytest.fixture(scope="module")
def models():
    return choose_components(offline=True, device="cpu")


@pytest.fixture(scope="module")
def run(models, tmp_path_factory):
    data = mini_data().limit(3)
    out = tmp_path_factory.mktemp("standin-run")
    pipeline = Pipeline(make_retriever("dense", data.corpus, models.embedder), NoReranker(), models.generator,
                        cache_dir=out / "cache" / "stages")
    result = pipeline.run(data.queries, data.qrels, out / "run", data_info=data.meta)
    return data, result, list(read_traces(result.traces))


def _where_lost(gold, retrieved, reranked, prompt) -> str:
    for stage, ids in (("retrieval", retrieved), ("reranking", reranked), ("prompt_assembly", prompt)):
        if not set(gold) & set(ids):
            return stage
    return "prompt"


def test_every_designed_trap_holds_in_all_four_pipelines(models, tmp_path):
    data = mini_data()
    found: dict[str, dict[str, str]] = {}
    prompts: dict[str, dict[str, tuple[str, ...]]] = {}
    for kind in ("bm25", "dense"):
        retriever = make_retriever(kind, data.corpus, models.embedder)
        for reranker in (NoReranker(), models.reranker):
            pipeline = Pipeline(retriever, reranker, models.generator, cache_dir=tmp_path)
            stages = pipeline.stages(data.queries)
            prompts[pipeline.name] = {qid: prompt.ids for qid, prompt in stages.prompts.items()}
            for qid in data.queries:
                found.setdefault(qid, {})[pipeline.name] = _where_lost(
                    data.qrels[qid], [d for d, _ in stages.retrieved[qid]], [d for d, _ in stages.reranked[qid]],
                    stages.prompts[qid].ids)
    for qid, expected in found.items():
        assert expected == DESIGN.get(qid, dict.fromkeys(expected, "prompt")), qid
    assert prompts["minilm+rrf"]["9"] == ("1081",)  # fusion puts it first; the long 1082 after it does not fit


def test_one_trace_per_claim_with_nested_stage_outputs(run):
    data, result, traces = run
    assert [t.query_id for t in traces] == list(data.queries) == ["1", "2", "3"]
    for t in traces:
        assert t.pipeline == "minilm" and t.error is None
        assert set(t.prompt) <= set(t.reranked) <= set(t.retrieved) and len(t.reranked) == 10
        assert 0 < t.meta["prompt_tokens"] <= 1024
    assert any(t.meta["parsed"] is not None for t in traces), [t.answer for t in traces]


def test_the_fixture_traps_hold_with_the_real_models(run):
    _, _, traces = run
    by_id = {t.query_id: t for t in traces}
    assert "1001" in by_id["1"].retrieved[:10]                     # a bi-encoder bridges the vocabulary gap
    assert diagnose(by_id["2"]).stage.value == "reranking"          # near-duplicates take the top 10
    assert diagnose(by_id["3"]).stage.value == "prompt_assembly"    # long abstracts spend the budget
    assert by_id["3"].meta["budget_stopped_at"] is not None
    assert set(by_id["3"].prompt) <= {"1031", "1032", "1033"}     # only long abstracts got in


def test_receipt_and_traces_label_the_stand_ins(run):
    _, result, traces = run
    receipt = json.loads((result.folder / "receipt.json").read_text())
    assert len(receipt["stand_ins"]) == 2, receipt["stand_ins"]
    minilm, qwen = receipt["stand_ins"]
    assert minilm.startswith("STAND-IN") and minilm.endswith("standing in for sentence-transformers/all-MiniLM-L6-v2")
    assert qwen.startswith("STAND-IN") and qwen.endswith("standing in for Qwen/Qwen2.5-1.5B-Instruct")
    assert receipt["generator"]["model"]["gguf_file"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert receipt["counts"]["traces"] == 3 and receipt["wall_seconds"] > 0
    assert all(t.model.startswith("STAND-IN") and t.meta["stand_in"] for t in traces)
