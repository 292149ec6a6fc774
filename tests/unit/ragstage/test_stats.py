"""Statistics, checked against the published figures and against scipy/statsmodels."""

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from ragstage import bootstrap_mean_ci, format_rate, half_width, holm, mcnemar, normal_interval, paired_counts
from ragstage.stats import Z95, cohen_kappa, sample_size, wilson


def test_published_eleven_of_fifteen():
    low, high = wilson(11, 15)
    assert (round(low, 3), round(high, 3)) == (0.480, 0.891)
    nlow, nhigh = normal_interval(11, 15)
    assert round(nhigh, 3) == 0.957 and nhigh > 0.95
    assert round((nhigh - nlow) / 2, 3) == 0.224


def test_published_half_widths_and_plan():
    assert round(half_width(0.7, 15), 2) == 0.23
    assert round(half_width(0.7, 300), 3) == 0.052
    n = sample_size(0.7, 0.05)
    assert half_width(0.7, n) <= 0.05 < half_width(0.7, n - 1)


@pytest.mark.parametrize("b, c, p", [(32, 9, 0.0004), (21, 13, 0.23), (31, 16, 0.04), (4, 4, 1.0)])
def test_published_mcnemar(b, c, p):
    assert round(mcnemar(b, c), 4 if p < 0.001 else 2) == p


def test_published_prompt_change_mcnemar():
    assert f"{mcnemar(49, 5):.0e}" == "4e-10"


def test_published_generation_rate_interval():
    low, high = wilson(107, 207)
    assert (round(low, 2), round(high, 2)) == (0.45, 0.58)
    low, high = wilson(151, 300)
    assert (round(low, 2), round(high, 2)) == (0.45, 0.56)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_the_rate_and_stays_in_unit_interval(kn):
    k, n = kn
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_statsmodels(kn):
    k, n = kn
    expected = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert np.allclose(wilson(k, n), expected, atol=1e-6)
    # statsmodels clips the normal interval to [0, 1]; ours is left unclipped on purpose.
    clipped = np.clip(normal_interval(k, n), 0, 1)
    assert np.allclose(clipped, proportion_confint(k, n, alpha=0.05, method="normal"), atol=1e-6)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_is_symmetric_and_matches_scipy_and_statsmodels(b, c):
    p = mcnemar(b, c)
    assert p == mcnemar(c, b)
    assert 0.0 <= p <= 1.0
    if b + c:
        assert math.isclose(p, binomtest(b, b + c, 0.5).pvalue, rel_tol=1e-9, abs_tol=1e-15)
    sm = sm_mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert math.isclose(p, sm, rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize("call", [
    lambda: wilson(5, 4), lambda: wilson(-1, 4), lambda: wilson(0, 0), lambda: wilson(1.5, 4),
    lambda: wilson(True, 4), lambda: wilson(1, 4, z=0), lambda: normal_interval(3, 2),
    lambda: half_width(1.2, 10), lambda: half_width(0.5, 0), lambda: sample_size(0.5, 0),
    lambda: sample_size(-0.1, 0.05), lambda: mcnemar(-1, 3), lambda: mcnemar(2.5, 3),
])
def test_impossible_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_mcnemar_without_discordant_pairs_is_one():
    assert mcnemar(0, 0) == 1.0


def test_paired_counts():
    a = [True, True, False, False, True]
    b = [True, False, True, False, True]
    assert paired_counts(a, b) == {"both_right": 2, "fixed": 1, "broken": 1, "both_wrong": 1}
    with pytest.raises(ValueError):
        paired_counts([True], [True, False])
    with pytest.raises(ValueError):
        paired_counts([], [])


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = list(np.random.default_rng(0).random(30))
    first = bootstrap_mean_ci(values, seed=3)
    assert first == bootstrap_mean_ci(values, seed=3)
    mean, low, high = first
    assert mean == pytest.approx(np.mean(values)) and low <= mean <= high
    assert bootstrap_mean_ci(values, seed=4) != first
    assert bootstrap_mean_ci([0.5] * 5) == (0.5, 0.5, 0.5)


def test_bootstrap_rejects_bad_input():
    for bad in ([], [float("nan")]):
        with pytest.raises(ValueError):
            bootstrap_mean_ci(bad)
    with pytest.raises(ValueError):
        bootstrap_mean_ci([1.0], level=1.0)


def test_default_z_is_the_95_percent_quantile():
    from scipy.stats import norm

    assert Z95 == pytest.approx(norm.ppf(0.975), abs=1e-6)


# -- format_rate ---------------------------------------------------------------------------------
def test_format_rate_is_counts_share_and_wilson():
    assert format_rate(11, 15) == "11/15 = 0.733 (Wilson 0.480 to 0.891)"
    assert format_rate(107, 300, digits=2) == "107/300 = 0.36 (Wilson 0.30 to 0.41)"
    assert format_rate(0, 5) == "0/5 = 0.000 (Wilson 0.000 to 0.434)"


@pytest.mark.parametrize("call", [lambda: format_rate(3, 2), lambda: format_rate(1, 2, digits=-1),
                                  lambda: format_rate(1, 2, digits=1.5)])
def test_format_rate_rejects_bad_input(call):
    with pytest.raises(ValueError):
        call()


# -- Holm ------------------------------------------------------------------------------------------
def test_holm_on_the_five_published_comparisons():
    ps = [mcnemar(32, 9), mcnemar(21, 13), mcnemar(31, 16), mcnemar(4, 4), mcnemar(49, 5)]
    adjusted = holm(ps)
    # 0.040 is the third smallest of five: times 3, it no longer clears 0.05.
    assert adjusted[2] == pytest.approx(3 * ps[2]) and adjusted[2] > 0.05 > ps[2]
    assert adjusted[0] == pytest.approx(4 * ps[0]) and adjusted[4] == pytest.approx(5 * ps[4])
    assert [a <= 0.05 for a in adjusted] == [True, False, False, False, True]


def test_holm_keeps_the_adjusted_p_monotone_and_handles_edges():
    assert holm([]) == []
    assert holm([0.03]) == [0.03]
    assert holm([0.045, 0.02, 0.01]) == pytest.approx([0.045, 0.04, 0.03])
    # The largest p times 1 (0.04) would fall below the one before it (0.03 * 2): raised to 0.06.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    with pytest.raises(ValueError, match="p-value 1"):
        holm([0.1, float("nan")])
    with pytest.raises(ValueError, match="p-value 0"):
        holm([1.5])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0])), min_size=1, max_size=30))
def test_holm_matches_statsmodels(ps):
    # multipletests runs gc.collect() on every call (0.1 s each on a large heap); skip that.
    with mock.patch("gc.collect", return_value=0):
        expected = multipletests(ps, alpha=0.05, method="holm")[1]
    got = holm(ps)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert all(p <= a <= 1 for p, a in zip(ps, got))
    # Holm never rejects less than Bonferroni and never more than the uncorrected tests.
    assert all(min(1, len(ps) * p) >= a for p, a in zip(ps, got))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=60))
def test_cohen_kappa_of_a_table_is_sklearn_s_on_the_pairs_it_counts(pairs):
    from sklearn.metrics import cohen_kappa_score

    counts = [[sum(1 for p in pairs if p == (i, j)) for j in range(4)] for i in range(4)]
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    if len(set(first) | set(second)) == 1:
        assert math.isnan(cohen_kappa(counts))  # one answer throughout: chance agreement is perfect
    else:
        assert cohen_kappa(counts) == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)


def test_cohen_kappa_of_an_empty_table_is_nan():
    assert math.isnan(cohen_kappa([[0, 0], [0, 0]]))
