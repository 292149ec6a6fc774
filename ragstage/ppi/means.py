"""Prediction-powered estimates of a mean: a judge on every request, gold on a random few.

A judge (a model, a heuristic, someone else's evaluator) labels every request; people label a
uniform random sample. The judge's rate alone is biased by its errors; the gold rate alone
wastes the judge. PPI++ (Angelopoulos, Duchi and Zrnic, *PPI++: efficient prediction-powered
inference*, 2024) adds the judge's average error, measured on the sample, back to the judge's
mean on the rest, weighted by a tuned ``lam``:

    estimate = lam * mean(judge, outside the sample) + mean(gold - lam * judge, on the sample)

``lam = 0`` is the gold-only mean; ``lam = 1`` plain PPI. The tuned ``lam`` minimises the
estimate's variance (``cov(gold, judge) / ((1 + n/N) var(judge))``, clipped to [0, 1]), so a
useless judge costs nothing and a good one narrows the interval. The interval is the normal
approximation ``estimate ± z·se``: it is what :func:`ppi_py.ppi_mean_ci` computes with
``lam=None``, and the tests hold this module to it within 1e-9. Normal intervals fail for rare
outcomes and small samples; :mod:`ragstage.ppi.coverage` measures where.

Everything is computed from a few moments (:class:`Moments`), so one formula serves a single
estimate and a simulation of many thousands (arrays of moments, one row per draw).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
from scipy.special import ndtr, ndtri  # the normal law's cdf and quantile, without scipy.stats' import

__all__ = [
    "Moments",
    "PPIEstimate",
    "moments",
    "row_moments",
    "indicator_moments",
    "ppi_from_moments",
    "ppi_mean",
    "ppi_paired",
    "stratified_mean",
    "joint_intervals",
    "judge_bias_pvalues",
    "ppi_correlation",
    "indicator_correlation",
    "gold_needed",
]


class Moments(NamedTuple):
    """What PPI++ needs of a gold sample and the judge's labels (floats, or arrays of draws).

    ``n``: gold-labelled requests; ``N``: the requests outside the sample (judge only). Means
    (``m``) and population variances (``v``, divided by the count) of the gold labels ``y`` and
    the judge's labels ``h`` on the sample; ``c_yh`` their population covariance; ``m_u``,
    ``v_u``: the judge's mean and variance outside the sample.
    """

    n: Any
    N: Any
    m_y: Any
    m_h: Any
    v_y: Any
    v_h: Any
    c_yh: Any
    m_u: Any
    v_u: Any


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate with its normal interval, and what it was made of.

    ``lam``: the weight given to the judge (0: gold only). ``low`` and ``high`` are not clipped
    to [0, 1] (ppi_py's interval is not either); a rate's printed interval is clipped.
    """

    estimate: float
    low: float
    high: float
    se: float
    lam: float
    n: int
    N: int
    alpha: float = 0.05

    def half_width(self) -> float:
        return (self.high - self.low) / 2


def _column(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must hold finite numbers")
    return x


def moments(y: Sequence[float], yhat: Sequence[float], yhat_unlabeled: Sequence[float]) -> Moments:
    """The moments of gold labels ``y`` and judge labels ``yhat`` (the same requests, in the same
    order) and of the judge's labels on every other request, computed from centred values."""
    y, h, u = _column(y, "y"), _column(yhat, "yhat"), _column(yhat_unlabeled, "yhat_unlabeled")
    if len(y) != len(h):
        raise ValueError(f"{len(y)} gold labels but {len(h)} judge labels on the sample: they must pair up")
    if len(y) < 2:
        raise ValueError(f"a gold sample needs at least 2 labelled requests, got {len(y)}")
    if len(u) < 1:
        raise ValueError("no request outside the gold sample: with gold for all, use the gold rate itself")
    return row_moments(y, h, u)


def row_moments(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> Moments:
    """:func:`moments` along the last axis, unchecked: one row per simulated draw (or one 1-D sample)."""
    def centred(x: np.ndarray) -> np.ndarray:
        return x - x.mean(axis=-1, keepdims=True)

    dy, dh, du = centred(y), centred(yhat), centred(yhat_unlabeled)
    return Moments(y.shape[-1], yhat_unlabeled.shape[-1], y.mean(axis=-1), yhat.mean(axis=-1),
                   np.mean(dy * dy, axis=-1), np.mean(dh * dh, axis=-1), np.mean(dy * dh, axis=-1),
                   yhat_unlabeled.mean(axis=-1), np.mean(du * du, axis=-1))


def indicator_moments(both: Any, gold_only: Any, judge_only: Any, neither: Any, judge_outside: Any,
                      outside: Any) -> Moments:
    """The moments of a 0/1 label from counts: the sample's 2×2 table (gold says yes and the judge
    too, gold only, judge only, neither) and the judge's yes count among the ``outside`` requests.
    Counts may be arrays (one entry per simulated draw)."""
    n = np.asarray(both) + gold_only + judge_only + neither
    m_y, m_h = (np.asarray(both) + gold_only) / n, (np.asarray(both) + judge_only) / n
    m_u = np.asarray(judge_outside) / outside
    return Moments(n, np.asarray(outside), m_y, m_h, m_y * (1 - m_y), m_h * (1 - m_h),
                   np.asarray(both) / n - m_y * m_h, m_u, m_u * (1 - m_u))


def _tuned_lam(m: Moments) -> Any:
    """PPI++'s variance-minimising weight, clipped to [0, 1]; 0 where the judge never varies
    (there ppi_py divides 0 by 0, but every weight gives the same estimate: the gold mean)."""
    total = m.n + m.N
    pooled_mean = (m.n * m.m_h + m.N * m.m_u) / total
    pooled_var = (m.n * m.v_h + m.N * m.v_u + m.n * (m.m_h - pooled_mean) ** 2
                  + m.N * (m.m_u - pooled_mean) ** 2) / (total - 1)  # ddof=1 over every judge label
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = m.c_yh / ((1 + m.n / m.N) * pooled_var)
    return np.where(pooled_var > 0, np.clip(lam, 0.0, 1.0), 0.0)


def ppi_from_moments(m: Moments, alpha: float = 0.05, lam: Any = None) -> dict[str, Any]:
    """``estimate``, ``se``, ``low``, ``high`` and ``lam`` (arrays when the moments are), with
    ``lam=None`` tuned as PPI++ tunes it."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    lam = _tuned_lam(m) if lam is None else np.asarray(lam, dtype=float)
    estimate = lam * m.m_u + m.m_y - lam * m.m_h
    rectifier_var = np.maximum(m.v_y - 2 * lam * m.c_yh + lam * lam * m.v_h, 0.0) / m.n
    imputed_var = lam * lam * m.v_u / m.N
    se = np.sqrt(rectifier_var + imputed_var)
    z = ndtri(1 - alpha / 2)
    return {"estimate": estimate, "se": se, "low": estimate - z * se, "high": estimate + z * se, "lam": lam}


def _estimate(m: Moments, alpha: float, lam: float | None) -> PPIEstimate:
    r = ppi_from_moments(m, alpha, lam)
    return PPIEstimate(float(r["estimate"]), float(r["low"]), float(r["high"]), float(r["se"]), float(r["lam"]),
                       int(m.n), int(m.N), alpha)


def ppi_mean(y: Sequence[float], yhat: Sequence[float], yhat_unlabeled: Sequence[float], alpha: float = 0.05,
             lam: float | None = None) -> PPIEstimate:
    """PPI++ estimate of the mean of ``y`` over every request, with its ``1 - alpha`` interval.

    ``y``: gold labels of the sampled requests; ``yhat``: the judge's labels of the same
    requests; ``yhat_unlabeled``: the judge's labels of every request outside the sample. The
    same numbers as ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci`` (``lam=None``:
    tuned), except where the judge is constant: ppi_py gives NaN, this the gold-only interval.
    """
    return _estimate(moments(y, yhat, yhat_unlabeled), alpha, lam)


def ppi_paired(gold_before: Sequence[bool], gold_after: Sequence[bool], judge_before: Sequence[bool],
               judge_after: Sequence[bool], judge_before_rest: Sequence[bool], judge_after_rest: Sequence[bool],
               alpha: float = 0.05) -> PPIEstimate:
    """Two runs on the same questions: PPI++ on the per-question difference (right after minus
    right before: +1 fixed, -1 broken, 0 unchanged), so the estimate is (fixed - broken) / questions.

    The gold and judge lists of the sample pair up question by question; ``*_rest`` are the
    judge's verdicts on every question outside the sample. The pairing keeps what McNemar
    keeps: a question's two runs share its difficulty, so the difference varies far less than
    either run.
    """
    def diff(after: Sequence[bool], before: Sequence[bool], name: str) -> np.ndarray:
        a, b = np.asarray(after, dtype=float), np.asarray(before, dtype=float)
        if a.shape != b.shape:
            raise ValueError(f"{name}: {len(b)} verdicts before but {len(a)} after; the runs must pair up")
        return a - b

    return ppi_mean(diff(gold_after, gold_before, "gold"), diff(judge_after, judge_before, "judge"),
                    diff(judge_after_rest, judge_before_rest, "judge outside the sample"), alpha)


def stratified_mean(strata: Sequence[tuple[int, Sequence[float]]], alpha: float = 0.05) -> PPIEstimate:
    """The mean over a population drawn in strata: ``(population size, gold labels drawn)`` per stratum.

    Each stratum's gold mean, weighted by its share of the population, with the classical
    stratified variance (``sum W_h² (1 - n_h/N_h) s_h² / n_h``, ``s_h²`` with ddof=1). This is
    stratified PPI when the strata are the judge's own buckets: inside a stratum the judge's
    label for a bucket is constant, so PPI there reduces to the gold mean. ``lam`` is reported
    as NaN (no single weight applies); ``n`` counts the gold labels, ``N`` the rest.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    population = sum(size for size, _ in strata)
    if population <= 0:
        raise ValueError("the strata hold no request")
    estimate = variance = 0.0
    drawn = 0
    for i, (size, labels) in enumerate(strata):
        y = _column(labels, f"stratum {i}")
        if len(y) > size:
            raise ValueError(f"stratum {i}: {len(y)} drawn from a stratum of {size}")
        if size == 0:
            continue
        if len(y) == 0 or (len(y) == 1 and size > 1):
            raise ValueError(f"stratum {i}: {len(y)} gold label(s) from {size} requests; each stratum needs 2 "
                             "(or all of its requests)")
        weight = size / population
        estimate += weight * float(y.mean())
        if len(y) < size:
            variance += weight * weight * (1 - len(y) / size) * float(y.var(ddof=1)) / len(y)
        drawn += len(y)
    se = math.sqrt(variance)
    z = float(ndtri(1 - alpha / 2))
    return PPIEstimate(estimate, estimate - z * se, estimate + z * se, se, math.nan, drawn, population - drawn, alpha)


def joint_intervals(estimates: dict[str, PPIEstimate], alpha: float = 0.05) -> dict[str, PPIEstimate]:
    """Intervals that hold together, for every key at once, with probability ``1 - alpha``.

    Each interval is rebuilt at level ``1 - alpha/m`` (Bonferroni) from its own standard error
    (the tuned ``lam`` does not depend on the level). These are the intervals that go with Holm's
    procedure: Holm rejects more hypotheses than Bonferroni, but its simultaneous intervals for
    the hypotheses it keeps are Bonferroni's, and for the ones it rejects no wider statement
    follows. Use :func:`judge_bias_pvalues` (Holm-adjusted) for tests across buckets.
    """
    m = len(estimates)
    if m == 0:
        return {}
    z = float(ndtri(1 - alpha / (2 * m)))
    return {key: PPIEstimate(e.estimate, e.estimate - z * e.se, e.estimate + z * e.se, e.se, e.lam, e.n, e.N,
                             alpha / m) for key, e in estimates.items()}


def judge_bias_pvalues(pairs: dict[str, tuple[Sequence[float], Sequence[float]]]) -> dict[str, tuple[float, float]]:
    """Per key, ``(p, Holm-adjusted p)`` of the hypothesis "the judge's rate is unbiased":
    the mean of gold minus judge on the sample is zero (a normal test, as ppi_py's rectifier).

    A small adjusted p says that bucket's judge-only rate is off by more than chance; Holm keeps
    the family-wise error at alpha across buckets (:func:`ragstage.stats.holm`).
    """
    from ..stats import holm

    raw = {}
    for key, (y, yhat) in pairs.items():
        d = _column(y, f"{key}: gold") - _column(yhat, f"{key}: judge")
        sd = d.std() / math.sqrt(len(d))
        raw[key] = 1.0 if sd == 0 and d.mean() == 0 else (0.0 if sd == 0 else float(2 * ndtr(-abs(d.mean()) / sd)))
    adjusted = holm(raw.values())
    return {key: (p, a) for (key, p), a in zip(raw.items(), adjusted)}


def ppi_correlation(y: Sequence[float], yhat: Sequence[float]) -> float:
    """Correlation of gold and judge labels on a pilot sample, capped at ``1 - 1/n`` as ppi_py's
    power analysis caps it (a perfect pilot would otherwise promise that no gold is needed)."""
    y, h = _column(y, "y"), _column(yhat, "yhat")
    if len(y) != len(h) or len(y) < 2:
        raise ValueError(f"need at least 2 paired labels, got {len(y)} gold and {len(h)} judge")
    dy, dh = y - y.mean(), h - h.mean()
    denom = math.sqrt(float(np.mean(dy * dy) * np.mean(dh * dh)))
    if denom == 0:
        return 0.0
    return min(float(np.mean(dy * dh)) / denom, 1 - 1 / len(y))


def indicator_correlation(rate: float, sensitivity: float, false_positive_rate: float) -> float:
    """Correlation of a 0/1 gold label (yes at ``rate``) with a judge that says yes to a true yes
    with probability ``sensitivity`` and to a true no with ``false_positive_rate``."""
    for name, value in (("rate", rate), ("sensitivity", sensitivity), ("false_positive_rate", false_positive_rate)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    judge_yes = rate * sensitivity + (1 - rate) * false_positive_rate
    denom = math.sqrt(rate * (1 - rate) * judge_yes * (1 - judge_yes))
    return 0.0 if denom == 0 else (rate * sensitivity - rate * judge_yes) / denom


def gold_needed(rate: float, half_width: float, population: int, correlation: float,
                alpha: float = 0.05) -> int | None:
    """Gold labels needed for a PPI++ interval of ``half_width`` on a rate near ``rate``, when a
    judge with ``correlation`` to gold labels every one of ``population`` requests.

    With the tuned weight, n gold labels and N = population - n judge-only requests, the variance
    is ``sigma²/n · (1 - rho²·N/(n + N))`` (``sigma² = rate(1 - rate)``), which gives
    ``n = z²sigma²(1 - rho²) / (h² - z²sigma²rho²/population)``: the gold-only size times
    ``1 - rho²``, plus what the finite population adds. None when even gold for every request
    is not enough. This is the n of ``ppi_py.ppi_power`` with free predictions and ``n_max`` the
    population; like every normal-theory plan it is optimistic for rare buckets (see the coverage table).
    """
    if not 0 < rate < 1:
        raise ValueError(f"rate must lie strictly between 0 and 1, got {rate}")
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must lie in (0, 1), got {half_width}")
    if not -1 <= correlation <= 1:
        raise ValueError(f"correlation must lie in [-1, 1], got {correlation}")
    if population < 2:
        raise ValueError(f"population must be at least 2, got {population}")
    z2 = float(ndtri(1 - alpha / 2)) ** 2
    sigma2 = rate * (1 - rate)
    rho2 = correlation * correlation
    room = half_width * half_width - z2 * sigma2 * rho2 / population
    if room <= 0:
        return None
    n = max(2, math.ceil(z2 * sigma2 * (1 - rho2) / room - 1e-9))
    return n if n <= population else None
