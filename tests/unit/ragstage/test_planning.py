"""Power and sample size of the exact McNemar test, checked three independent ways.

The exact power is compared with a brute-force sum over every (fixed, broken) outcome for small
n, with a seeded Monte-Carlo simulation for realistic n, and with the normal approximation
(statsmodels' ``normal_power_het``, Connor's formula) for large n.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import multinomial
from statsmodels.stats.power import normal_power_het

from ragstage.planning import (
    critical_count,
    mcnemar_power,
    mcnemar_power_normal,
    mcnemar_sample_size,
    mcnemar_sample_size_normal,
    power_curve,
)
from ragstage.stats import mcnemar

# The published MiniLM reranker comparison: 32 of 300 claims fixed, 9 broken.
FIXED, BROKEN = 32 / 300, 9 / 300


def brute_force_power(n, p_fixed, p_broken, alpha):
    """Sum the multinomial probability of every (fixed, broken) outcome the test rejects."""
    total = 0.0
    rest = max(0.0, 1 - p_fixed - p_broken)
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if mcnemar(b, c) <= alpha:
                total += multinomial.pmf([b, c, n - b - c], n, [p_fixed, p_broken, rest])
    return total


# Shares below 1e-9 are zero: scipy's binomial overflows on products near the subnormal range.
unit = st.floats(0, 1).map(lambda x: 0.0 if x < 1e-9 else x)
shares = st.tuples(unit, unit).map(lambda t: (t[0] * (1 - t[1] / 2), t[1] * (1 - t[0]) / 2))


def test_critical_count_is_the_rejection_region_of_mcnemar():
    for alpha in (0.01, 0.05, 0.1, 0.5):
        got = critical_count(np.arange(0, 201), alpha)
        for d, k in enumerate(got):
            rejected = [b for b in range(d // 2 + 1) if mcnemar(b, d - b) <= alpha]
            assert k == (max(rejected) if rejected else -1), (alpha, d)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 24), shares, st.sampled_from([0.01, 0.05, 0.1]))
def test_exact_power_equals_brute_force(n, ps, alpha):
    p_fixed, p_broken = ps
    assert mcnemar_power(n, p_fixed, p_broken, alpha) == pytest.approx(
        brute_force_power(n, p_fixed, p_broken, alpha), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2000), st.floats(0, 0.5, allow_subnormal=False), st.sampled_from([0.01, 0.05]))
def test_without_a_difference_the_power_is_the_size_at_most_alpha(n, p, alpha):
    assert 0 <= mcnemar_power(n, p, p, alpha) <= alpha + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), shares)
def test_power_is_symmetric_and_a_probability(n, ps):
    p_fixed, p_broken = ps
    power = mcnemar_power(n, p_fixed, p_broken)
    assert 0 <= power <= 1 + 1e-12
    assert power == pytest.approx(mcnemar_power(n, p_broken, p_fixed), abs=1e-12)


@pytest.mark.parametrize("n", [100, 195, 300])
def test_exact_power_matches_a_seeded_simulation(n):
    reps = 20_000
    draws = np.random.default_rng(2026).multinomial(n, [FIXED, BROKEN, 1 - FIXED - BROKEN], size=reps)
    simulated = np.mean([mcnemar(int(b), int(c)) <= 0.05 for b, c, _ in draws])
    exact = mcnemar_power(n, FIXED, BROKEN)
    assert abs(simulated - exact) < 4 * math.sqrt(exact * (1 - exact) / reps)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100_000), shares, st.sampled_from([0.01, 0.05, 0.1]))
def test_normal_power_matches_statsmodels(n, ps, alpha):
    p_fixed, p_broken = ps
    flip, diff = p_fixed + p_broken, p_fixed - p_broken
    assume(flip > 1e-6 and flip - diff * diff > 1e-9)
    expected = normal_power_het(diff, n, alpha, std_null=math.sqrt(flip),
                                std_alternative=math.sqrt(flip - diff * diff))
    assert mcnemar_power_normal(n, p_fixed, p_broken, alpha) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(shares, st.sampled_from([0.7, 0.8, 0.9]), st.sampled_from([0.01, 0.05]))
def test_connor_sample_size_is_the_smallest_n_of_the_normal_power(ps, power, alpha):
    p_fixed, p_broken = ps
    assume(abs(p_fixed - p_broken) > 0.01 and p_fixed + p_broken - (p_fixed - p_broken) ** 2 > 1e-9)
    n = mcnemar_sample_size_normal(p_fixed, p_broken, power, alpha)
    assert mcnemar_power_normal(n, p_fixed, p_broken, alpha) >= power - 1e-9
    if n > 1:  # the formula leaves out the far tail, which adds at most a hair below n
        assert mcnemar_power_normal(n - 1, p_fixed, p_broken, alpha) < power + 1e-4


@pytest.mark.parametrize("p_fixed, p_broken", [(FIXED, BROKEN), (21 / 300, 13 / 300), (31 / 300, 16 / 300),
                                               (0.10, 0.05), (0.05, 0.01)])
def test_exact_and_normal_agree_for_large_n(p_fixed, p_broken):
    exact_n = mcnemar_sample_size(p_fixed, p_broken)
    normal_n = mcnemar_sample_size_normal(p_fixed, p_broken)
    assert normal_n <= exact_n <= 1.1 * normal_n  # the exact test is a little conservative
    curve = power_curve([exact_n, 2 * exact_n], p_fixed, p_broken)
    # The normal approximation is a little optimistic near 80% (by 0.018 to 0.030 here).
    assert np.allclose(curve.exact, curve.normal, atol=0.035)


def check_sample_size(p_fixed, p_broken, power, alpha):
    stays = mcnemar_sample_size(p_fixed, p_broken, power, alpha)
    first = mcnemar_sample_size(p_fixed, p_broken, power, alpha, rule="first")
    curve = power_curve(range(1, 2 * stays + 1), p_fixed, p_broken, alpha).exact.to_numpy()
    reach = curve >= power
    assert reach[first - 1] and not reach[:first - 1].any()
    assert reach[stays - 1:2 * stays].all()
    if stays > 1:  # one question fewer: some size in its window falls short
        assert not reach[stays - 2:2 * stays - 2].all()
    assert first <= stays
    return first, stays


@settings(max_examples=40, deadline=None)
@given(shares, st.sampled_from([0.5, 0.8, 0.9]), st.sampled_from([0.01, 0.05]))
def test_sample_size_follows_its_documented_rules(ps, power, alpha):
    p_fixed, p_broken = ps
    assume(abs(p_fixed - p_broken) > 0.08)
    check_sample_size(p_fixed, p_broken, power, alpha)


def test_the_two_rules_differ_when_every_question_flips():
    first, stays = check_sample_size(0.6, 0.4, 0.8, 0.05)
    assert first < stays


def test_published_reranker_effect_needs_fewer_questions_than_the_run_had():
    n = mcnemar_sample_size(FIXED, BROKEN)
    assert n < 300 and mcnemar_power(300, FIXED, BROKEN) > 0.9
    assert mcnemar_power(n, FIXED, BROKEN) >= 0.8 > mcnemar_power(n - 1, FIXED, BROKEN)


def test_power_curve_columns_and_order():
    curve = power_curve([300, 10, 100], FIXED, BROKEN)
    assert list(curve.columns) == ["n", "exact", "normal"] and list(curve.n) == [300, 10, 100]
    assert curve.exact.iloc[0] == pytest.approx(mcnemar_power(300, FIXED, BROKEN), abs=1e-12)
    assert curve.normal.iloc[1] == mcnemar_power_normal(10, FIXED, BROKEN)


@pytest.mark.parametrize("call, match", [
    (lambda: mcnemar_power(0, 0.1, 0.05), "n must be"),
    (lambda: mcnemar_power(10.5, 0.1, 0.05), "n must be"),
    (lambda: mcnemar_power(True, 0.1, 0.05), "n must be"),
    (lambda: mcnemar_power(10, 0.7, 0.5), "cannot exceed 1"),
    (lambda: mcnemar_power(10, -0.1, 0.05), "p_fixed"),
    (lambda: mcnemar_power(10, 0.1, 0.05, alpha=0), "alpha"),
    (lambda: mcnemar_power_normal(10, 0.1, 1.5), "p_broken"),
    (lambda: mcnemar_sample_size(0.1, 0.1), "no difference"),
    (lambda: mcnemar_sample_size(0.1, 0.05, power=1.0), "power"),
    (lambda: mcnemar_sample_size(0.1, 0.05, rule="last"), "rule"),
    (lambda: mcnemar_sample_size(0.1, 0.05, n_limit=50), "n_limit = 50"),
    (lambda: mcnemar_sample_size(0.1, 0.05, rule="first", n_limit=50), "n_limit = 50"),
    (lambda: mcnemar_sample_size_normal(0.2, 0.2), "no difference"),
    (lambda: power_curve([], 0.1, 0.05), "at least one"),
])
def test_bad_input_raises_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_edges():
    assert mcnemar_power(50, 0.0, 0.0) == 0.0 == mcnemar_power_normal(50, 0.0, 0.0)
    assert mcnemar_power(10, 1.0, 0.0) == pytest.approx(1.0)  # all ten flip one way: p = 0.002
    assert mcnemar_power_normal(10, 1.0, 0.0) == 1.0
