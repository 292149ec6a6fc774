"""How many paired questions a comparison needs: the power of the exact McNemar test.

Before running two pipelines on the same questions, guess two shares: ``p_fixed``, the
questions the change will fix (wrong before, right after), and ``p_broken``, the questions it
will break. Only those discordant questions inform the exact McNemar test
(:func:`ragstage.stats.mcnemar`), so its power depends on nothing else.

The exact power is an exact sum, not a simulation. Out of ``n`` questions, the number that
flip, D, is Binomial(n, p_fixed + p_broken). Given D = d, the number fixed is
Binomial(d, p_fixed / (p_fixed + p_broken)), and the test rejects when the smaller of fixed and
broken falls in the two-sided rejection region of the Binomial(d, 1/2) test. The power is
the rejection probability given d, averaged over D.

Because the counts are whole numbers, the exact power is not monotone in ``n``: one more
question can lower it a little (mostly when nearly every question flips, p_fixed + p_broken
close to 1). :func:`mcnemar_sample_size` therefore says which n it returns: by default the
smallest n whose power stays at or above the target for every size from n to 2n, so that a
few more questions never undo the plan; ``rule="first"`` gives the smallest n that reaches it.

The normal approximation (Connor 1987) is here as a cross-check and as the formula most
planning texts give; it asks for a few percent fewer questions than the exact test needs.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pandas as pd
from scipy.special import bdtr, bdtrc
from scipy.stats import binom, norm

__all__ = [
    "critical_count",
    "mcnemar_power",
    "mcnemar_power_normal",
    "mcnemar_sample_size",
    "mcnemar_sample_size_normal",
    "power_curve",
]

#: Probability left out in each tail of D when summing the exact power: the result is exact
#: to within 2e-12, and the sum runs over a few standard deviations of D instead of 0..n.
_TAIL = 1e-12
#: Sample sizes evaluated at once when searching (one matrix of Binomial probabilities).
_BLOCK = 256
#: Largest matrix built at once; a wider spread of sizes is split in two.
_CELLS = 2_000_000


def _check_shares(p_fixed: float, p_broken: float) -> None:
    for name, value in (("p_fixed", p_fixed), ("p_broken", p_broken)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    if p_fixed + p_broken > 1 + 1e-12:
        raise ValueError(f"p_fixed + p_broken is a share of questions and cannot exceed 1, "
                         f"got {p_fixed} + {p_broken}")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")


def _check_n(n: int) -> int:
    if isinstance(n, bool) or n != int(n) or n < 1:
        raise ValueError(f"n must be a positive whole number, got {n!r}")
    return int(n)


def critical_count(d: np.ndarray | int, alpha: float = 0.05) -> np.ndarray:
    """Largest k with 2·P(Binomial(d, 1/2) ≤ k) ≤ alpha, or -1 when no k qualifies.

    The exact two-sided test on d flipped questions rejects exactly when the smaller of fixed
    and broken is at most this k: the same decision as ``mcnemar(b, c) <= alpha``.
    """
    _check_alpha(alpha)
    d = np.asarray(d, dtype=np.int64)
    # ppf is the smallest k whose lower tail reaches alpha/2, so the answer is it or one less.
    k = binom.ppf(alpha / 2, d, 0.5).astype(np.int64)
    inside = (k >= 0) & (2 * bdtr(np.maximum(k, 0), d, 0.5) <= alpha)
    return np.where(inside, k, k - 1)


def _exact_power(ns: np.ndarray, p_fixed: float, p_broken: float, alpha: float) -> np.ndarray:
    """Exact power at every sample size in ``ns`` (one matrix: sizes × numbers of flips)."""
    flip = min(p_fixed + p_broken, 1.0)
    if ns.max() * flip < 1e-9:
        # Nothing flips, or so rarely that scipy's quantiles overflow: the exact test needs at
        # least two discordant pairs to reject (alpha < 1/2), so the power is at most
        # P(D >= 2) <= (n * flip)**2 / 2 < 1e-18, zero to the precision promised above.
        return np.zeros(len(ns))
    share_fixed = p_fixed / flip
    lo = int(binom.ppf(_TAIL, ns.min(), flip))
    hi = int(binom.isf(_TAIL, ns.max(), flip))
    if len(ns) > 1 and len(ns) * (hi - lo + 1) > _CELLS:  # sizes far apart: split the matrix
        half = len(ns) // 2
        return np.concatenate([_exact_power(ns[:half], p_fixed, p_broken, alpha),
                               _exact_power(ns[half:], p_fixed, p_broken, alpha)])
    d = np.arange(lo, hi + 1)
    k = critical_count(d, alpha)
    reject = np.where(k >= 0, bdtr(np.maximum(k, 0), d, share_fixed)
                      + bdtrc(d - k - 1, d, share_fixed), 0.0)
    weights = binom.pmf(d[None, :], ns[:, None], flip)
    return weights @ reject


def mcnemar_power(n: int, p_fixed: float, p_broken: float, alpha: float = 0.05) -> float:
    """Exact power of the exact two-sided McNemar test on ``n`` paired questions.

    ``p_fixed`` and ``p_broken`` are the expected shares of questions the change fixes and
    breaks. With p_fixed = p_broken it is the test's real type I error, at most ``alpha``.
    """
    n = _check_n(n)
    _check_shares(p_fixed, p_broken)
    _check_alpha(alpha)
    return float(_exact_power(np.array([n]), p_fixed, p_broken, alpha)[0])


def _normal_parts(p_fixed: float, p_broken: float, alpha: float) -> tuple[float, float, float, float]:
    _check_shares(p_fixed, p_broken)
    _check_alpha(alpha)
    flip = p_fixed + p_broken
    diff = abs(p_fixed - p_broken)
    return flip, diff, math.sqrt(max(flip - diff * diff, 0.0)), norm.isf(alpha / 2)


def mcnemar_power_normal(n: int, p_fixed: float, p_broken: float, alpha: float = 0.05) -> float:
    """Power by the normal approximation (Connor 1987), both tails counted.

    The difference in shares, p_fixed - p_broken, is estimated with standard deviation
    sqrt(p_fixed + p_broken) under "no difference" and sqrt(p_fixed + p_broken - diff²)
    under the alternative, each divided by sqrt(n).
    """
    n = _check_n(n)
    flip, diff, sd_alt, z = _normal_parts(p_fixed, p_broken, alpha)
    if flip == 0:
        return 0.0
    shift, bar = diff * math.sqrt(n), z * math.sqrt(flip)
    if sd_alt == 0:  # every question flips the same way: the estimate has no spread
        return 1.0 if shift > bar else 0.0
    return float(norm.cdf((shift - bar) / sd_alt) + norm.cdf((-shift - bar) / sd_alt))


def _check_target(p_fixed: float, p_broken: float, power: float) -> None:
    if not 0 < power < 1:
        raise ValueError(f"power must lie in (0, 1), got {power}")
    if p_fixed == p_broken:
        raise ValueError(f"p_fixed equals p_broken ({p_fixed}): there is no difference to detect")


def mcnemar_sample_size_normal(p_fixed: float, p_broken: float, power: float = 0.8,
                               alpha: float = 0.05) -> int:
    """Connor's (1987) closed form: n = (z_{α/2}·√ψ + z_β·√(ψ - δ²))² / δ², rounded up.

    ψ = p_fixed + p_broken, δ = p_fixed - p_broken. It ignores the far tail and treats the
    counts as continuous, so the exact test usually needs a few more questions.
    """
    _check_target(p_fixed, p_broken, power)
    flip, diff, sd_alt, z = _normal_parts(p_fixed, p_broken, alpha)
    n = (z * math.sqrt(flip) + norm.isf(1 - power) * sd_alt) ** 2 / diff ** 2
    return max(1, math.ceil(n - 1e-9))  # 1e-9: a whole-number n must not round up by an ulp


def mcnemar_sample_size(p_fixed: float, p_broken: float, power: float = 0.8, alpha: float = 0.05,
                        *, rule: str = "stays", n_limit: int = 20_000) -> int:
    """Paired questions needed for the exact McNemar test to reach ``power``.

    ``rule="stays"`` (default): the smallest n such that the exact power is at least
    ``power`` at every size from n to 2n. ``rule="first"``: the smallest n whose exact power
    reaches ``power``, which a slightly larger set may fall short of again. The two agree
    unless nearly every question flips. Raises ValueError when no n up to ``n_limit``
    qualifies (20,000 by default): an improvement that needs more labelled pairs than that is, for
    a RAG evaluation, better planned as a larger effect than as a larger study.
    """
    _check_target(p_fixed, p_broken, power)
    _check_shares(p_fixed, p_broken)
    _check_alpha(alpha)
    if rule not in ("stays", "first"):
        raise ValueError(f"rule must be 'stays' or 'first', got {rule!r}")
    too_small = ValueError(f"the exact power does not reach {power} by n_limit = {n_limit} paired questions "
                           f"(p_fixed = {p_fixed}, p_broken = {p_broken}); raise n_limit or plan a larger effect")
    powers = np.empty(0)

    def reaches(upto: int) -> np.ndarray:
        """Whether the power reaches the target at sizes 1..upto (computed once, in blocks)."""
        nonlocal powers
        while len(powers) < upto:
            start = len(powers) + 1
            block = np.arange(start, start + _BLOCK)
            powers = np.concatenate([powers, _exact_power(block, p_fixed, p_broken, alpha)])
        return powers[:upto] >= power

    if rule == "first":
        upto = _BLOCK
        while True:
            hits = np.flatnonzero(reaches(min(upto, n_limit)))
            if hits.size:
                return int(hits[0]) + 1
            if upto >= n_limit:
                raise too_small
            upto *= 2
    n = 1
    while n <= n_limit:
        misses = np.flatnonzero(~reaches(2 * n)[n - 1:])  # sizes n..2n
        if misses.size == 0:
            return n
        # Every size up to the last miss has that miss inside its own window: skip past it.
        n += int(misses[-1]) + 1
    raise too_small


def power_curve(ns: Iterable[int], p_fixed: float, p_broken: float, alpha: float = 0.05) -> pd.DataFrame:
    """Exact and normal-approximation power at each sample size in ``ns``: columns n, exact, normal."""
    sizes = np.array([_check_n(n) for n in ns], dtype=np.int64)
    if sizes.size == 0:
        raise ValueError("power_curve needs at least one sample size")
    _check_shares(p_fixed, p_broken)
    _check_alpha(alpha)
    exact = np.concatenate([_exact_power(sizes[i:i + _BLOCK], p_fixed, p_broken, alpha)
                            for i in range(0, sizes.size, _BLOCK)])
    normal = [mcnemar_power_normal(int(n), p_fixed, p_broken, alpha) for n in sizes]
    return pd.DataFrame({"n": sizes, "exact": exact, "normal": normal})
