"""The PPI++ estimates against the reference implementation, ppi_py, to 1e-9; the planner against
ppi_py's power analysis and a simulation; the stratified, paired and joint variants by hand."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import REPO

from ragstage.ppi.means import (
    gold_needed,
    indicator_correlation,
    indicator_moments,
    joint_intervals,
    judge_bias_pvalues,
    moments,
    ppi_correlation,
    ppi_from_moments,
    ppi_mean,
    ppi_paired,
    stratified_mean,
)
from ragstage.stats import holm


@pytest.fixture(scope="module")
def ppi_py():
    return pytest.importorskip("ppi_py")


def reference(ppi_py, y, yhat, u, alpha=0.05, lam=None):
    y, yhat, u = (np.asarray(a, dtype=float) for a in (y, yhat, u))
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, u, lam=lam)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, u, alpha=alpha, lam=lam))
    return point, low, high


def assert_matches(ppi_py, y, yhat, u, alpha=0.05, lam=None):
    ours = ppi_mean(y, yhat, u, alpha=alpha, lam=lam)
    point, low, high = reference(ppi_py, y, yhat, u, alpha, lam)
    assert abs(ours.estimate - point) <= 1e-9
    assert abs(ours.low - low) <= 1e-9
    assert abs(ours.high - high) <= 1e-9
    return ours


values = st.sampled_from([0.0, 1.0])
signed = st.sampled_from([-1.0, 0.0, 1.0])
unit = st.floats(0, 1, allow_nan=False)


@st.composite
def labelled(draw, element):
    n = draw(st.integers(2, 60))
    y = draw(st.lists(element, min_size=n, max_size=n))
    yhat = draw(st.lists(element, min_size=n, max_size=n))
    u = draw(st.lists(element, min_size=1, max_size=200))
    return y, yhat, u


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(labelled(values), labelled(signed), labelled(unit)), alpha=st.sampled_from([0.05, 0.1, 0.01]))
def test_ppi_mean_is_ppi_py_with_tuned_lambda(ppi_py, data, alpha):
    y, yhat, u = data
    if np.var(np.concatenate([yhat, u])) == 0:
        return  # ppi_py gives NaN there: the constant-judge test below covers it
    assert_matches(ppi_py, y, yhat, u, alpha)


@settings(max_examples=100, deadline=None)
@given(data=labelled(values), lam=st.floats(0, 1))
def test_ppi_mean_is_ppi_py_with_a_given_lambda(ppi_py, data, lam):
    assert_matches(ppi_py, *data, lam=lam)


def test_two_gold_labels_are_enough_and_one_is_refused(ppi_py):
    assert_matches(ppi_py, [0, 1], [0, 1], [1, 0, 0, 1, 1])
    assert_matches(ppi_py, [1, 1], [0, 1], [1, 0, 0])
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean([1], [1], [0, 1])
    with pytest.raises(ValueError, match="no request outside"):
        ppi_mean([1, 0], [1, 0], [])
    with pytest.raises(ValueError, match="pair up"):
        ppi_mean([1, 0], [1], [0])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_constant_judge_gives_the_gold_only_interval_where_ppi_py_gives_nan(ppi_py):
    y, yhat, u = [1, 0, 0, 1, 0], [1, 1, 1, 1, 1], [1] * 20
    assert math.isnan(reference(ppi_py, y, yhat, u)[0])
    ours = ppi_mean(y, yhat, u)
    assert ours.lam == 0
    assert (ours.estimate, ours.low, ours.high) == pytest.approx(reference(ppi_py, y, yhat, u, lam=0), abs=1e-12)


def test_constant_gold_with_a_varying_judge_matches(ppi_py):
    ours = assert_matches(ppi_py, [0] * 6, [0, 1, 0, 0, 1, 0], [0, 1] * 10)
    assert ours.lam == 0 and ours.low == ours.high == 0  # zero width: the case the coverage table flags


def test_lambda_is_clipped_at_zero_and_at_one(ppi_py):
    # judge against gold: negative covariance, clipped to 0 (the gold-only interval)
    neg = assert_matches(ppi_py, [1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [0, 1] * 30)
    assert neg.lam == 0
    # a judge that varies on the sample but hardly outside it: the raw weight exceeds 1
    y = yhat = [1, 0, 1, 0, 1, 0, 1, 0]
    m = moments(y, yhat, [0] * 40 + [1])
    raw = m.c_yh / ((1 + m.n / m.N) * np.var(np.concatenate([yhat, [0] * 40 + [1]]), ddof=1))
    assert raw > 1
    high = assert_matches(ppi_py, y, yhat, [0] * 40 + [1])
    assert high.lam == 1


def test_counts_and_arrays_give_the_same_moments():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 40)
    h = np.where(rng.random(40) < 0.8, y, 1 - y)
    u = rng.integers(0, 2, 300)
    by_counts = indicator_moments(int((y & h).sum()), int((y & ~h.astype(bool)).sum()),
                                  int((~y.astype(bool) & h.astype(bool)).sum()), int(((1 - y) & (1 - h)).sum()),
                                  int(u.sum()), len(u))
    a, b = ppi_from_moments(moments(y, h, u)), ppi_from_moments(by_counts)
    for key in a:
        assert float(a[key]) == pytest.approx(float(b[key]), abs=1e-12)


def test_paired_difference_is_ppi_on_after_minus_before(ppi_py):
    rng = np.random.default_rng(5)
    gb, ga = rng.integers(0, 2, 50).astype(bool), rng.integers(0, 2, 50).astype(bool)
    jb, ja = gb ^ (rng.random(50) < 0.1), ga ^ (rng.random(50) < 0.1)
    rb, ra = rng.integers(0, 2, 400).astype(bool), rng.integers(0, 2, 400).astype(bool)
    ours = ppi_paired(gb, ga, jb, ja, rb, ra)
    d = lambda a, b: a.astype(float) - b.astype(float)  # noqa: E731
    point, low, high = reference(ppi_py, d(ga, gb), d(ja, jb), d(ra, rb))
    assert (ours.estimate, ours.low, ours.high) == pytest.approx((point, low, high), abs=1e-9)
    with pytest.raises(ValueError, match="pair up"):
        ppi_paired(gb[:3], ga[:4], jb, ja, rb, ra)


def test_stratified_mean_by_hand():
    strata = [(800, [0, 0, 1, 0]), (150, [1, 1, 0, 1, 1]), (50, [1, 1])]
    est = stratified_mean(strata)
    w = np.array([0.8, 0.15, 0.05])
    means = np.array([0.25, 0.8, 1.0])
    var = 0.8**2 * (1 - 4 / 800) * np.var([0, 0, 1, 0], ddof=1) / 4 + 0.15**2 * (1 - 5 / 150) * 0.2 / 5 \
        + 0.05**2 * (1 - 2 / 50) * 0 / 2
    assert est.estimate == pytest.approx(float(w @ means))
    assert est.se == pytest.approx(math.sqrt(var))
    assert est.high - est.estimate == pytest.approx(1.959963984540054 * math.sqrt(var))
    assert (est.n, est.N) == (11, 989)
    with pytest.raises(ValueError, match="needs 2"):
        stratified_mean([(100, [1]), (10, [0, 1])])
    assert stratified_mean([(1, [1]), (3, [0, 0, 0])]).se == 0  # strata drawn whole have no sampling error


def test_joint_intervals_are_bonferroni_and_bias_tests_use_holm():
    a = ppi_mean([1, 0, 1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 0, 0, 1, 1], [0, 1] * 20)
    b = ppi_mean([0, 0, 0, 1, 0, 0, 1, 0], [0, 0, 1, 1, 0, 0, 1, 0], [0, 0, 1] * 20)
    joint = joint_intervals({"a": a, "b": b}, alpha=0.05)
    single = ppi_mean([1, 0, 1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 0, 0, 1, 1], [0, 1] * 20, alpha=0.025)
    assert (joint["a"].low, joint["a"].high) == pytest.approx((single.low, single.high))
    assert joint["b"].high - joint["b"].low > b.high - b.low
    pairs = {"x": ([1] * 30 + [0] * 10, [0] * 40), "y": ([1, 0] * 20, [1, 0] * 20), "z": ([1, 0] * 20, [0, 0] * 20)}
    result = judge_bias_pvalues(pairs)
    assert result["y"] == (1.0, 1.0)
    assert [a for _, a in result.values()] == pytest.approx(holm([p for p, _ in result.values()]))


def test_ppi_correlation_is_ppi_py_s(ppi_py):
    from ppi_py.ppi_power_analysis import _get_ppi_corr

    rng = np.random.default_rng(9)
    for _ in range(20):
        y = rng.integers(0, 2, 60).astype(float)
        h = np.where(rng.random(60) < 0.8, y, 1 - y)
        ref = _get_ppi_corr(y - y.mean(), h - y.mean(), np.eye(1))
        assert ppi_correlation(y, h) == pytest.approx(ref, abs=1e-12)
    assert ppi_correlation([1, 1, 0, 0], [1, 1, 0, 0]) == pytest.approx(0.75)  # capped at 1 - 1/n


def test_indicator_correlation_is_the_correlation_of_the_joint_law():
    p, sens, fpr = 0.1, 0.8, 0.05
    joint = np.array([[(1 - p) * (1 - fpr), (1 - p) * fpr], [p * (1 - sens), p * sens]])  # [y][h]
    ey, eh, eyh = joint[1].sum(), joint[:, 1].sum(), joint[1, 1]
    expected = (eyh - ey * eh) / math.sqrt(ey * (1 - ey) * eh * (1 - eh))
    assert indicator_correlation(p, sens, fpr) == pytest.approx(expected)


@pytest.mark.parametrize("rate,half,population,rho", [(0.2, 0.05, 5000, 0.7), (0.1, 0.03, 2000, 0.5),
                                                      (0.5, 0.04, 10000, 0.9), (0.3, 0.06, 1000, 0.0)])
def test_gold_needed_is_ppi_py_power_with_free_predictions(ppi_py, rate, half, population, rho):
    from ppi_py import ppi_power

    n0 = 1.959963984540054**2 * rate * (1 - rate) / half**2
    ref = ppi_power(rho, cost_X=0, cost_Y=1, cost_Yhat=1e-12, effective_n=n0, n_max=population)
    ours = gold_needed(rate, half, population, rho)
    assert abs(ours - ref["n"]) <= 1


def test_gold_needed_gives_the_half_width_in_a_simulation():
    rate, half, population = 0.2, 0.04, 4000
    sens, fpr = 0.85, 0.05
    n = gold_needed(rate, half, population, indicator_correlation(rate, sens, fpr))
    assert n < gold_needed(rate, half, population, 0.0)  # the judge buys labels
    rng = np.random.default_rng(11)
    y = rng.random((2000, population)) < rate
    h = np.where(y, rng.random(y.shape) < sens, rng.random(y.shape) < fpr)
    ys, hs = y[:, :n], h[:, :n]
    both = (ys & hs).sum(1)
    m = indicator_moments(both, ys.sum(1) - both, hs.sum(1) - both, n - ys.sum(1) - hs.sum(1) + both,
                          h[:, n:].sum(1), population - n)
    widths = ppi_from_moments(m)["se"] * 1.959963984540054
    assert abs(widths.mean() - half) < 0.05 * half
    assert gold_needed(0.5, 0.01, 100, 0.9) is None  # not even gold for all would do


@pytest.mark.parametrize("rate,sens,fpr,rho,with_judge,gold_only", [
    (0.05, 0.9, 0.02, 0.78, 81, 203), (0.10, 0.8, 0.05, 0.68, 214, 385), (0.20, 0.8, 0.05, 0.75, 324, 683),
    (0.50, 0.6, 0.10, 0.52, 823, 1068)])
def test_the_docs_planning_table(rate, sens, fpr, rho, with_judge, gold_only):
    """The rows of the planning table in docs/gold-for-a-few.md (±0.03 on 5,000 requests)."""

    r = indicator_correlation(rate, sens, fpr)
    assert round(r, 2) == rho
    assert (gold_needed(rate, 0.03, 5000, r), gold_needed(rate, 0.03, 5000, 0.0)) == (with_judge, gold_only)
    docs = (REPO / "docs" / "gold-for-a-few.md").read_text(encoding="utf-8")
    assert f"| {rate:.0%} | {sens}, {fpr:.2f} | {rho:.2f} | {with_judge} | {gold_only:,} |" in docs
