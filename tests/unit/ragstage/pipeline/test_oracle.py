"""The gold-context oracle and the sufficiency judge on tiny-model runs of the mini corpus."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import MINI, CountingGenerator, mini_data, tiny_hf_generator, tiny_models

from ragstage.attribution import diagnose
from ragstage.oracles import sufficiency
from ragstage.pipeline import (
    BM25Retriever,
    DataError,
    NoReranker,
    Pipeline,
    components,
    data_for_receipt,
    generator_from_receipt,
    gold_context_oracle,
)
from ragstage.pipeline.judge import judge_sufficiency, parse_verdict
from ragstage.pipeline.models import ModelRef
from ragstage.runs import check_run, load_run
from ragstage.runs.labels import default_pairs
from ragstage.stats import agreement
from ragstage.trace import read_traces

DATA = mini_data()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle")
    pipeline = Pipeline(BM25Retriever(DATA.corpus), NoReranker(), tiny_hf_generator(), budget=700,
                        cache_dir=root / "cache")
    pipeline.run(DATA.queries, DATA.qrels, root / "runs" / "bm25", data_info={"source": DATA.source, **DATA.meta})
    return root


def test_the_oracle_puts_the_gold_first_and_is_a_run_of_its_own(run):
    generator = tiny_hf_generator()
    counting = CountingGenerator(generator)
    result = gold_context_oracle(run / "runs" / "bm25", counting, cache_dir=run / "cache")
    assert result.folder == run / "runs" / "bm25_gold-context_oracle"
    original = {t.query_id: t for t in read_traces(run / "runs" / "bm25" / "traces.jsonl")}
    oracle = list(read_traces(result.traces))
    assert [t.query_id for t in oracle] == list(original)
    for t in oracle:
        assert t.pipeline == "bm25 + gold-context oracle" and t.reranked is None
        assert t.prompt[0] == t.gold[0] and t.retrieved == t.prompt
        assert set(t.prompt[1:]) <= set(original[t.query_id].prompt)  # then the run's own passages
        assert t.meta["oracle"] == "gold-context" and t.meta["prompt_tokens"] <= 700
        assert diagnose(t).stage.value in ("none", "generation")
    # a question whose oracle prompt is its original prompt is answered from the cache
    same = sum(t.prompt == original[t.query_id].prompt for t in oracle)
    assert same > 0 and result.generated == len(oracle) - same == len(counting.seen)
    assert result.receipt["oracle"]["run_pipeline"] == "bm25" and result.receipt["generation_only"]
    assert json.loads((result.folder / "receipt.json").read_text())["pipeline"] == "bm25 + gold-context oracle"
    # resumable like any run: nothing is generated twice
    assert gold_context_oracle(run / "runs" / "bm25", generator, cache_dir=run / "cache").generated == 0
    runs = load_run(run / "runs")
    assert runs.labels == ["bm25", "bm25 + gold-context oracle"] and check_run(runs) == []
    assert default_pairs(runs.labels) == [("bm25", "bm25 + gold-context oracle")]


def test_the_oracle_refuses_another_corpus(run, tmp_path):
    generator = tiny_hf_generator()
    other = DATA.limit(2)
    edited = type(other)({**other.corpus, "1001": {"title": "x", "text": "changed"}}, other.queries, other.qrels)
    with pytest.raises(DataError, match="not the one the run was made on"):
        gold_context_oracle(run / "runs" / "bm25", generator, data=edited, out=tmp_path / "o",
                            cache_dir=tmp_path)


def test_data_for_receipt_finds_the_bundled_corpus_by_its_hash():
    receipt = {"data": {"source": "/nowhere/mini_scifact", "split": "test", "corpus_hash": DATA.corpus_hash}}
    assert data_for_receipt(receipt).corpus_hash == DATA.corpus_hash
    with pytest.raises(DataError, match="no corpus with hash 000000000000"):
        data_for_receipt({"data": {"source": "/nowhere", "corpus_hash": "0" * 64}})


def test_generator_from_receipt_rebuilds_the_stand_in_or_the_named_model(monkeypatch, tmp_path):
    fake = ModelRef(str(tmp_path), gguf_file="q.gguf", stand_in_for="Qwen/Qwen2.5-1.5B-Instruct", label="STAND-IN q")
    monkeypatch.setattr(components, "qwen_coder_standin", lambda cache_dir=None: fake)
    described = {"model": {**fake.describe(), "source": "/elsewhere"}, "dtype": None,
                 "decoding": {"greedy": True, "max_new_tokens": 7}}
    rebuilt = generator_from_receipt({"generator": described})
    assert rebuilt.ref == fake and rebuilt.max_new_tokens == 7
    renamed = {**described, "model": {**described["model"], "name": "STAND-IN other"}}
    with pytest.raises(ValueError, match="made with the stand-in 'STAND-IN other'"):
        generator_from_receipt({"generator": renamed})
    hub = {"model": ModelRef("org/model").describe(), "dtype": "float16", "decoding": {"max_new_tokens": 3}}
    assert generator_from_receipt({"generator": hub}).ref.source == "org/model"


def test_cli_runs_the_oracle_beside_the_run(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", "run", "--data", str(MINI), "--limit", "2",
                           "--generator", str(tiny_models().generator), "--device", "cpu", "--budget", "600",
                           "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "bm25"),
                           "--oracle", "gold-context"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("bm25: 2 traces") and lines[1].startswith("bm25 + gold-context oracle: 2 traces")
    assert (tmp_path / "bm25_gold-context_oracle" / "receipt.json").exists()


@pytest.mark.parametrize("reply, verdict", [("YES", True), ("no.", False), ("**Yes**, it does", True),
                                            ("Answer: NO", False), ("ID: 1001", None), ("yesterday", None)])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) is verdict


class GoldSpotter(CountingGenerator):
    """A stand-in judge for the plumbing test: YES when the gold abstract's id is in the text."""

    def generate(self, texts):
        self.seen.extend(texts)
        return ["YES" if any(f"[ID {g}]" in text for g in ("1001", "1021", "1034", "1035")) else "NO"
                for text in texts]


def test_judge_sees_the_saved_passages_and_sits_beside_the_exact_rule(run):
    generator = tiny_hf_generator()
    judge = GoldSpotter(generator)
    table = judge_sufficiency(run / "runs" / "bm25", judge, cache_dir=run / "cache")
    traces = list(read_traces(run / "runs" / "bm25" / "traces.jsonl"))
    assert list(table.query_id) == [t.query_id for t in traces]
    assert table.exact.sum() == sufficiency(traces)[0]
    assert judge.seen and all("Does one of these abstracts" in text for text in judge.seen)
    # the spotter knows four gold ids; on claims 1-4 it agrees with the exact rule
    first_four = table[table.query_id.isin(["1", "2", "3", "4"])]
    assert list(first_four.judge) == list(first_four.exact)
    again = judge_sufficiency(run / "runs" / "bm25", CountingGenerator(generator, fail_after=0),
                              cache_dir=run / "cache")
    assert again.reply.tolist() == table.reply.tolist()  # cached: asked again, the judge is not called


verdicts = st.lists(st.tuples(st.booleans(), st.none() | st.booleans()), min_size=1, max_size=60)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels' standard errors of a degenerate table
@settings(deadline=None)  # the first call imports statsmodels
@given(verdicts)
def test_agreement_counts_and_kappa_match_statsmodels(pairs):
    from statsmodels.stats.inter_rater import cohens_kappa

    exact, judge = [e for e, _ in pairs], [j for _, j in pairs]
    result = agreement(exact, judge)
    readable = [(e, j) for e, j in pairs if j is not None]
    assert result.n == len(readable) and result.unreadable == len(pairs) - len(readable)
    assert result.agree == sum(e == j for e, j in readable)
    if not readable:
        assert math.isnan(result.kappa)
        return
    table = [[result.both_yes, result.exact_only], [result.judge_only, result.both_no]]
    if math.isnan(result.kappa):  # chance agreement is perfect: both raters gave the same single answer
        assert len({e for e, _ in readable} | {j for _, j in readable}) == 1
    else:
        assert result.kappa == pytest.approx(cohens_kappa(table).kappa, abs=1e-9)
        po, pe = result.agree / result.n, sum(  # the textbook formula, written out once more
            (sum(e == v for e, _ in readable) / result.n) * (sum(j == v for _, j in readable) / result.n)
            for v in (True, False))
        assert result.kappa == pytest.approx((po - pe) / (1 - pe), abs=1e-9)
    low, high = result.interval
    assert low <= result.agree / result.n <= high


def test_agreement_needs_pairs():
    with pytest.raises(ValueError, match="must pair up"):
        agreement([True], [True, False])
