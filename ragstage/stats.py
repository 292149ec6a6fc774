"""Intervals, sample-size planning and the paired test, for rates measured on few questions.

Every rate in the workbook is a share of questions, so every rate gets a Wilson interval:
it stays inside [0, 1] and keeps close to its nominal coverage at the small n of a hand
fixture. The normal ("Wald") interval is here only to show why not. Two runs on the
same questions are compared with the exact McNemar test on the questions that flipped,
which is far more sensitive than comparing two separate intervals. Several such tests on the
same questions get Holm's correction, so that "one of them came out significant" keeps its
meaning.

numpy, pandas and scipy are imported inside the functions that need them: the command line
computes Wilson intervals for a million traces' counts and should not wait for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Z95",
    "wilson",
    "cohen_kappa",
    "format_rate",
    "normal_interval",
    "interval_coverage",
    "half_width",
    "sample_size",
    "mcnemar",
    "holm",
    "paired_counts",
    "Agreement",
    "agreement",
    "bootstrap_mean_ci",
]

#: The two-sided 95% normal quantile, to the precision the published figures use.
Z95 = 1.959964


def _check_counts(k: int, n: int) -> None:
    if isinstance(k, bool) or isinstance(n, bool):
        raise ValueError("counts must be integers, not booleans")
    if k != int(k) or n != int(n):
        raise ValueError(f"counts must be whole numbers, got k={k}, n={n}")
    if n <= 0:
        raise ValueError(f"n must be positive, got n={n}")
    if k < 0:
        raise ValueError(f"k must not be negative, got k={k}")
    if k > n:
        raise ValueError(f"k cannot exceed n, got k={k} > n={n}")


def _check_z(z: float) -> None:
    if not z > 0:
        raise ValueError(f"z must be positive, got {z}")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials.

    11 of 15 gives (0.480, 0.891). Unlike the normal interval it never leaves [0, 1] and
    is not degenerate at k = 0 or k = n.
    """
    _check_counts(k, n)
    _check_z(z)
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At k = 0 and k = n the exact bounds are 0 and 1; floating point misses them by an ulp,
    # which would put k/n = 1 outside its own interval.
    low = 0.0 if k == 0 else centre - half
    high = 1.0 if k == n else centre + half
    return low, high


def format_rate(k: int, n: int, digits: int = 3) -> str:
    """``k/n = rate (Wilson low to high)``: the one way the workbook prints a rate.

    ``format_rate(11, 15)`` is ``"11/15 = 0.733 (Wilson 0.480 to 0.891)"``. Printing the
    counts next to the share keeps the denominator in view, and the interval says how much
    that denominator pins down.
    """
    if isinstance(digits, bool) or digits != int(digits) or digits < 0:
        raise ValueError(f"digits must be a whole number >= 0, got {digits!r}")
    low, high = wilson(k, n)
    return f"{k}/{n} = {k / n:.{digits}f} (Wilson {low:.{digits}f} to {high:.{digits}f})"


def normal_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The normal (Wald) interval p ± z·sqrt(p(1-p)/n), deliberately not clipped.

    Shown next to Wilson to make its faults visible: at 11 of 15 it runs to 0.957, and at
    k = 0 it collapses to a zero-width interval.
    """
    _check_counts(k, n)
    _check_z(z)
    p = k / n
    half = z * math.sqrt(p * (1 - p) / n)
    return p - half, p + half


def interval_coverage(ns: Sequence[int], ps: Sequence[float], *, reps: int = 20_000, seed: int = 0,
                      z: float = Z95) -> pd.DataFrame:
    """Simulated coverage of the Wilson and normal 95% intervals.

    For each ``(n, p)``, draw ``reps`` binomial counts, build both intervals for each, and
    report the share that contain ``p``. Nominal coverage is 95%; the normal interval falls
    well short at small n and near 0 or 1 (at k = 0 or k = n it has zero width). Columns:
    ``method, n, p, coverage`` plus ``mc_low, mc_high``, the Wilson interval of the
    simulation itself, so its own noise is visible. Seeded: the same call prints the same
    numbers on every machine.
    """
    import numpy as np
    import pandas as pd

    if reps < 1:
        raise ValueError(f"reps must be positive, got {reps}")
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        if n < 1:
            raise ValueError(f"n must be positive, got {n}")
        bounds = {"wilson": [wilson(k, n, z) for k in range(n + 1)],
                  "normal": [normal_interval(k, n, z) for k in range(n + 1)]}
        for p in ps:
            if not 0 < p < 1:
                raise ValueError(f"p must lie strictly between 0 and 1, got {p}")
            draws = rng.binomial(n, p, size=reps)
            for method, table in bounds.items():
                covers = np.array([lo <= p <= hi for lo, hi in table])
                hit = int(covers[draws].sum())
                lo, hi = wilson(hit, reps)
                rows.append((method, int(n), float(p), hit / reps, lo, hi))
    return pd.DataFrame(rows, columns=["method", "n", "p", "coverage", "mc_low", "mc_high"])


def half_width(p: float, n: int, z: float = Z95) -> float:
    """Half-width of the normal 95% interval for a rate near ``p`` from ``n`` questions.

    The planning formula: at p = 0.7 it is 0.23 for n = 15 and 0.052 for n = 300.
    """
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p}")
    if n <= 0:
        raise ValueError(f"n must be positive, got n={n}")
    _check_z(z)
    return z * math.sqrt(p * (1 - p) / n)


def sample_size(p: float, half_width: float, z: float = Z95) -> int:
    """Smallest n whose 95% half-width at rate ``p`` is at most ``half_width``."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p}")
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must lie in (0, 1), got {half_width}")
    _check_z(z)
    n = math.ceil(z * z * p * (1 - p) / (half_width * half_width))
    return max(n, 1)


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts ``b`` and ``c``.

    Under "no difference" each flipped question is equally likely to flip either way, so
    min(b, c) is Binomial(b + c, 1/2); the two-sided p doubles the smaller tail (at most
    1). 32 fixed against 9 broken gives p = 0.0004; 21 against 13 gives p = 0.23.
    """
    for name, value in (("b", b), ("c", c)):
        if isinstance(value, bool) or value != int(value):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    n = int(b) + int(c)
    if n == 0:
        return 1.0
    from scipy.special import bdtr

    return float(min(1.0, 2.0 * bdtr(min(b, c), n, 0.5)))


def holm(p_values: Iterable[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Running m tests at level alpha each makes "at least one false alarm" far likelier than
    alpha. Holm's method keeps that family-wise error at alpha under any dependence between
    the tests (paired comparisons that share questions and pipelines are dependent): the
    i-th smallest p is multiplied by m - i + 1, capped at 1, and made non-decreasing. A test
    survives the correction when its adjusted p is at most alpha. Never less powerful than
    Bonferroni, which multiplies every p by m.
    """
    ps = [float(p) for p in p_values]
    for i, p in enumerate(ps):
        if not 0 <= p <= 1:  # also catches NaN
            raise ValueError(f"p-value {i} must lie in [0, 1], got {p}")
    m = len(ps)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=ps.__getitem__)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def paired_counts(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> dict[str, int]:
    """The 2×2 table of two runs on the same questions, in the same order.

    ``fixed`` is wrong in ``a`` and right in ``b``; ``broken`` the reverse. Only those two
    cells carry information about the difference; McNemar uses nothing else.
    """
    a, b = list(a_correct), list(b_correct)
    if len(a) != len(b):
        raise ValueError(f"paired runs need the same questions: {len(a)} against {len(b)} results")
    if not a:
        raise ValueError("no paired questions")
    table = {"both_right": 0, "fixed": 0, "broken": 0, "both_wrong": 0}
    for x, y in zip(a, b):
        if x and y:
            table["both_right"] += 1
        elif y:
            table["fixed"] += 1
        elif x:
            table["broken"] += 1
        else:
            table["both_wrong"] += 1
    return table


def bootstrap_mean_ci(values: Iterable[float], *, n_boot: int = 10_000, level: float = 0.95,
                      seed: int = 0) -> tuple[float, float, float]:
    """Mean with a percentile bootstrap interval, resampling questions with replacement.

    For per-question values that are fractions (recall@k of a question with several
    relevant documents) a binomial interval does not apply; resampling the questions does.
    Seeded, so a notebook prints the same interval every run. Returns (mean, low, high).
    """
    import numpy as np

    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap needs at least one value")
    if not np.all(np.isfinite(x)):
        raise ValueError("bootstrap values must be finite numbers")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(x.mean()), float(low), float(high)


@dataclass(frozen=True)
class Agreement:
    """A judge's verdicts against an exact rule's, on the questions the judge answered readably.

    ``both_yes`` … ``judge_only``: the 2×2 table (``exact_only``: the exact rule says yes, the
    judge says no). ``unreadable``: replies with no verdict, left out of everything else.
    ``kappa`` is NaN when chance agreement is already perfect (both raters gave one answer only).
    """

    both_yes: int
    both_no: int
    exact_only: int
    judge_only: int
    unreadable: int

    @property
    def n(self) -> int:
        return self.both_yes + self.both_no + self.exact_only + self.judge_only

    @property
    def agree(self) -> int:
        return self.both_yes + self.both_no

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the simple agreement ``agree / n``."""
        return wilson(self.agree, self.n)

    @property
    def kappa(self) -> float:
        return cohen_kappa(((self.both_yes, self.exact_only), (self.judge_only, self.both_no)))


def cohen_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Cohen's kappa of a square table (``counts[i][j]``: the first rater said ``i``, the second
    ``j``): (observed agreement - chance agreement) / (1 - chance). NaN for an empty table, or
    when chance agreement is already perfect (both raters gave one and the same answer throughout).
    """
    n = sum(map(sum, counts))
    if n == 0:
        return math.nan
    first = [sum(row) / n for row in counts]
    second = [sum(row[j] for row in counts) / n for j in range(len(counts))]
    chance = sum(a * b for a, b in zip(first, second))
    observed = sum(counts[i][i] for i in range(len(counts))) / n
    return math.nan if chance >= 1 else (observed - chance) / (1 - chance)


def agreement(exact: Sequence[bool], judge: Sequence[bool | None]) -> Agreement:
    """Pair an exact rule's verdicts with a judge's, question by question (same order).

    The same 2×2 table as :func:`paired_counts`, read as agreement instead of change.
    """
    if len(exact) != len(judge):
        raise ValueError(f"{len(exact)} exact verdicts but {len(judge)} judge verdicts: they must pair up")
    pairs = [(bool(e), bool(j)) for e, j in zip(exact, judge) if j is not None]
    unreadable = len(exact) - len(pairs)
    if not pairs:
        return Agreement(0, 0, 0, 0, unreadable)
    table = paired_counts([e for e, _ in pairs], [j for _, j in pairs])
    return Agreement(both_yes=table["both_right"], both_no=table["both_wrong"], exact_only=table["broken"],
                     judge_only=table["fixed"], unreadable=unreadable)
