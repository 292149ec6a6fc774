"""The judge's agreement with gold: the confusion matrix, and Cohen's kappa against scikit-learn and statsmodels."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.attribution import BUCKETS
from ragstage.ppi.agreement import confusion

few = st.sampled_from(["retrieval", "reranking", "generation", "none"])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels' kappa variance at tiny n
@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(few, few), min_size=1, max_size=80))
def test_kappa_is_sklearn_s_and_statsmodels(pairs):
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    gold, judge = [g for g, _ in pairs], [j for _, j in pairs]
    matrix = confusion(gold, judge, BUCKETS)
    if math.isnan(matrix.kappa):
        assert len(set(gold) | set(judge)) == 1
        return
    assert matrix.kappa == pytest.approx(cohen_kappa_score(gold, judge), abs=1e-9)
    if len(matrix.labels) > 1:
        assert matrix.kappa == pytest.approx(cohens_kappa(np.array(matrix.counts)).kappa, abs=1e-9)
    assert matrix.n == len(pairs)
    assert matrix.agree == sum(g == j for g, j in pairs)


def test_rows_are_gold_and_columns_judge_in_bucket_order():
    matrix = confusion(["retrieval", "retrieval", "none", "generation"], ["reranking", "retrieval", "none", "none"],
                       BUCKETS)
    assert matrix.labels == ("retrieval", "reranking", "generation", "none")
    assert matrix.row("retrieval") == {"retrieval": 1, "reranking": 1, "generation": 0, "none": 0}
    assert matrix.row("reranking") == {"retrieval": 0, "reranking": 0, "generation": 0, "none": 0}
    frame = matrix.to_frame()
    assert frame.loc["generation", "none"] == 1 and frame.index.name == "gold"


def test_an_unknown_bucket_or_unpaired_lists_are_refused():
    with pytest.raises(ValueError, match="not among the labels"):
        confusion(["retrieval"], ["oops"], BUCKETS)
    with pytest.raises(ValueError, match="pair up"):
        confusion(["retrieval"], [], BUCKETS)
    assert math.isnan(confusion([], []).kappa)
