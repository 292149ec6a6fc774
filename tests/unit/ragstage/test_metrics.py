"""Per-stage metrics: values by hand, and None where a metric does not apply."""

import math

import pytest

from ragstage.metrics import (
    claim_support,
    context_precision,
    evidence_retention,
    hit_at_k,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    refusal_accuracy,
)


def test_recall_and_hit():
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, {"b", "d"}, 2) == 0.5
    assert recall_at_k(ranked, {"b", "d"}, 4) == 1.0
    assert hit_at_k(ranked, {"d"}, 3) is False and hit_at_k(ranked, {"d"}, 4) is True
    assert recall_at_k(ranked, [], 3) is None and hit_at_k(ranked, [], 3) is None
    with pytest.raises(ValueError):
        recall_at_k(ranked, {"a"}, 0)


def test_reciprocal_rank():
    assert reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a", "b", "c"], {"c"}, k=2) == 0.0
    assert reciprocal_rank(["a"], set()) is None
    with pytest.raises(ValueError):
        reciprocal_rank(["a"], {"a"}, k=0)


def test_ndcg_by_hand():
    # gold at rank 2 of 3: DCG = 1/log2(3), IDCG = 1
    assert ndcg_at_k(["x", "g", "y"], {"g"}, 3) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["g", "x"], {"g"}, 2) == 1.0
    graded = {"a": 2, "b": 1}
    expected = (1 / 1 + 2 / math.log2(3)) / (2 / 1 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], graded, 2) == pytest.approx(expected)
    assert ndcg_at_k(["a"], {}, 1) is None


def test_retention_support_precision():
    assert evidence_retention(["a"], ["a", "b"]) == 0.5
    assert evidence_retention(["a"], []) is None
    assert claim_support([True, False, True, True]) == 0.75
    assert claim_support([]) is None
    assert context_precision(["a", "b", "c", "d"], {"a"}) == 0.25
    assert context_precision(["a", "b"], {"a"}, tokens={"a": 100, "b": 300}) == 0.25
    assert context_precision([], {"a"}) is None
    with pytest.raises(ValueError):
        context_precision(["a", "b"], {"a"}, tokens={"a": 1})


def test_refusal_accuracy_exposes_a_model_that_refuses_everything():
    answerable = [True, True, True, False]
    always = refusal_accuracy(answerable, [True] * 4)
    assert always["correct_refusal_rate"] == 1.0 and always["unnecessary_refusal_rate"] == 1.0
    assert always["accuracy"] == 0.25
    good = refusal_accuracy(answerable, [False, False, False, True])
    assert good["accuracy"] == 1.0
    with pytest.raises(ValueError):
        refusal_accuracy([True], [])
