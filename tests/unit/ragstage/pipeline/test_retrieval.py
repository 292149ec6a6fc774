"""BM25 (both engines) and dense retrieval on the mini corpus."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import mini_data, tiny_models

from ragstage.pipeline import BM25Retriever, DenseRetriever, Embedder, tokenize
from ragstage.pipeline.bm25_sparse import SparseBM25

DATA = mini_data()


def test_tokenizer_lowercases_splits_and_drops_stopwords():
    assert tokenize("The IL-6 level was NOT raised in 12 of the mice.") == ["il", "6", "level", "not", "raised",
                                                                              "12", "mice"]


def test_bm25_misses_the_claim_without_shared_terms_and_finds_the_easy_ones():
    hits = BM25Retriever(DATA.corpus).retrieve(DATA.queries, k=100)
    assert "1001" not in [d for d, _ in hits["1"]]
    for qid in ("7", "8", "9", "10", "11", "12"):
        assert hits[qid][0][0] == next(iter(DATA.qrels[qid]))
    for ranked in hits.values():
        scores = [s for _, s in ranked]
        assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert len(BM25Retriever(DATA.corpus).retrieve({"x": DATA.queries["7"]}, k=3)["x"]) == 3


def _check_same_as_rank_bm25(docs, queries, k1=0.9, b=0.4):
    from rank_bm25 import BM25Okapi

    reference = BM25Okapi(docs, k1=k1, b=b)
    sparse = SparseBM25(docs, k1=k1, b=b)
    batch = sparse.get_batch_scores(queries)
    for query, row in zip(queries, batch):
        np.testing.assert_allclose(row, reference.get_scores(query), rtol=1e-12, atol=1e-12)


def test_sparse_engine_ranks_exactly_like_rank_bm25_on_the_mini_corpus():
    reference = BM25Retriever(DATA.corpus, engine="rank_bm25").retrieve(DATA.queries)
    sparse = BM25Retriever(DATA.corpus, engine="sparse").retrieve(DATA.queries)
    assert {q: [d for d, _ in h] for q, h in reference.items()} == {q: [d for d, _ in h] for q, h in sparse.items()}
    docs = [tokenize(f"{d['title']} {d['text']}") for d in DATA.corpus.values()]
    _check_same_as_rank_bm25(docs, [tokenize(q) for q in DATA.queries.values()])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=12), min_size=2, max_size=15),
       st.lists(st.lists(st.sampled_from("abcdefgxy"), max_size=6), min_size=1, max_size=4))
def test_sparse_engine_matches_rank_bm25_including_the_idf_floor(docs, queries):
    # a 7-letter vocabulary over up to 15 documents puts many terms in more than half of
    # them: negative idfs, floored at epsilon * mean idf; repeated query terms count twice
    _check_same_as_rank_bm25(docs, queries)
    _check_same_as_rank_bm25(docs, queries, k1=1.5, b=0.75)


def test_dense_retrieval_ranks_by_cosine_and_caches_corpus_vectors(tmp_path, monkeypatch):
    embedder = Embedder(str(tiny_models().embedder), device="cpu", cache_dir=tmp_path)
    hits = DenseRetriever(DATA.corpus, embedder).retrieve(DATA.queries, k=7)
    assert all(len(h) == 7 for h in hits.values())
    q = embedder.encode([DATA.queries["5"]])[0]
    d = embedder.encode([f"{DATA.corpus[i]['title']} {DATA.corpus[i]['text']}" for i, _ in hits["5"]])
    np.testing.assert_allclose([s for _, s in hits["5"]], d @ q, atol=1e-5)
    assert list(np.round(d @ q, 5)) == sorted(np.round(d @ q, 5), reverse=True)
    assert len(list((tmp_path / "embeddings").glob("*.npz"))) == 1

    encoded: list[int] = []
    original = Embedder.encode
    monkeypatch.setattr(Embedder, "encode", lambda self, texts, desc=None: encoded.append(len(texts))
                        or original(self, texts, desc))
    fresh = Embedder(str(tiny_models().embedder), device="cpu", cache_dir=tmp_path)
    again = DenseRetriever(dict(reversed(list(DATA.corpus.items()))), fresh).retrieve(DATA.queries, k=100)
    assert encoded == [13]  # only the queries: corpus vectors came from the cache, re-ordered
    full = DenseRetriever(DATA.corpus, embedder).retrieve(DATA.queries, k=100)
    for qid in DATA.queries:  # same score for every document (tie order follows corpus order)
        assert dict(again[qid]) == pytest.approx(dict(full[qid]), abs=1e-6)
    assert DenseRetriever(DATA.corpus, fresh).short_name == "dense"
