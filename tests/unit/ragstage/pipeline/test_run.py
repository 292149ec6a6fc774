"""Whole runs on the mini corpus with tiny models: traces, caches, resume, re-generation, CLI."""

from __future__ import annotations

import argparse
import json

import pytest
from pipeline_helpers import MINI, CountingGenerator, mini_data, tiny_hf_generator, tiny_models

from ragstage.attribution import diagnose
from ragstage.pipeline import (
    BM25Retriever,
    CrossEncoderReranker,
    NoReranker,
    Pipeline,
    RankFusionReranker,
    generate_on_saved_prompts,
)
from ragstage.pipeline.cli_run import add_run_arguments, run_from_args
from ragstage.trace import read_traces

DATA = mini_data()


@pytest.fixture(scope="module")
def generator():
    return tiny_hf_generator()


def _pipeline(generator, cache, reranker=None, **kw):
    return Pipeline(BM25Retriever(DATA.corpus), reranker or NoReranker(), generator, cache_dir=cache, **kw)


def test_bm25_run_writes_one_valid_trace_per_claim(tmp_path, generator, monkeypatch):
    monkeypatch.setenv("RAGSTAGE_CACHE", str(tmp_path))  # the receipt names the cache relative to its root
    result = _pipeline(generator, tmp_path / "cache").run(DATA.queries, DATA.qrels, tmp_path / "run",
                                                                data_info=DATA.meta)
    traces = list(read_traces(result.traces))
    assert [t.query_id for t in traces] == list(DATA.queries)
    for t in traces:
        assert t.pipeline == "bm25" and t.prompt_version == "original" and t.timestamp
        assert set(t.prompt) <= set(t.reranked) <= set(t.retrieved)
        assert list(t.gold) == list(DATA.qrels[t.query_id])
        assert t.model == generator.name and t.error is None
        assert t.meta["unparsed"] == (t.meta["parsed"] is None)
        assert t.correct == (bool(t.answer_ids) and t.answer_ids[0] in t.gold)
    by_id = {t.query_id: t for t in traces}
    assert diagnose(by_id["1"]).stage.value == "retrieval"       # no shared term
    assert diagnose(by_id["2"]).stage.value == "reranking"       # near-duplicates fill the top 10
    assert by_id["3"].meta["budget_stopped_at"] is not None
    receipt = json.loads((tmp_path / "run" / "receipt.json").read_text())
    n = len(DATA.queries)
    assert receipt["counts"] == {"traces": n, "errors": 0, "generated": n, "generation_cache_hits": 0}
    assert receipt["data"]["corpus_hash"] == DATA.corpus_hash and receipt["stand_ins"] == []
    assert receipt["packages"]["transformers"] and receipt["settings"]["budget"] == 1024
    assert receipt["cache_dir"] == "<cache>/cache" and receipt == result.receipt
    saved = [json.loads(line) for line in (tmp_path / "run" / "prompts.jsonl").read_text().splitlines()]
    assert [(s["query_id"], tuple(s["ids"])) for s in saved] == [(t.query_id, tuple(t.prompt)) for t in traces]


def test_same_prompt_is_never_generated_twice(tmp_path, generator):
    cache = tmp_path / "cache"
    first = _pipeline(generator, cache).run(DATA.queries, DATA.qrels, tmp_path / "a")
    counting = CountingGenerator(generator)
    second = _pipeline(counting, cache).run(DATA.queries, DATA.qrels, tmp_path / "b")
    assert counting.seen == [] and second.generated == 0
    answers = lambda r: [(t.query_id, t.answer) for t in read_traces(r.traces)]  # noqa: E731
    assert answers(first) == answers(second)
    # a different pipeline whose prompts coincide for some claims only generates the new ones
    fusion = RankFusionReranker(str(tiny_models().embedder), device="cpu", cache_dir=cache)
    third = _pipeline(counting, cache, reranker=fusion).run(DATA.queries, DATA.qrels, tmp_path / "c")
    assert third.receipt["pipeline"] == "bm25+rrf"
    assert len(counting.seen) == third.generated == len(set(counting.seen))
    assert third.generated + third.receipt["counts"]["generation_cache_hits"] == len(DATA.queries)


def test_interrupted_run_resumes_without_redoing_finished_work(tmp_path, generator):
    cache = tmp_path / "cache"
    crashing = CountingGenerator(generator, fail_after=5)
    with pytest.raises(KeyboardInterrupt):
        _pipeline(crashing, cache).run(DATA.queries, DATA.qrels, tmp_path / "run")
    done_before = list(crashing.seen)
    assert len(done_before) == 4  # one full batch of 4 finished; the second batch was in flight
    assert not (tmp_path / "run" / "traces.jsonl").exists()
    # tear the last cached line, as a kill in the middle of a write would
    store = next((cache / "generations").glob("*.jsonl"))
    with open(store, "ab") as handle:
        handle.write(b'{"key": "torn", "val')
    resumed = CountingGenerator(generator)
    result = _pipeline(resumed, cache).run(DATA.queries, DATA.qrels, tmp_path / "run")
    n = len(DATA.queries)
    assert len(resumed.seen) == n - 4 and not set(resumed.seen) & set(done_before)
    assert result.generated == n - 4 and len(list(read_traces(result.traces))) == n
    assert store.read_bytes().endswith(b"\n") and b"torn" not in store.read_bytes()


def test_reranker_service_failure_is_recorded_on_each_trace(tmp_path, generator):
    counting = CountingGenerator(generator)
    broken = CrossEncoderReranker(str(tmp_path / "retired-model"), device="cpu")
    result = _pipeline(counting, tmp_path / "cache", reranker=broken).run(DATA.queries, DATA.qrels,
                                                                               tmp_path / "run")
    traces = list(read_traces(result.traces))
    assert len(traces) == len(DATA.queries) and counting.seen == []
    for t in traces:
        assert t.error["stage"] == "reranking" and t.error["message"].startswith("cannot load ")
        assert "retired-model" in t.error["message"]
        assert t.reranked is None and t.prompt is None and t.retrieved
        assert diagnose(t).stage.value == "endpoint_unavailable"
    assert result.receipt["counts"]["errors"] == len(DATA.queries) and result.receipt["pipeline"] == "bm25+ce"


def test_cross_encoder_pipeline_keeps_prompt_within_rerank_within_retrieval(tmp_path, generator):
    ce = CrossEncoderReranker(str(tiny_models().cross_encoder), device="cpu")
    result = _pipeline(generator, tmp_path / "cache", reranker=ce, rerank_n=4, budget=300).run(
        DATA.limit(4).queries, DATA.limit(4).qrels, tmp_path / "run")
    for t in read_traces(result.traces):
        assert len(t.reranked) == 4 and set(t.prompt) <= set(t.reranked) <= set(t.retrieved)
        assert t.meta["prompt_tokens"] <= 300


def test_generate_on_saved_prompts_uses_exactly_the_saved_passages(tmp_path, generator):
    cache = tmp_path / "cache"
    _pipeline(generator, cache).run(DATA.queries, DATA.qrels, tmp_path / "run")
    saved = {json.loads(line)["query_id"]: json.loads(line)
             for line in (tmp_path / "run" / "prompts.jsonl").read_text().splitlines()}
    counting = CountingGenerator(generator)
    result = generate_on_saved_prompts(tmp_path / "run", "revised", counting, cache_dir=cache)
    assert result.traces.name == "traces-revised.jsonl" and result.generated == len(DATA.queries)
    assert all("most relevant" in text for text in counting.seen)
    assert sorted(counting.seen) == sorted(
        generator.chat_text(__import__("ragstage.pipeline").pipeline.render_messages("revised", s["query"],
                                                                                    s["context"]))
        for s in saved.values())
    before = {t.query_id: t for t in read_traces(tmp_path / "run" / "traces.jsonl")}
    for t in read_traces(result.traces):
        assert t.prompt_version == "revised"
        assert (t.retrieved, t.reranked, t.prompt) == (before[t.query_id].retrieved, before[t.query_id].reranked,
                                                       before[t.query_id].prompt)
    assert json.loads((tmp_path / "run" / "receipt-revised.json").read_text())["generation_only"] is True
    # without a generator argument, the one named in the receipt is rebuilt; all cached now
    again = generate_on_saved_prompts(tmp_path / "run", "revised", cache_dir=cache)
    assert again.generated == 0


def test_unknown_prompt_version_fails_before_any_work(tmp_path, generator):
    with pytest.raises(ValueError, match="unknown prompt version 'fancy'"):
        _pipeline(generator, tmp_path / "cache", prompt_version="fancy")


def test_cli_run_on_a_beir_folder(tmp_path, capsys):
    parser = add_run_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--data", str(MINI), "--retriever", "bm25", "--reranker", "none",
                              "--generator", str(tiny_models().generator), "--limit", "3", "--budget", "600",
                              "--device", "cpu", "--cache-dir", str(tmp_path / "cache"),
                              "--out", str(tmp_path / "run")])
    assert run_from_args(args) == 0
    assert "bm25: 3 traces" in capsys.readouterr().out
    receipt = json.loads((tmp_path / "run" / "receipt.json").read_text())
    assert receipt["settings"]["budget"] == 600 and receipt["data"]["queries"] == 3
    dense = parser.parse_args(["--data", str(MINI), "--retriever", "dense", "--reranker", "rank-fusion",
                               "--embedder", str(tiny_models().embedder), "--generator", str(tiny_models().generator),
                               "--limit", "2", "--device", "cpu", "--cache-dir", str(tmp_path / "cache"),
                               "--out", str(tmp_path / "dense")])
    assert run_from_args(dense) == 0
    assert "dense+rrf: 2 traces" in capsys.readouterr().out
    bad = parser.parse_args(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "x")])
    with pytest.raises(ValueError, match="not a folder"):
        run_from_args(bad)
    zero = parser.parse_args(["--data", str(MINI), "--budget", "0", "--out", str(tmp_path / "x")])
    with pytest.raises(ValueError, match="--budget must be at least 1"):
        run_from_args(zero)
