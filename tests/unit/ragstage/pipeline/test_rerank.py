"""The rerankers: none, a model, rank fusion; an unavailable model is a service failure (ragstage.pipeline.rerank)."""

from __future__ import annotations

import pytest
from pipeline_helpers import mini_data, tiny_models

from ragstage.pipeline import (
    BM25Retriever,
    CrossEncoderReranker,
    NoReranker,
    RankFusionReranker,
    RerankerUnavailable,
)

DATA = mini_data()


CANDIDATES = [(f"10{i}", 10.0 - i) for i in range(61, 67, 1)] + [("1071", 1.0), ("1081", 0.5)]


def test_no_reranker_is_the_retrievers_own_cut():
    assert NoReranker().rerank("q", CANDIDATES, DATA.corpus, 3) == CANDIDATES[:3]


@pytest.mark.parametrize("make", [
    lambda: CrossEncoderReranker(str(tiny_models().cross_encoder), device="cpu"),
    lambda: RankFusionReranker(str(tiny_models().embedder), device="cpu"),
])
def test_model_rerankers_reorder_candidates_and_cut(make, tmp_path):
    reranker = make()
    if isinstance(reranker, RankFusionReranker):
        reranker.embedder.cache_dir = tmp_path
    candidates = [(d, 0.0) for d in ("1061", "1062", "1071", "1072", "1081", "1091")]
    out = reranker.rerank(DATA.queries["7"], candidates, DATA.corpus, 4)
    assert len(out) == 4 and {d for d, _ in out} <= {d for d, _ in candidates}
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert reranker.rerank("q", [], DATA.corpus, 4) == []


def _ranks(scores, positive_only=False):
    """1-based ranks by score, ties in the given order; None for an unranked item (independent of the code)."""
    ranked = sorted((i for i in range(len(scores)) if scores[i] > 0 or not positive_only),
                    key=lambda i: (-round(float(scores[i]), 9), i))
    return {i: r for r, i in enumerate(ranked, start=1)}


def test_rank_fusion_adds_reciprocal_ranks_of_bm25_and_cosine(tmp_path):
    fusion = RankFusionReranker(str(tiny_models().embedder), device="cpu", cache_dir=tmp_path, k=5)
    query = DATA.queries["7"]
    ids = ["1061", "1062", "1071", "1072", "1081", "1091", "1121"]
    lexical = BM25Retriever(DATA.corpus).scores(query, ids)
    vectors = fusion.embedder.corpus_matrix(DATA.corpus)
    row = {d: i for i, d in enumerate(DATA.corpus)}
    dense = vectors[[row[d] for d in ids]] @ fusion.embedder.encode([query])[0]
    by_bm25, by_dense = _ranks(lexical, positive_only=True), _ranks(dense)
    assert len(by_bm25) < len(ids)  # some candidates share no term: BM25 says nothing about them
    expected = [sum(1 / (5 + ranks[i]) for ranks in (by_bm25, by_dense) if i in ranks) for i in range(len(ids))]
    out = fusion.rerank(query, [(d, 0.0) for d in ids], DATA.corpus, len(ids))
    assert dict(out) == pytest.approx(dict(zip(ids, expected)))
    assert [d for d, _ in out] == [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-round(expected[i], 9), i))]
    assert "not a cross-encoder" in fusion.describe()["kind"] and fusion.describe()["k"] == 5
    with pytest.raises(ValueError, match="at least 1"):
        RankFusionReranker(str(tiny_models().embedder), k=0)


def test_bm25_scores_for_given_ids_match_retrieval():
    bm25 = BM25Retriever(DATA.corpus)
    hits = dict(bm25.retrieve({"q": DATA.queries["9"]}, k=100)["q"])
    ids = list(DATA.corpus)
    scores = dict(zip(ids, bm25.scores(DATA.queries["9"], ids)))
    assert {d: s for d, s in scores.items() if s > 0} == pytest.approx(hits)


def test_missing_cross_encoder_is_a_service_failure_not_a_crash(tmp_path):
    reranker = CrossEncoderReranker(str(tmp_path / "gone"), device="cpu")
    for _ in range(2):  # the failure is remembered, and reported on every call
        with pytest.raises(RerankerUnavailable, match="gone"):
            reranker.rerank("q", CANDIDATES, DATA.corpus, 3)
