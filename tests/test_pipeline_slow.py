"""End to end on the mini corpus with real weights: the MiniLM copy and the Qwen GGUF STAND-IN.

Slow (about two minutes on two CPU cores: one GGUF load, three generations) but offline, so
it runs in CI too. It checks run invariants, not answer quality: a stand-in's answers say
nothing about the hub model it replaces.
"""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import MINI

from ragstage.attribution import diagnose
from ragstage.pipeline import (
    DenseRetriever,
    HFGenerator,
    NoReranker,
    Pipeline,
    load_beir,
    minilm_standin,
    qwen_coder_standin,
)
from ragstage.trace import read_traces

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = load_beir(MINI).limit(3)
    out = tmp_path_factory.mktemp("standin-run")
    pipeline = Pipeline(DenseRetriever(data.corpus, minilm_standin(), device="cpu", cache_dir=out / "cache"),
                        NoReranker(), HFGenerator(qwen_coder_standin(), device="cpu"),
                        cache_dir=out / "cache" / "stages")
    result = pipeline.run(data.queries, data.qrels, out / "run", data_info=data.meta)
    return data, result, list(read_traces(result.traces))


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
