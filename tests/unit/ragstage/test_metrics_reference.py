"""The ranking metrics checked against ir-measures (trec_eval through pytrec_eval) on random runs.

Conventions of the reference that the generated runs respect:

* trec_eval orders a run by score, breaking ties by document id, not by list position: every
  run here gets distinct scores that decrease along the ranked list, so both orders agree;
* a document counts as relevant when its qrel is at least 1 (trec_eval's default relevance
  level); nDCG uses the qrel itself as the gain;
* a run holds each document once (a dict), so the ranked lists have no repeated ids.

One real difference, kept on purpose and documented in :mod:`ragstage.metrics`: for a query
with no relevant document trec_eval reports 0, ragstage reports ``None`` (nothing to find is
not a miss, and must not pull a mean down).
"""

import ir_measures
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ir_measures import RR, R, Success, nDCG

from ragstage.metrics import hit_at_k, ndcg_at_k, recall_at_k, reciprocal_rank

DOCS = [f"d{i}" for i in range(12)]
qrels_st = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=8)
ranked_st = st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True)
k_st = st.integers(1, 14)


def reference(measures: list, qrels: dict[str, int], ranked: list[str]) -> dict[str, float]:
    """ir-measures' value of each measure for one query ("q") ranked as given."""
    run = {"q": {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}}  # distinct, decreasing
    values = {str(m.measure): m.value for m in ir_measures.iter_calc(measures, {"q": qrels}, run)}
    assert set(values) == {str(m) for m in measures}
    return values


def relevant(qrels: dict[str, int]) -> set[str]:
    return {doc for doc, rel in qrels.items() if rel >= 1}


@given(qrels_st.filter(relevant), ranked_st, k_st)
def test_recall_hit_and_reciprocal_rank_match_trec_eval(qrels, ranked, k):
    ref = reference([R @ k, Success @ k, RR, RR @ k], qrels, ranked)
    rel = relevant(qrels)
    assert recall_at_k(ranked, rel, k) == pytest.approx(ref[f"R@{k}"])
    assert float(hit_at_k(ranked, rel, k)) == ref[f"Success@{k}"]
    assert reciprocal_rank(ranked, rel) == pytest.approx(ref["RR"])
    assert reciprocal_rank(ranked, rel, k) == pytest.approx(ref[f"RR@{k}"])


@given(qrels_st.filter(relevant), ranked_st, k_st)
def test_graded_ndcg_matches_trec_eval(qrels, ranked, k):
    ref = reference([nDCG @ k], qrels, ranked)
    assert ndcg_at_k(ranked, qrels, k) == pytest.approx(ref[f"nDCG@{k}"])


@given(qrels_st.filter(relevant), ranked_st, k_st)
def test_binary_ndcg_from_a_set_matches_trec_eval_on_binary_qrels(qrels, ranked, k):
    binary = {doc: int(rel >= 1) for doc, rel in qrels.items()}
    ref = reference([nDCG @ k], binary, ranked)
    assert ndcg_at_k(ranked, relevant(qrels), k) == pytest.approx(ref[f"nDCG@{k}"])


@given(st.dictionaries(st.sampled_from(DOCS), st.just(0), max_size=4), ranked_st, k_st)
def test_no_relevant_document_is_none_here_and_zero_in_trec_eval(qrels, ranked, k):
    ref = reference([R @ k, Success @ k, RR, nDCG @ k], qrels, ranked)
    assert set(ref.values()) == {0.0}
    assert recall_at_k(ranked, relevant(qrels), k) is None
    assert hit_at_k(ranked, relevant(qrels), k) is None
    assert reciprocal_rank(ranked, relevant(qrels)) is None
    assert ndcg_at_k(ranked, qrels, k) is None
